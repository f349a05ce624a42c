// The policy bounds the checkpoint by core::EntryBytes: that count must never be below what this
// adapter writes for an entry, whatever the tenant put in its strings, or the bound would let the
// snapshot pass its read limit.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/allocation_json.h"
#include "core/state_size.h"

namespace netqos::checkpoint {
namespace {

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

core::AllocationInfo Entry(const std::string& filler) {
  core::AllocationInfo info;
  info.pod_uid = "uid-" + filler;
  info.pod_namespace = filler;
  info.pod_name = filler;
  info.container_name = filler;
  info.container_type = "MAIN";
  info.container_index = UINT64_MAX;
  info.pod_role = filler;
  info.pod_type = filler;
  info.egress = UINT32_MAX;
  info.ingress = UINT32_MAX;
  info.if_name = "eth0";
  // A netns is a file name (at most 255 bytes), and the operator's, not the tenant's.
  info.ns_name = filler.substr(0, 255);
  info.numa_nodes = {0, 2, 4, 6, 8, 10, 12, 14, 16};
  info.labels = {{filler, filler}};
  info.annotations = {{"k1" + filler, filler}, {"k2", filler + filler}};
  info.qos_level = "shared_cores";
  info.net_class_id = "4294967295";
  return info;
}

std::vector<std::string> HostileFillers() {
  std::string controls;
  for (int c = 0; c < 0x20; ++c) controls += static_cast<char>(c);
  std::string high;
  for (int c = 0x80; c <= 0xff; ++c) high += static_cast<char>(c);
  return {"",
          "plain",
          std::string(3000, '"'),
          std::string(3000, '\\'),
          controls + controls + controls,
          high + high,                              // not UTF-8: replaced byte by byte
          "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",   // valid UTF-8 of 2, 3 and 4 bytes
          "\xc0\x80\xed\xa0\x80\xf4\x90\x80\x80"};  // overlong, surrogate, above U+10FFFF
}

TEST_CASE("an entry is never written longer than the policy counts it", "[entry_size]") {
  for (const std::string& filler : HostileFillers()) {
    const core::AllocationInfo info = Entry(filler);
    core::PodEntries entries;
    entries[info.pod_uid][info.container_name] = info;
    // The pod entries document holds the entry once, under its two keys.
    const size_t pod_entries = Dump(PodEntriesToJson(entries)).size();
    INFO("filler of " << filler.size() << " bytes");
    CHECK(pod_entries <= core::EntryBytes(info));
    // The machine state holds it again under its NIC, with the NIC's identifier and numbers
    // (once per NIC, whatever the number of entries).
    core::MachineState state;
    state[info.nic()] = core::NicState{};
    const size_t machine = Dump(MachineStateToJson(state, entries)).size();
    CHECK(machine <= core::EntryBytes(info) + 1024);
  }
}

TEST_CASE("for plain text the count is close to what is written", "[entry_size]") {
  core::AllocationInfo info = Entry("plain");
  info.annotations["pod.kubernetes.io/pod-aggregated-requests"] = std::string(10000, 'x');
  core::PodEntries entries;
  entries[info.pod_uid][info.container_name] = info;
  const size_t written = Dump(PodEntriesToJson(entries)).size();
  CHECK(core::EntryBytes(info) <= written + 1024);
}

}  // namespace
}  // namespace netqos::checkpoint
