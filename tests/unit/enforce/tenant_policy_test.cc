// The tenant policy file: parsed and validated whole, every error naming where it is, values in
// messages bounded and escaped, the canonical form round-tripping. Pure.
#include "enforce/tenant_policy.h"

#include <catch2/catch.hpp>
#include <string>

namespace {

using Catch::Contains;
using netqos::enforce::FindTenantKey;
using netqos::enforce::IsNamespaceName;
using netqos::enforce::NamespaceAggregate;
using netqos::enforce::ParseTenantPolicy;
using netqos::enforce::TenantKey;
using netqos::enforce::TenantPolicy;
using netqos::enforce::TenantPolicyJson;
using netqos::enforce::TenantRules;
using netqos::shaping::QosLevel;

std::string ErrorOf(const std::string& text) {
  auto p = ParseTenantPolicy(text);
  INFO(text);
  REQUIRE_FALSE(p.ok());
  return p.status().message();
}

const char kExample[] = R"({
  "version": 1,
  "default": {"max_burst": "64Ki", "unallocated_qos_level_max": "reclaimed_cores"},
  "namespaces": {
    "media": {
      "borrow": true,
      "dscp": ["AF41", 46, "cs1"],
      "implicit_bandwidth_max_mbps": 500,
      "aggregate": {"egress": "500M", "ingress": "1G", "egress_guarantee": "100M"}
    },
    "batch": {
      "honoured_annotations": ["kubernetes.io/egress-bandwidth"],
      "max_burst": null
    }
  }
})";

}  // namespace

TEST_CASE("tenant policy: the built-in default honours every annotation and allows nothing more",
          "[enforce][tenant]") {
  const TenantPolicy p;
  const TenantRules& r = p.For("anything");
  CHECK(r.honoured.size() == netqos::enforce::kTenantKeyCount);
  CHECK_FALSE(r.borrow);
  CHECK(r.dscp.empty());
  CHECK_FALSE(r.max_burst_bytes.has_value());
  CHECK(r.implicit_max_mbps == 0);
  CHECK_FALSE(r.max_unallocated_level.has_value());
  CHECK_FALSE(r.aggregate.any());
  CHECK(p.EntryName("anything") == "default");
  // A file with only the version is the built-in default.
  auto minimal = ParseTenantPolicy(R"({"version": 1})");
  REQUIRE(minimal.ok());
  CHECK(*minimal == p);
}

