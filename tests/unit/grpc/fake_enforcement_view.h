// A fixed EnforcementReport behind the service::EnforcementView interface: what the admin RPCs
// and netqosctl render when the daemon enforces, without BPF.
#pragma once

#include <atomic>

#include "service/enforcement_view.h"

namespace netqos::testing {

class FakeEnforcementView final : public service::EnforcementView {
 public:
  explicit FakeEnforcementView(service::EnforcementReport report) : report_(std::move(report)) {}

  service::EnforcementReport Report(bool with_counters) const override {
    ++calls_;
    if (with_counters) ++counter_reads_;
    service::EnforcementReport r = report_;
    if (!with_counters) {
      for (auto& c : r.containers) {
        c.counters = {};
        c.egress_queue.reset();
        c.ingress_queue.reset();
      }
      for (auto& c : r.classes) c = {c.net_class_id, {}, {}, {}};
      r.queue_counters = false;
    }
    return r;
  }
  int calls() const { return calls_; }
  int counter_reads() const { return counter_reads_; }

 private:
  service::EnforcementReport report_;
  mutable std::atomic<int> calls_{0};
  mutable std::atomic<int> counter_reads_{0};
};

// Two containers of a pod on eth0 (one capped at 100 Mbit/s, one in its level's default class),
// one active problem, NIC eth0 shaped.
inline service::EnforcementReport SampleEnforcementReport() {
  service::EnforcementReport r;
  r.mode = "bpf";
  r.pin_dir = "/sys/fs/bpf/netqos-test";
  r.cgroup_root = "/sys/fs/cgroup";
  r.pods_known = true;
  r.passes = 42;
  r.pod_list_failures = 1;
  r.problem_reports_total = 3;
  r.shaped_nics = {"eth0"};
  r.problems = {{ProblemKind::kNic, "nic:ns2-eth2", "no known speed", 2}};
  service::ContainerEnforcement web;
  web.cgroup_id = 4242;
  web.pod_uid = "u-web";
  web.pod_namespace = "shop";
  web.pod_name = "web";
  web.container = "app";
  web.qos_level = "shared_cores";
  web.net_class_id = 7;
  web.priority = 0x100100;
  web.htb_class = "10:100";
  web.capped = true;
  web.nic = "eth0";
  web.allocated_mbps = 100;
  web.counters = {1000000, 700, 2000, 30, 1};
  web.egress_queue = {"eth0", "10:100", {990000, 690, 1, 55, 1514, 1}, ""};
  service::ContainerEnforcement side = web;
  side.cgroup_id = 4343;
  side.container = "sidecar";
  side.priority = 0x100031;
  side.htb_class = "10:31";
  side.capped = false;
  side.nic = "";
  side.allocated_mbps = 0;
  side.counters = {500, 5, 0, 0, 0};
  side.egress_queue.reset();
  r.containers = {web, side};
  r.classes = {{7, {1000500, 705, 2000, 30, 1}, {990000, 690, 1, 55, 1514, 1}, {}}};
  r.queue_counters = true;
  return r;
}

}  // namespace netqos::testing
