// netqosd's metric families from hand-built allocation and enforcement snapshots, and the RPC
// observer: names, labels, base units, and a document the strict parser accepts.
#include "metrics/daemon_metrics.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "metrics/health_families.h"
#include "support/prom_parser.h"
#include "support/promtool_lint.h"

using netqos::ProblemKind;
using netqos::metrics::CollectAllocations;
using netqos::metrics::CollectEnforcement;
using netqos::metrics::DaemonMetrics;
using netqos::metrics::Family;
using netqos::metrics::RenderText;
using netqos::testing::ParsePrometheusText;
using netqos::testing::PromDocument;

namespace {

netqos::service::AllocationService::View TwoNics() {
  netqos::service::AllocationService::View v;
  netqos::core::Nic eth0;
  eth0.id = {"", "eth0"};
  eth0.speed_mbps = 25000;
  netqos::core::Nic eth2;
  eth2.id = {"ns2", "eth2"};
  eth2.healthy = false;
  v.nics = {eth0, eth2};
  netqos::core::NicState s0;
  s0.egress = {22500, 0, 4000, 18500, 300, 18200};
  s0.ingress = {21250, 0, 4000, 17250, 200, 17050};
  v.machine_state[eth0.id] = s0;
  netqos::core::NicState s2;
  s2.egress = {22500, 0, 0, 0, 0, 0};
  v.machine_state[eth2.id] = s2;
  netqos::core::AllocationInfo a;
  a.pod_uid = "uid-a";
  a.container_name = "app";
  a.if_name = "eth0";
  a.egress = 100;
  a.ingress = 50;
  netqos::core::AllocationInfo b = a;
  b.pod_uid = "uid-b";
  b.container_name = "";  // pod level (AllocateForPod)
  b.egress = 200;
  b.ingress = 150;
  v.pod_entries["uid-a"]["app"] = a;
  v.pod_entries["uid-b"][""] = b;
  return v;
}

netqos::service::EnforcementReport SomeEnforcement() {
  netqos::service::EnforcementReport r;
  r.mode = "bpf";
  r.passes = 12;
  r.pod_list_failures = 2;
  r.problem_reports_total = 5;
  r.pods_known = true;
  r.shaped_nics = {"eth0"};
  r.problems = {{ProblemKind::kNic, "nic:eth9", "NIC missing", 3},
                {ProblemKind::kNic, "nic:eth0:overcommit", "allocations above the link rate", 1},
                {ProblemKind::kPod, "pod:default/web", "podIPs entry", 1},
                {ProblemKind::kPodRoots, "pod-roots", "not guarded", 1}};
  r.shaping_modes["eth0"] = {
      "htb", "auto: 4 TX queues but no fq: sch_fq: Unknown qdisc", "no_fq", {}};
  netqos::service::ContainerEnforcement c;
  c.cgroup_id = 4242;
  c.pod_uid = "uid-a";
  c.pod_namespace = "default";
  c.pod_name = "web \"1\"";
  c.container = "app";
  c.net_class_id = 22345;
  c.qos_level = "shared_cores";
  c.htb_class = "10:100";
  c.nic = "eth0";
  c.allocated_mbps = 100;
  c.counters = {1000, 10, 2000, 20, 9};
  c.egress_queue = {"eth0", "10:100", {9000, 6, 7, 30, 3000, 2}, ""};
  c.ingress_queue = {"nqifb2", "10:100", {500, 5, 2, 4, 0, 0}, ""};
  netqos::service::ContainerEnforcement d = c;
  d.cgroup_id = 4343;
  d.pod_uid = "uid-b";
  d.pod_name = "batch";
  d.container = "worker";
  d.allocated_mbps = 200;
  d.counters = {5, 1, 0, 0, 0};
  // Its egress leaf could not be read; it has no ingress leaf (no ingress allocation).
  d.egress_queue = {"eth0", "10:101", {}, "rtnl_class_alloc_cache: boom"};
  d.ingress_queue.reset();
  netqos::service::ContainerEnforcement e = c;  // a container without an allocation
  e.cgroup_id = 4444;
  e.pod_uid = "uid-c";
  e.pod_name = "idle";
  e.nic = "";
  e.allocated_mbps = 0;
  e.counters.drops = 0;
  e.egress_queue.reset();
  e.ingress_queue.reset();
  r.containers = {c, d, e};
  netqos::service::ClassEnforcement k;
  k.net_class_id = 22345;
  k.counters = {1005, 11, 2000, 20, 9};
  k.egress_queue = {9000, 6, 7, 30, 3000, 2};
  k.ingress_queue = {500, 5, 2, 4, 0, 0};
  r.classes = {k};
  r.queue_counters = true;
  return r;
}

PromDocument Render(const std::vector<Family>& families) {
  const std::string text = RenderText(families);
  INFO(text);
  return ParsePrometheusText(text);
}

}  // namespace

