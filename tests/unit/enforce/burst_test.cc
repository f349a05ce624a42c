// Burst: the value grammar (auto, byte quantities and their bounds), --qos-level-burst items, the
// choice between a pod's netqos.io/burst annotation and its QoS level's burst, through
// ComputeDesiredState into the leaves, and the buckets the HTB plan gives them.
#include "enforce/burst.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "enforce/desired_state.h"
#include "enforce/edt_rates.h"
#include "support/observed_container.h"

namespace {

using Catch::Contains;
using Catch::StartsWith;
using netqos::core::StringMap;
using netqos::enforce::BurstText;
using netqos::enforce::kBurstAnnotation;
using netqos::enforce::LevelBurst;
using netqos::enforce::ParseBurst;
using netqos::enforce::ParseLevelBurstItems;
using netqos::enforce::ReadPodBurst;
using netqos::shaping::QosLevel;

uint32_t At(const LevelBurst& t, QosLevel l) { return t[static_cast<size_t>(l)]; }

}  // namespace

TEST_CASE("ParseBurst: auto and byte quantities from one packet to 1Gi") {
  const std::vector<std::pair<std::string, uint32_t>> good = {
      {"auto", 0},     {"1600", 1600},   {"1.6k", 1600},     {"64Ki", 65536},
      {"1M", 1000000}, {"1Mi", 1048576}, {"1.5Mi", 1572864}, {"1Gi", 1073741824},
      {"16e3", 16000}, {"1600.1", 1601},  // rounded up to a whole byte, as Quantity.Value() does
  };
  for (const auto& [text, bytes] : good) {
    INFO(text);
    auto r = ParseBurst(text);
    REQUIRE(r.ok());
    CHECK(*r == bytes);
  }
  const std::vector<std::string> bad = {"",       "0",     "1599",  "1.5k", "1Gi1",
                                        "1025Mi", "2G",    "-1600", "AUTO", "1 k",
                                        "64KiB",  "1e400", "64ki",  "0x640"};
  for (const auto& text : bad) {
    INFO(text);
    auto r = ParseBurst(text);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), StartsWith("burst must be auto or a size in bytes"));
  }
  CHECK_THAT(ParseBurst("1599").status().message(), Contains("below the minimum of 1600 bytes"));
  CHECK_THAT(ParseBurst("2Gi").status().message(),
             Contains("above the maximum of 1073741824 bytes"));
}

TEST_CASE("BurstText names bytes or the default bucket") {
  CHECK(BurstText(1600) == "1600 bytes");
  CHECK(BurstText(0) == "auto (1 ms at the rate + 1600 bytes)");
}

TEST_CASE("ParseLevelBurstItems: levels by either name, errors name the flag and the item") {
  LevelBurst t{};
  REQUIRE(ParseLevelBurstItems({"system_cores=64Ki", "reclaimed=1600", "shared=auto"},
                               "--qos-level-burst", &t)
              .ok());
  CHECK(At(t, QosLevel::kSystem) == 65536);
  CHECK(At(t, QosLevel::kDedicated) == 0);
  CHECK(At(t, QosLevel::kShared) == 0);
  CHECK(At(t, QosLevel::kReclaimed) == 1600);

  for (const std::string item : {"shared", "gold=1M", "shared=1", "=1M", "shared=1M=2"}) {
    INFO(item);
    LevelBurst u{};
    auto st = ParseLevelBurstItems({item}, "--qos-level-burst", &u);
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.message(), StartsWith("--qos-level-burst: \"" + item + "\": "));
  }
  LevelBurst u{};
  auto twice = ParseLevelBurstItems({"shared=1M", "shared_cores=2M"}, "--qos-level-burst", &u);
  REQUIRE_FALSE(twice.ok());
  CHECK_THAT(twice.message(), Contains("already set by \"shared=1M\""));
}

TEST_CASE("ReadPodBurst: a burst, auto, or why the value is none") {
  const auto none = ReadPodBurst({});
  CHECK_FALSE(none.bytes.has_value());
  CHECK(none.error.empty());
  CHECK(ReadPodBurst({{kBurstAnnotation, "1600"}}).bytes == std::optional<uint32_t>(1600));
  CHECK(ReadPodBurst({{kBurstAnnotation, "auto"}}).bytes == std::optional<uint32_t>(0));
  const auto bad = ReadPodBurst({{kBurstAnnotation, "tiny"}});
  CHECK_FALSE(bad.bytes.has_value());
  CHECK_THAT(bad.error, StartsWith("burst must be auto"));
  // The error never repeats the value: the caller quotes it, bounded and escaped.
  const auto hostile = ReadPodBurst({{kBurstAnnotation, "1M\" pod=x/y\nfake"}});
  CHECK(hostile.error.find("pod=x/y") == std::string::npos);
}