TEST_CASE("tenant policy: namespaces start from the default and override what they say",
          "[enforce][tenant]") {
  auto p = ParseTenantPolicy(kExample);
  INFO(p.status().message());
  REQUIRE(p.ok());
  const TenantRules& media = p->For("media");
  CHECK(p->EntryName("media") == "namespace media");
  CHECK(media.borrow);
  CHECK(media.dscp == std::set<uint8_t>{34, 46, 8});
  CHECK(media.max_burst_bytes == std::optional<uint32_t>(65536));  // the default's
  CHECK(media.max_unallocated_level == std::optional<QosLevel>(QosLevel::kReclaimed));
  CHECK(media.implicit_max_mbps == 500);
  CHECK(media.aggregate == NamespaceAggregate{500'000'000, 1'000'000'000, 100'000'000, 0});
  const TenantRules& batch = p->For("batch");
  CHECK(batch.honoured == std::set<TenantKey>{TenantKey::kEgressBandwidth});
  CHECK_FALSE(batch.max_burst_bytes.has_value());  // null: the level's again
  CHECK_FALSE(batch.borrow);
  CHECK_FALSE(batch.aggregate.any());
  const TenantRules& other = p->For("other");
  CHECK(other.max_burst_bytes == std::optional<uint32_t>(65536));
  CHECK_FALSE(other.borrow);
}

TEST_CASE("tenant policy: the canonical form parses back to the same policy", "[enforce][tenant]") {
  auto p = ParseTenantPolicy(kExample);
  REQUIRE(p.ok());
  const std::string canonical = TenantPolicyJson(*p);
  auto again = ParseTenantPolicy(canonical);
  INFO(canonical);
  INFO(again.status().message());
  REQUIRE(again.ok());
  CHECK(*again == *p);
  CHECK(TenantPolicyJson(*again) == canonical);
}

TEST_CASE("tenant policy: every error names where it is", "[enforce][tenant]") {
  struct Row {
    const char* text;
    const char* where;
    const char* why;
  };
  const Row rows[] = {
      {"", "not valid JSON", ""},
      {"[]", "must be a JSON object", ""},
      {R"({})", "\"version\": 1 is required", ""},
      {R"({"version": 2})", "version 2", "version 1"},
      {R"({"version": 1, "extra": 1})", "unknown key extra", "version, default, namespaces"},
      {R"({"version": 1, "default": {"borow": true}})", "default: unknown key borow", ""},
      {R"({"version": 1, "default": {"borrow": "yes"}})", "default.borrow", "true or false"},
      {R"({"version": 1, "default": {"dscp": [64]}})", "default.dscp[0]", "at most 63"},
      {R"({"version": 1, "default": {"dscp": ["EF", 46]}})", "default.dscp[1]", "twice"},
      {R"({"version": 1, "default": {"dscp": ["AF51"]}})", "default.dscp[0]", "AF51"},
      {R"({"version": 1, "default": {"dscp": "EF"}})", "default.dscp", "an array"},
      {R"({"version": 1, "default": {"max_burst": "1Ti"}})", "default.max_burst", "1Gi"},
      {R"({"version": 1, "default": {"max_burst": 100}})", "default.max_burst", "1600"},
      {R"({"version": 1, "default": {"max_burst": -1}})", "default.max_burst", "negative"},
      {R"({"version": 1, "default": {"implicit_bandwidth_max_mbps": 1.5}})",
       "default.implicit_bandwidth_max_mbps", "whole number"},
      {R"({"version": 1, "default": {"implicit_bandwidth_max_mbps": 4294967296}})",
       "default.implicit_bandwidth_max_mbps", "at most 4294967295"},
      {R"({"version": 1, "default": {"unallocated_qos_level_max": "top"}})",
       "default.unallocated_qos_level_max", "not a QoS level"},
      {R"({"version": 1, "default": {"honoured_annotations": ["netqos.io/bogus"]}})",
       "default.honoured_annotations[0]", "not an annotation netqos reads"},
      {R"({"version": 1, "default": {"aggregate": {"egress": "1G"}}})", "default.aggregate",
       "per namespace"},
      {R"({"version": 1, "namespaces": []})", "namespaces: must be an object", ""},
      {R"({"version": 1, "namespaces": {"Media": {}}})", "namespaces: Media", "namespace name"},
      {R"({"version": 1, "namespaces": {"a": {"aggregate": {}}}})", "namespaces.a.aggregate",
       "egress or an ingress ceiling"},
      {R"({"version": 1, "namespaces": {"a": {"aggregate": {"egress": "10 M"}}}})",
       "namespaces.a.aggregate.egress", "10 M"},
      {R"({"version": 1, "namespaces": {"a": {"aggregate": {"egress_guarantee": "10M"}}}})",
       "namespaces.a.aggregate", "needs an egress ceiling"},
      {R"({"version": 1, "namespaces": {"a": {"aggregate": {"egress": "10M",
          "egress_guarantee": "20M"}}}})",
       "namespaces.a.aggregate", "above the egress ceiling"},
      {R"({"version": 1, "namespaces": {"a": {}, "a": {"borrow": true}}})", "key a appears twice",
       ""},
  };
  for (const auto& row : rows) {
    const std::string message = ErrorOf(row.text);
    INFO(row.text << "\n-> " << message);
    CHECK_THAT(message, Contains(row.where));
    CHECK_THAT(message, Contains(row.why));
  }
}

TEST_CASE("tenant policy: hostile files are refused with bounded, escaped messages",
          "[enforce][tenant]") {
  // A key with a newline and an escape sequence, 10 KB long.
  const std::string message =
      ErrorOf(R"({"version": 1, "default": {")" + std::string("x\\n\\u001b[2J") +
              std::string(10000, 'k') + R"(": 1}})");
  INFO(message.substr(0, 300));
  CHECK(message.find('\n') == std::string::npos);
  CHECK(message.find('\x1b') == std::string::npos);
  CHECK(message.size() < 400);
  // Nested a million deep: refused before parsing.
  CHECK_THAT(ErrorOf(std::string(500000, '[') + std::string(500000, ']')), Contains("nested"));
  // Larger than the limit.
  CHECK_THAT(ErrorOf(std::string(netqos::enforce::kMaxTenantPolicyBytes + 1, ' ')),
             Contains("limit"));
  // More namespaces than the limit.
  std::string many = R"({"version": 1, "namespaces": {)";
  for (size_t i = 0; i <= netqos::enforce::kMaxTenantPolicyNamespaces; ++i) {
    many += (i ? "," : "") + std::string("\"n") + std::to_string(i) + "\": {}";
  }
  many += "}}";
  CHECK_THAT(ErrorOf(many), Contains("more than the limit"));
}

TEST_CASE("tenant policy: namespace names and annotation keys", "[enforce][tenant]") {
  CHECK(IsNamespaceName("kube-system"));
  CHECK(IsNamespaceName("a"));
  CHECK(IsNamespaceName(std::string(63, 'a')));
  CHECK_FALSE(IsNamespaceName(std::string(64, 'a')));
  CHECK_FALSE(IsNamespaceName(""));
  CHECK_FALSE(IsNamespaceName("-a"));
  CHECK_FALSE(IsNamespaceName("a-"));
  CHECK_FALSE(IsNamespaceName("a.b"));
  CHECK_FALSE(IsNamespaceName("A"));
  for (auto name : netqos::enforce::TenantKeyNames()) {
    auto key = FindTenantKey(name);
    REQUIRE(key.has_value());
    CHECK(netqos::enforce::TenantKeyName(*key) == name);
  }
  CHECK_FALSE(FindTenantKey("netqos.io/other").has_value());
}