TEST_CASE("NIC families in bytes per second with the direction a label") {
  std::vector<Family> fams;
  CollectAllocations(TwoNics(), &fams);
  auto doc = Render(fams);
  auto at = [](const char* direction) {
    return netqos::testing::PromLabels{{"nic", "eth0"}, {"direction", direction}};
  };
  // The plugin's Mbps x 10^6 / 8.
  CHECK(doc.Value("netqos_nic_capacity_bytes_per_second", at("egress")) == 22500e6 / 8);
  CHECK(doc.Value("netqos_nic_reserved_bytes_per_second", at("egress")) == 4000e6 / 8);
  CHECK(doc.Value("netqos_nic_allocatable_bytes_per_second", at("egress")) == 18500e6 / 8);
  CHECK(doc.Value("netqos_nic_allocated_bytes_per_second", at("egress")) == 300e6 / 8);
  CHECK(doc.Value("netqos_nic_capacity_bytes_per_second", at("ingress")) == 21250e6 / 8);
  CHECK(doc.Value("netqos_nic_allocated_bytes_per_second", at("ingress")) == 200e6 / 8);
  CHECK(doc.Value("netqos_nic_healthy", {{"nic", "eth0"}}) == 1);
  CHECK(doc.Value("netqos_nic_healthy", {{"nic", "ns2-eth2"}}) == 0);
  CHECK(doc.Value("netqos_nic_allocations", {{"nic", "eth0"}}) == 2);
  CHECK(doc.Value("netqos_nic_allocations", {{"nic", "ns2-eth2"}}) == 0);
  CHECK(doc.Family("netqos_nic_healthy").type == "gauge");
  // Two NICs with machine state, two directions: 4 series per quantity.
  CHECK(doc.Family("netqos_nic_capacity_bytes_per_second").samples.size() == 4);
}

TEST_CASE("no family names a direction or a unit in bits") {
  const auto view = TwoNics();
  netqos::service::EnforcementReport r = SomeEnforcement();
  r.levels = {{"eth0", "shared_cores", "egress", 400000000, 1000000000, std::nullopt}};
  std::vector<Family> fams;
  CollectAllocations(view, &fams);
  CollectEnforcement(r, &view, &fams);
  DaemonMetrics m({"1.2.3", "abc", "2026-01-02T03:04:05Z"}, nullptr, nullptr);
  for (auto& f : m.registry().Collect()) fams.push_back(std::move(f));
  REQUIRE(fams.size() > 40);
  for (const auto& f : fams) {
    INFO(f.name);
    for (const char* word : {"egress", "ingress", "bits", "mbps"}) {
      CHECK(f.name.find(word) == std::string::npos);
    }
  }
}

