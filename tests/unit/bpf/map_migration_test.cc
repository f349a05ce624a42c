// Map migration planning without the kernel: versioned names, and value conversions between a
// hand-built BTF "old layout" and the real netqos_class of the egress skeleton (opened, not
// loaded).
#include "bpf/map_migration.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "bpf/dataplane.h"
#include "netqos_abi.h"
#include "netqos_cgroup.skel.h"

namespace {

using netqos::bpf::ParseVersionedName;
using netqos::bpf::PlanValueConversion;

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Owns a BTF built by hand.
struct OwnedBtf {
  btf* b = btf__new_empty();
  ~OwnedBtf() { btf__free(b); }
};

}  // namespace

TEST_CASE("ParseVersionedName splits family and version", "[bpf]") {
  auto v = ParseVersionedName("netqos_cls_v1");
  REQUIRE(v.has_value());
  CHECK(v->family == "netqos_cls_v");
  CHECK(v->version == 1u);
  v = ParseVersionedName("netqos_cgst_v12");
  REQUIRE(v.has_value());
  CHECK(v->family == "netqos_cgst_v");
  CHECK(v->version == 12u);
  CHECK(!ParseVersionedName("netqos_cls").has_value());
  CHECK(!ParseVersionedName("netqos_cls_v").has_value());
  CHECK(!ParseVersionedName("netqos_cls_vx").has_value());
  CHECK(!ParseVersionedName("link_egress").has_value());
  CHECK(!ParseVersionedName("netqos_cls_v1234567890").has_value());
}

TEST_CASE("the ABI map names are versioned, one family each", "[bpf]") {
  std::vector<std::string> families;
  for (const char* name : {netqos::bpf::kClassMapName, netqos::bpf::kCgroupStatsMapName,
                           netqos::bpf::kClassStatsMapName, netqos::bpf::kSockTagMapName}) {
    INFO(name);
    auto v = ParseVersionedName(name);
    REQUIRE(v.has_value());
    CHECK(!Contains(families, v->family));
    families.push_back(v->family);
  }
}

TEST_CASE("a value converts to netqos_class member by member, by name", "[bpf]") {
  netqos_cgroup* skel = netqos_cgroup__open();
  REQUIRE(skel != nullptr);
  const btf* new_btf = bpf_object__btf(skel->obj);
  REQUIRE(new_btf != nullptr);
  const uint32_t new_type = bpf_map__btf_value_type_id(skel->maps.NETQOS_MAP_CLASS);
  REQUIRE(new_type != 0);

  // struct old { u32 net_class_id; u32 priority; u32 legacy; u16 flags; } (other order, a member
  // the new layout lacks, and one whose size changed), behind a typedef.
  OwnedBtf old;
  const int u32 = btf__add_int(old.b, "unsigned int", 4, 0);
  const int u16 = btf__add_int(old.b, "unsigned short", 2, 0);
  const int st = btf__add_struct(old.b, "old_class", 16);
  REQUIRE(btf__add_field(old.b, "net_class_id", u32, 0, 0) == 0);
  REQUIRE(btf__add_field(old.b, "priority", u32, 32, 0) == 0);
  REQUIRE(btf__add_field(old.b, "legacy", u32, 64, 0) == 0);
  REQUIRE(btf__add_field(old.b, "flags", u16, 96, 0) == 0);
  const int td = btf__add_typedef(old.b, "old_class_t", st);
  REQUIRE(td > 0);

  auto conv = PlanValueConversion(old.b, static_cast<uint32_t>(td), new_btf, new_type, "test");
  INFO((conv.ok() ? std::string() : conv.status().message()));
  REQUIRE(conv.ok());
  CHECK(conv->old_size == 16u);
  CHECK(conv->new_size == sizeof(netqos_class));
  CHECK(conv->fields.size() == 2);
  CHECK(Contains(conv->dropped, "legacy"));
  CHECK(Contains(conv->dropped, "flags"));  // u16 -> u32: not the same member any more
  CHECK(Contains(conv->zeroed, "qos_level"));
  CHECK(Contains(conv->zeroed, "slot"));
  CHECK(Contains(conv->zeroed, "flags"));

  const uint32_t in[4] = {7, 0x10010, 0xdead, 0xffff};
  netqos_class out;
  std::memset(&out, 0xab, sizeof(out));
  conv->Apply(in, &out);
  CHECK(out.priority == 0x10010u);
  CHECK(out.net_class_id == 7u);
  CHECK(out.qos_level == 0);
  CHECK(out.flags == 0u);
  CHECK(out.slot == 0u);
  netqos_cgroup__destroy(skel);
}

TEST_CASE("bitfields and struct-to-scalar conversions are refused", "[bpf]") {
  OwnedBtf b;
  const int u32 = btf__add_int(b.b, "unsigned int", 4, 0);
  const int with_bits = btf__add_struct(b.b, "bits", 4);
  REQUIRE(btf__add_field(b.b, "lo", u32, 0, 4) == 0);
  const int plain = btf__add_struct(b.b, "plain", 4);
  REQUIRE(btf__add_field(b.b, "lo", u32, 0, 0) == 0);

  auto bits = PlanValueConversion(b.b, static_cast<uint32_t>(with_bits), b.b,
                                  static_cast<uint32_t>(plain), "m");
  REQUIRE(!bits.ok());
  CHECK(bits.status().code() == netqos::StatusCode::kFailedPrecondition);
  CHECK(bits.status().message().find("bitfield") != std::string::npos);

  auto scalar =
      PlanValueConversion(b.b, static_cast<uint32_t>(u32), b.b, static_cast<uint32_t>(plain), "m");
  CHECK(!scalar.ok());
  // Two scalars of one size copy whole.
  auto same =
      PlanValueConversion(b.b, static_cast<uint32_t>(u32), b.b, static_cast<uint32_t>(u32), "m");
  REQUIRE(same.ok());
  const uint32_t in = 0x12345678;
  uint32_t out = 0;
  same->Apply(&in, &out);
  CHECK(out == in);
}
