// DSCP marking on the wire: the real netqosd with --qos-level-dscp enforcing a veth into a
// network namespace; container cgroups (one pod with a netqos.io/dscp annotation the tenant policy
// allows, one with a bad one, one of the marked level, one of a level without a DSCP, which
// --dscp-default marks CS0) send UDP and TCP from processes
// placed in them; an AF_PACKET socket on the peer end, inside the namespace, captures what
// arrives. Asserted: the DS field of each container's packets, the ECN bits the sender chose,
// the IPv4 header checksum, the pinned class map and netqosctl's view. Root only; DaemonFixture
// removes everything (also on failure) and the case checks that nothing was left behind.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/daemon_fixture.h"
#include "support/dscp_capture.h"

namespace {

using namespace std::chrono_literals;
using netqos::testing::Capture;
using netqos::testing::DaemonFixture;
using netqos::testing::Seen;
using netqos::testing::SendFrom;
using netqos::testing::WaitFor;
using nlohmann::json;

constexpr char kDscpKey[] = "netqos.io/dscp";
constexpr char kQosKey[] = "katalyst.kubewharf.io/qos_level";

}  // namespace

TEST_CASE(
    "dscp: the enforced NIC marks each container's packets with its annotation's or level's "
    "DSCP, ECN bits and IPv4 checksum intact",
    "[enforcement]") {
  DaemonFixture env({.tag = "q", .subnet = 226});
  auto& annotated = env.AddPod(1);  // shared_cores, annotation AF41 (34) over the level's 46
  annotated.annotations[kDscpKey] = "af41";
  auto& level = env.AddPod(2);  // shared_cores: the level's 46 (EF)
  auto& bad = env.AddPod(3);    // a bad annotation: the level's 46, and a problem
  bad.annotations[kDscpKey] = "64\" x=y";
  auto& unmarked = env.AddPod(4);  // reclaimed_cores: no DSCP of its own, --dscp-default's CS0
  unmarked.annotations[kQosKey] = "reclaimed_cores";
  env.WritePods();
  const std::string cg_annotated = env.MakeCgroup(annotated);
  const std::string cg_level = env.MakeCgroup(level);
  const std::string cg_bad = env.MakeCgroup(bad);
  const std::string cg_unmarked = env.MakeCgroup(unmarked);
  // The tenant policy lets the pods' namespace choose AF41 (and nothing else).
  const std::string policy =
      env.WriteTenantPolicy(R"({"version": 1, "namespaces": {"netqos-test": {"dscp": ["AF41"]}}})");
  env.StartDaemon({"--qos-level-dscp=shared_cores=EF,system_cores=CS6", policy});

  // The pinned class map: the DSCP byte and its flag.
  auto marked_with = [&](const std::string& cg, int want) {
    return WaitFor(
               [&] {
                 auto c = env.ClassOf(cg);
                 if (!c) return false;
                 if (want < 0) return (c->flags & NETQOS_CLASS_F_SET_DSCP) == 0;
                 return (c->flags & NETQOS_CLASS_F_SET_DSCP) != 0 && c->dscp == want;
               },
               5000ms)
        .has_value();
  };
  CHECK(marked_with(cg_annotated, 34));
  CHECK(marked_with(cg_level, 46));
  CHECK(marked_with(cg_bad, 46));
  REQUIRE(marked_with(cg_unmarked, 0));
  REQUIRE(env.ClassOf(cg_unmarked).has_value());

  // The bad annotation is reported, naming the pod and the annotation, its value quoted.
  CHECK(WaitFor(
            [&] {
              return netqos::testing::CountLines(env.Log(),
                                                 {bad.name, "netqos.io/dscp=", "0..63",
                                                  "the shared level's DSCP 46 (EF) stands"}) > 0;
            },
            5000ms)
            .has_value());
  INFO("daemon log:\n" << env.Log());

  const std::string peer_ip = env.veth().peer_ip;
  Capture cap(env.ns(), env.veth().peer, peer_ip);
  INFO("capture: " << cap.error());
  REQUIRE(cap.WaitReady());
  struct Sender {
    std::string cgroup;
    uint16_t udp, tcp;
    int tos;   // what the sender asks for (DSCP 10 + ECN bits)
    int want;  // the DSCP on the wire
  };
  const std::vector<Sender> senders = {
      {cg_annotated, 41001, 41101, 0x29, 34},  // DSCP 10, ECT(1)
      {cg_level, 41002, 41102, 0x2a, 46},      // DSCP 10, ECT(0)
      {cg_bad, 41003, 41103, 0x2b, 46},        // DSCP 10, CE
      {cg_unmarked, 41004, 41104, 0x29, 0},    // --dscp-default auto: CS0
  };
  for (const auto& s : senders) {
    INFO("cgroup " << s.cgroup);
    CHECK(SendFrom(s.cgroup, peer_ip, s.udp, s.tcp, s.tos, 20) == 0);
  }
  std::this_thread::sleep_for(300ms);
  cap.Stop();
  auto seen = cap.Take();
  for (const auto& s : senders) {
    INFO("cgroup " << s.cgroup << " udp port " << s.udp);
    const Seen& u = seen[s.udp];
    CHECK(u.tos.size() >= 10);
    for (uint8_t tos : u.tos) {
      CHECK(tos >> 2 == s.want);
      CHECK((tos & 0x3) == (s.tos & 0x3));  // the sender's ECN codepoint
    }
    CHECK(u.bad_checksums == 0);
    // TCP: the SYN (and its retransmits); TCP clears the ECN bits of IP_TOS itself.
    const Seen& t = seen[s.tcp];
    CHECK(!t.tos.empty());
    for (uint8_t tos : t.tos) CHECK(tos >> 2 == s.want);
    CHECK(t.bad_checksums == 0);
  }

  // netqosctl shows each container's DSCP, from the pinned map and from the daemon.
  const auto r = env.Ctl({"classes", "--json", "--bpf-pin-dir=" + env.PinDir()});
  INFO("netqosctl: " << r.output);
  REQUIRE(r.exit_code == 0);
  const json doc = json::parse(r.output);
  std::map<uint64_t, json> dscp_of;
  for (const auto& c : doc.at("containers")) dscp_of[c.at("cgroup_id")] = c.at("dscp");
  CHECK(dscp_of[netqos::testing::InodeOf(cg_annotated)] == json(34));
  CHECK(dscp_of[netqos::testing::InodeOf(cg_level)] == json(46));
  CHECK(dscp_of[netqos::testing::InodeOf(cg_unmarked)] == json(0));

  CHECK(env.Leftovers() == "");
}