// The e2e test lints a real scrape, where enforcement is off; this one lints every family with
// samples: the containers', classes' and QoS levels' too.
TEST_CASE("every family, with samples, passes promtool check metrics") {
  const auto view = TwoNics();
  netqos::service::EnforcementReport r = SomeEnforcement();
  r.levels = {{"eth0", "shared_cores", "egress", 400000000, 1000000000,
               netqos::QueueCounters{125000, 100, 0, 9, 0, 0}}};
  r.pass_seconds = {{"full", netqos::HistogramCounts({0.01, 1})}};
  r.kernel_failures = {{"shaping", 1}};
  r.refused_annotations[{"default", "netqos.io/dscp"}] = 1;
  r.shaping_modes["eth1"] = {
      "edt", "--shaping-mode=edt (4 TX queues)", "flag", {"--container-ceil=level"}};
  r.containers[0].egress_cap =
      netqos::service::LeafCap{100000000, 200000000, false, "allocation", 14100};
  std::vector<Family> fams;
  CollectAllocations(view, &fams);
  CollectEnforcement(r, &view, &fams);
  netqos::core::FlushStats flushes{netqos::HistogramCounts({1, 2}),
                                   netqos::HistogramCounts({0.001})};
  netqos::metrics::CollectCheckpoint(flushes, false, &fams);
  DaemonMetrics m({"1.2.3", "abc", "2026-01-02T03:04:05Z"}, nullptr, nullptr);
  m.ObserveFailure("Allocate", "x", "");
  m.Observe("Allocate", "INVALID_ARGUMENT", 0.001);
  m.SetHeartbeat(1700000000);
  for (auto& f : m.registry().Collect()) fams.push_back(std::move(f));
  for (const auto& f : fams) {
    INFO(f.name);
    CHECK((!f.samples.empty() || !f.histograms.empty()));
  }
  const auto lint = netqos::testing::PromtoolCheckMetrics(RenderText(fams));
  INFO("promtool check metrics: " << lint.output);
  if (netqos::testing::PromtoolRan(lint)) {
    CHECK(lint.exit_code == 0);
    CHECK(lint.output.empty());
  }
}