TEST_CASE("ComputeDesiredState: each leaf carries its burst, one problem per pod") {
  using netqos::enforce::ComputeDesiredState;
  using netqos::enforce::DesiredOptions;
  using netqos::enforce::EnforcedLink;
  using netqos::enforce::ObservedContainer;
  auto container = [](const std::string& uid, uint64_t cgroup_id, StringMap annotations) {
    return netqos::testing::ObservedIn(uid, "c", cgroup_id, std::move(annotations),
                                       cgroup_id + 1000);
  };
  const char kQos[] = "katalyst.kubewharf.io/qos_level";
  const char kEgress[] = "kubernetes.io/egress-bandwidth";
  const char kIngress[] = "kubernetes.io/ingress-bandwidth";
  DesiredOptions options{true};
  options.level_burst[static_cast<size_t>(QosLevel::kDedicated)] = 65536;
  // Namespace "ns" may claim dedicated_cores without an allocation.
  auto policy = std::make_shared<netqos::enforce::TenantPolicy>();
  policy->namespaces["ns"].max_unallocated_level = QosLevel::kDedicated;
  options.tenant = policy;
  netqos::shaping::MinorAllocator minors;
  const netqos::core::NicId eth0{"", "eth0"};
  const auto s = ComputeDesiredState(
      netqos::core::PolicyConfig{}, {},
      {container("u1", 41, {{kQos, "dedicated_cores"}, {kEgress, "20M"}}),
       container("u2", 42,
                 {{kQos, "dedicated_cores"}, {kEgress, "20M"}, {kBurstAnnotation, "1600"}}),
       container("u3", 43, {{kQos, "shared_cores"}, {kEgress, "20M"}, {kIngress, "40M"}}),
       // Two refused annotations on one pod: one problem for the pod, both notes in it.
       container("u4", 44,
                 {{kQos, "dedicated_cores"},
                  {kEgress, "20M"},
                  {kBurstAnnotation, "x"},
                  {"netqos.io/container-ceil", "sky"}})},
      {EnforcedLink{eth0, 1000}}, {}, options, minors);
  REQUIRE(s.by_cgroup.size() == 4);
  CHECK(s.by_cgroup.at(41).burst_bytes == 65536);
  CHECK(s.by_cgroup.at(42).burst_bytes == 1600);
  CHECK(s.by_cgroup.at(43).burst_bytes == 0);
  CHECK(s.by_cgroup.at(44).burst_bytes == 65536);
  std::map<uint64_t, uint32_t> egress_burst;
  for (const auto& leaf : s.egress.at(eth0)) egress_burst[leaf.key] = leaf.burst_bytes;
  CHECK(egress_burst ==
        std::map<uint64_t, uint32_t>{{1041, 65536}, {1042, 1600}, {1043, 0}, {1044, 65536}});
  REQUIRE(s.ingress.at(eth0).size() == 1);
  CHECK(s.ingress.at(eth0)[0].burst_bytes == 0);

  REQUIRE(s.problems.size() == 1);
  CHECK_THAT(s.problems[0], StartsWith("ns/pod-u4 container c: "));
  CHECK_THAT(s.problems[0], Contains("refused netqos.io/container-ceil=sky"));
  CHECK_THAT(s.problems[0], Contains("refused netqos.io/burst=x: burst must be auto"));
  CHECK_THAT(s.problems[0], Contains("the dedicated level's burst, 65536 bytes, applies"));

  // The plan gives the leaves' classes their burst, and each level's default leaf its level's.
  netqos::shaping::ShapingConfig config;
  config.burst_bytes = options.level_burst;
  auto plan = netqos::shaping::BuildHtbPlan("eth0", config, 1000, s.egress.at(eth0));
  REQUIRE(plan.ok());
  std::map<uint64_t, uint32_t> planned;
  for (const auto& c : plan->classes) {
    if (c.container_key) planned[*c.container_key] = c.burst_bytes;
  }
  CHECK(planned == egress_burst);
  using netqos::shaping::LevelDefaultMinor;
  using netqos::shaping::MakeHandle;
  const auto* dflt = plan->Find(MakeHandle(0x10, LevelDefaultMinor(QosLevel::kDedicated)));
  REQUIRE(dflt != nullptr);
  CHECK(dflt->burst_bytes == 65536);
  CHECK(plan->Find(MakeHandle(0x10, LevelDefaultMinor(QosLevel::kShared)))->burst_bytes == 0);
}

TEST_CASE("BucketBytes: the default bucket, a set burst, and the longest bucket a rate keeps") {
  using netqos::shaping::BucketBytes;
  using netqos::shaping::DefaultBucketBytes;
  // 200 Mbit/s = 25e6 bytes/s: 25000 bytes in 1 ms, plus a packet.
  CHECK(DefaultBucketBytes(200'000'000) == 26600);
  CHECK(BucketBytes(200'000'000, 0) == 26600);
  CHECK(BucketBytes(200'000'000, 1600) == 1600);
  CHECK(BucketBytes(200'000'000, 1u << 30) == 1u << 30);
  // 8 kbit/s = 1000 bytes/s: at most 100 s of it.
  CHECK(BucketBytes(8000, 1u << 30) == 100'000);
  CHECK(DefaultBucketBytes(8000) == 1601);
}

TEST_CASE("BurstsNotApplied counts the leaves with a burst on EDT NICs' egress") {
  using netqos::shaping::ContainerAllocation;
  const netqos::core::NicId eth0{"", "eth0"}, eth1{"", "eth1"};
  ContainerAllocation with{1, QosLevel::kShared, 100'000'000};
  with.burst_bytes = 65536;
  ContainerAllocation without{2, QosLevel::kShared, 100'000'000};
  ContainerAllocation other = with;
  other.key = 3;
  const std::map<netqos::core::NicId, std::vector<ContainerAllocation>> egress = {
      {eth0, {with, without}}, {eth1, {other}}};
  CHECK(netqos::enforce::BurstsNotApplied(egress, {}) == 0);  // all HTB: every burst applies
  CHECK(netqos::enforce::BurstsNotApplied(egress, {eth0}) == 1);
  CHECK(netqos::enforce::BurstsNotApplied(egress, {eth0, eth1}) == 2);
}