TEST_CASE("per-container and per-class counters by direction, enforcement status") {
  const auto view = TwoNics();
  std::vector<Family> fams;
  CollectEnforcement(SomeEnforcement(), &view, &fams);
  auto doc = Render(fams);
  const netqos::testing::PromLabels web = {{"namespace", "default"},
                                           {"pod", "web \"1\""},
                                           {"container", "app"},
                                           {"cgroup_id", "4242"},
                                           {"class_id", "22345"}};
  auto with = [](netqos::testing::PromLabels l, const char* direction) {
    l["direction"] = direction;
    return l;
  };
  CHECK(doc.Value("netqos_container_bytes_total", with(web, "egress")) == 1000);
  CHECK(doc.Value("netqos_container_bytes_total", with(web, "ingress")) == 2000);
  CHECK(doc.Value("netqos_container_packets_total", with(web, "egress")) == 10);
  CHECK(doc.Value("netqos_container_packets_total", with(web, "ingress")) == 20);
  // Drops, overlimits and backlog are the container's own HTB leaf's, by direction.
  CHECK(doc.Value("netqos_container_drops_total", with(web, "egress")) == 7);
  CHECK(doc.Value("netqos_container_drops_total", with(web, "ingress")) == 2);
  CHECK(doc.Value("netqos_container_overlimits_total", with(web, "egress")) == 30);
  CHECK(doc.Value("netqos_container_overlimits_total", with(web, "ingress")) == 4);
  CHECK(doc.Value("netqos_container_backlog_bytes", with(web, "egress")) == 3000);
  CHECK(doc.Family("netqos_container_drops_total").type == "counter");
  CHECK(doc.Family("netqos_container_backlog_bytes").type == "gauge");
  // An unreadable leaf has no sample rather than a false 0; no leaf of its own: 0.
  CHECK_FALSE(
      doc.Find("netqos_container_drops_total", {{"pod", "batch"}, {"direction", "egress"}}));
  CHECK(doc.Value("netqos_container_drops_total", {{"pod", "batch"}, {"direction", "ingress"}}) ==
        0);
  CHECK(doc.Value("netqos_container_drops_total", {{"pod", "idle"}, {"direction", "egress"}}) == 0);
  CHECK(doc.Value("netqos_container_drops_total", {{"pod", "idle"}, {"direction", "ingress"}}) ==
        0);
  CHECK(doc.Value("netqos_container_allocated_bytes_per_second", with(web, "egress")) == 100e6 / 8);
  CHECK(doc.Value("netqos_container_allocated_bytes_per_second", with(web, "ingress")) == 50e6 / 8);
  // A pod-level allocation gives its containers the pod's ingress.
  CHECK(doc.Value("netqos_container_allocated_bytes_per_second",
                  {{"pod", "batch"}, {"direction", "ingress"}}) == 150e6 / 8);
  // No allocation, no allocated series; its counters are still there.
  CHECK_FALSE(doc.Find("netqos_container_allocated_bytes_per_second",
                       {{"pod", "idle"}, {"direction", "egress"}}));
  CHECK(doc.Value("netqos_container_bytes_total", {{"pod", "idle"}, {"direction", "egress"}}) ==
        1000);
  CHECK(doc.Value("netqos_class_bytes_total", {{"class_id", "22345"}, {"direction", "egress"}}) ==
        1005);
  CHECK(doc.Value("netqos_class_packets_total",
                  {{"class_id", "22345"}, {"direction", "ingress"}}) == 20);
  CHECK(doc.Value("netqos_class_drops_total", {{"class_id", "22345"}, {"direction", "egress"}}) ==
        7);
  CHECK(doc.Value("netqos_class_drops_total", {{"class_id", "22345"}, {"direction", "ingress"}}) ==
        2);
  CHECK(doc.Value("netqos_class_overlimits_total",
                  {{"class_id", "22345"}, {"direction", "egress"}}) == 30);
  CHECK(doc.Value("netqos_enforcement_mode", {{"mode", "bpf"}}) == 1);
  CHECK(doc.Value("netqos_enforcement_passes_total") == 12);
  CHECK(doc.Value("netqos_enforcement_pod_list_failures_total") == 2);
  CHECK(doc.Value("netqos_enforcement_problem_reports_total") == 5);
  // Problems are counted by kind, a closed set: the object is in the log and netqosctl status.
  CHECK(doc.Value("netqos_enforcement_problems", {{"kind", "nic"}}) == 2);
  CHECK(doc.Value("netqos_enforcement_problems", {{"kind", "pod"}}) == 1);
  CHECK(doc.Value("netqos_enforcement_problems", {{"kind", "pod-roots"}}) == 1);
  CHECK(doc.Value("netqos_enforcement_problems", {{"kind", "kubelet"}}) == 0);
  CHECK(doc.Family("netqos_enforcement_problems").samples.size() == netqos::kProblemKinds.size());
  // The shaping mode's reason is the closed one, not the words (which quote a probe's error).
  CHECK(doc.Value("netqos_enforcement_shaping_mode",
                  {{"nic", "eth0"}, {"mode", "htb"}, {"reason", "no_fq"}}) == 1);
  CHECK(doc.Value("netqos_enforcement_pods_known") == 1);
  CHECK(doc.Value("netqos_enforcement_shaped_nic", {{"nic", "eth0"}}) == 1);
  // One info series per container: what a rate is joined with to sum it by QoS level or NIC.
  CHECK(doc.Value("netqos_container_info", {{"cgroup_id", "4242"},
                                            {"namespace", "default"},
                                            {"pod", "web \"1\""},
                                            {"container", "app"},
                                            {"class_id", "22345"},
                                            {"qos_level", "shared_cores"},
                                            {"nic", "eth0"},
                                            {"htb_class", "10:100"}}) == 1);
  CHECK(doc.Value("netqos_container_info", {{"pod", "idle"}, {"nic", ""}}) == 1);
  CHECK(doc.Family("netqos_container_info").samples.size() == 3);
}

TEST_CASE("QoS level classes: rate and ceiling, and what passed through them when read") {
  netqos::service::EnforcementReport r = SomeEnforcement();
  netqos::QueueCounters shared{125000, 100, 0, 9, 0, 0};
  r.levels = {{"eth0", "shared_cores", "egress", 400000000, 1000000000, shared},
              {"ns1-eth1", "reclaimed_cores", "ingress", 150000000, 1000000000, std::nullopt}};
  std::vector<Family> fams;
  CollectEnforcement(r, nullptr, &fams);
  auto doc = Render(fams);
  const netqos::testing::PromLabels eth0 = {
      {"nic", "eth0"}, {"qos_level", "shared_cores"}, {"direction", "egress"}};
  auto with_bound = [](netqos::testing::PromLabels l, const char* bound) {
    l["bound"] = bound;
    return l;
  };
  CHECK(doc.Value("netqos_qos_level_class_bytes_per_second", with_bound(eth0, "rate")) == 50e6);
  CHECK(doc.Value("netqos_qos_level_class_bytes_per_second", with_bound(eth0, "ceil")) == 125e6);
  CHECK(doc.Value("netqos_qos_level_class_bytes_total", eth0) == 125000);
  CHECK(doc.Value("netqos_qos_level_class_packets_total", eth0) == 100);
  CHECK(doc.Value("netqos_qos_level_class_overlimits_total", eth0) == 9);
  // Not read: its rates, no counters (rather than a false 0).
  CHECK(doc.Value("netqos_qos_level_class_bytes_per_second",
                  {{"nic", "ns1-eth1"}, {"bound", "rate"}}) == 150e6 / 8);
  CHECK_FALSE(doc.Find("netqos_qos_level_class_bytes_total", {{"nic", "ns1-eth1"}}));
}

TEST_CASE("enforcement passes: time by scope, failures, failed kernel writes by target") {
  netqos::service::EnforcementReport r = SomeEnforcement();
  netqos::HistogramCounts full({0.01, 1});
  full.Observe(0.005);
  full.Observe(2);
  r.pass_seconds = {{"full", full}, {"containers", netqos::HistogramCounts({0.01, 1})}};
  r.pass_failures = 3;
  r.kernel_failures = {{"class_map", 0}, {"shaping", 4}};
  std::vector<Family> fams;
  CollectEnforcement(r, nullptr, &fams);
  auto doc = Render(fams);
  CHECK(doc.Family("netqos_enforcement_pass_duration_seconds").type == "histogram");
  CHECK(doc.Value("netqos_enforcement_pass_duration_seconds_bucket",
                  {{"scope", "full"}, {"le", "0.01"}}) == 1);
  CHECK(doc.Value("netqos_enforcement_pass_duration_seconds_bucket",
                  {{"scope", "full"}, {"le", "+Inf"}}) == 2);
  CHECK(doc.Value("netqos_enforcement_pass_duration_seconds_sum", {{"scope", "full"}}) ==
        Approx(2.005));
  CHECK(doc.Value("netqos_enforcement_pass_duration_seconds_count", {{"scope", "containers"}}) ==
        0);
  CHECK(doc.Value("netqos_enforcement_pass_failures_total") == 3);
  CHECK(doc.Value("netqos_enforcement_kernel_failures_total", {{"target", "shaping"}}) == 4);
  CHECK(doc.Value("netqos_enforcement_kernel_failures_total", {{"target", "class_map"}}) == 0);
}

TEST_CASE("checkpoint: records and time per group-commit flush, and the failed-flush stop") {
  netqos::core::FlushStats flushes{netqos::HistogramCounts({1, 2, 4}),
                                   netqos::HistogramCounts({0.001, 0.01})};
  flushes.records.Observe(1);
  flushes.records.Observe(3);
  flushes.seconds.Observe(0.0004);
  flushes.seconds.Observe(0.02);
  std::vector<Family> fams;
  netqos::metrics::CollectCheckpoint(flushes, false, &fams);
  auto doc = Render(fams);
  CHECK(doc.Value("netqos_checkpoint_flush_records_bucket", {{"le", "1"}}) == 1);
  CHECK(doc.Value("netqos_checkpoint_flush_records_bucket", {{"le", "4"}}) == 2);
  CHECK(doc.Value("netqos_checkpoint_flush_records_sum") == 4);
  CHECK(doc.Value("netqos_checkpoint_flush_duration_seconds_bucket", {{"le", "0.001"}}) == 1);
  CHECK(doc.Value("netqos_checkpoint_flush_duration_seconds_count") == 2);
  CHECK(doc.Value("netqos_checkpoint_flush_failed") == 0);

  fams.clear();
  netqos::metrics::CollectCheckpoint({}, true, &fams);  // a store without group commit
  doc = Render(fams);
  CHECK(doc.Value("netqos_checkpoint_flush_failed") == 1);
  CHECK(doc.Family("netqos_checkpoint_flush_records").samples.empty());
  CHECK(doc.Family("netqos_checkpoint_flush_records").type == "histogram");
}

TEST_CASE("scrapes are counted by HTTP status, and the start time is exposed") {
  DaemonMetrics m({"1.2.3", "abc", "2026-01-02T03:04:05Z"}, nullptr, nullptr);
  auto before = ParsePrometheusText(m.RenderText());
  for (const char* code : {"200", "500", "503"}) {
    CHECK(before.Value("netqos_metrics_scrapes_total", {{"code", code}}) == 0);
  }
  CHECK(before.Value("netqos_start_time_seconds") > 1.7e9);
  m.ObserveScrape(200);
  m.ObserveScrape(503);
  m.ObserveScrape(503);
  auto doc = ParsePrometheusText(m.RenderText());
  CHECK(doc.Value("netqos_metrics_scrapes_total", {{"code", "200"}}) == 1);
  CHECK(doc.Value("netqos_metrics_scrapes_total", {{"code", "503"}}) == 2);
  CHECK(doc.Value("netqos_start_time_seconds") == before.Value("netqos_start_time_seconds"));
}

TEST_CASE("enforcement off: the mode is exposed and the per-container families are empty") {
  netqos::service::EnforcementReport r;
  std::vector<Family> fams;
  CollectEnforcement(r, nullptr, &fams);
  auto doc = Render(fams);
  CHECK(doc.Value("netqos_enforcement_mode", {{"mode", "none"}}) == 1);
  CHECK(doc.Family("netqos_container_bytes_total").samples.empty());
  CHECK(doc.Family("netqos_container_bytes_total").type == "counter");
}

TEST_CASE("the RPC observer counts calls by method and code and times them") {
  DaemonMetrics m({"1.2.3", "abc", "2026-01-02T03:04:05Z"}, nullptr, nullptr);
  auto before = ParsePrometheusText(m.RenderText());
  // Every resource plugin method is exposed at zero before its first call.
  for (const auto& method : netqos::metrics::ResourcePluginMethods()) {
    INFO(method);
    CHECK(before.Value("netqos_rpc_requests_total", {{"method", method}, {"code", "OK"}}) == 0);
    CHECK(before.Value("netqos_rpc_duration_seconds_count", {{"method", method}}) == 0);
  }
  // So is a refusal for lack of bandwidth, which an alert counts with increase().
  for (const char* method : {"Allocate", "AllocateForPod"}) {
    CHECK(before.Value("netqos_rpc_requests_total",
                       {{"method", method}, {"code", "RESOURCE_EXHAUSTED"}}) == 0);
  }
  m.Observe("Allocate", "OK", 0.002);
  m.Observe("Allocate", "OK", 0.0004);
  m.Observe("Allocate", "RESOURCE_EXHAUSTED", 0.003);
  m.Observe("GetTopologyHints", "OK", 7.0);
  m.SetHeartbeat(1700000000.25);
  auto doc = ParsePrometheusText(m.RenderText());
  CHECK(doc.Value("netqos_rpc_requests_total", {{"method", "Allocate"}, {"code", "OK"}}) == 2);
  CHECK(doc.Value("netqos_rpc_requests_total",
                  {{"method", "Allocate"}, {"code", "RESOURCE_EXHAUSTED"}}) == 1);
  CHECK(doc.Value("netqos_rpc_duration_seconds_count", {{"method", "Allocate"}}) == 3);
  CHECK(doc.Value("netqos_rpc_duration_seconds_sum", {{"method", "Allocate"}}) == Approx(0.0054));
  CHECK(doc.Value("netqos_rpc_duration_seconds_bucket",
                  {{"method", "Allocate"}, {"le", "0.0005"}}) == 1);
  CHECK(doc.Value("netqos_rpc_duration_seconds_bucket",
                  {{"method", "GetTopologyHints"}, {"le", "5"}}) == 0);
  CHECK(doc.Value("netqos_rpc_duration_seconds_bucket",
                  {{"method", "GetTopologyHints"}, {"le", "+Inf"}}) == 1);
  CHECK(doc.Value("netqos_build_info", {{"version", "1.2.3"},
                                        {"commit", "abc"},
                                        {"build_date", "2026-01-02T03:04:05Z"}}) == 1);
  CHECK(doc.Value("netqos_up") == 1);
  CHECK(doc.Value("netqos_heartbeat_timestamp_seconds") == 1700000000.25);
}

TEST_CASE("failures carry reallocation and the latest failure's code, never its message") {
  DaemonMetrics m({"1.2.3", "", ""}, nullptr, nullptr);
  auto before = ParsePrometheusText(m.RenderText());
  for (const char* method : {"Allocate", "AllocateForPod"}) {
    for (const char* r : {"none", "true", "false"}) {
      CHECK(before.Value("netqos_allocation_failures_total",
                         {{"method", method}, {"reallocation", r}}) == 0);
    }
  }
  CHECK(before.Family("netqos_rpc_last_error_info").samples.empty());

  // As the RPC guard reports a failure: ObserveFailure, then Observe with its code.
  const auto fail = [&](const char* method, const std::string& message, const char* realloc,
                        const char* code) {
    m.ObserveFailure(method, message, realloc);
    m.Observe(method, code, 0.001);
  };
  fail("Allocate", "first failure", "", "INVALID_ARGUMENT");
  fail("Allocate", "no NIC fits pod a/b", "true", "RESOURCE_EXHAUSTED");
  fail("AllocateForPod", "x", "false", "INVALID_ARGUMENT");
  fail("GetTopologyHints", std::string(300, 'e') + "\n\xff", "", "INTERNAL");
  m.Observe("GetTopologyHints", "OK", 0.001);  // a success does not clear the last failure
  auto doc = ParsePrometheusText(m.RenderText());
  CHECK(doc.Value("netqos_allocation_failures_total",
                  {{"method", "Allocate"}, {"reallocation", "none"}}) == 1);
  CHECK(doc.Value("netqos_allocation_failures_total",
                  {{"method", "Allocate"}, {"reallocation", "true"}}) == 1);
  CHECK(doc.Value("netqos_allocation_failures_total",
                  {{"method", "AllocateForPod"}, {"reallocation", "false"}}) == 1);
  // One series per method, labelled with a gRPC code (a closed set): the latest replaces it.
  const auto& last = doc.Family("netqos_rpc_last_error_info").samples;
  CHECK(last.size() == 3);
  CHECK(doc.Value("netqos_rpc_last_error_info",
                  {{"method", "Allocate"}, {"code", "RESOURCE_EXHAUSTED"}}) == 1);
  CHECK(doc.Value("netqos_rpc_last_error_info",
                  {{"method", "GetTopologyHints"}, {"code", "INTERNAL"}}) == 1);
  for (const auto& sample : last) CHECK(sample.labels.count("error_message") == 0);
}

TEST_CASE("shaping: each NIC's mode, and each flag its mode does not do, as a series of its own") {
  netqos::service::EnforcementReport r = SomeEnforcement();
  r.shaping_modes["eth0"] = {"edt",
                             "--shaping-mode=edt (4 TX queues)",
                             "flag",
                             {"--container-ceil=level", "--qos-level-burst"}};
  r.shaping_modes["eth1"] = {"htb", "auto: 1 TX queue", "single_tx_queue", {}};
  std::vector<Family> fams;
  CollectEnforcement(r, nullptr, &fams);
  auto doc = Render(fams);
  CHECK(doc.Value("netqos_enforcement_shaping_mode",
                  {{"nic", "eth0"}, {"mode", "edt"}, {"reason", "flag"}}) == 1);
  CHECK(doc.Family("netqos_enforcement_inactive_feature").type == "gauge");
  CHECK(doc.Value("netqos_enforcement_inactive_feature",
                  {{"nic", "eth0"}, {"feature", "--container-ceil=level"}}) == 1);
  CHECK(doc.Value("netqos_enforcement_inactive_feature",
                  {{"nic", "eth0"}, {"feature", "--qos-level-burst"}}) == 1);
  CHECK(doc.Family("netqos_enforcement_inactive_feature").samples.size() == 2);  // none for eth1
}
