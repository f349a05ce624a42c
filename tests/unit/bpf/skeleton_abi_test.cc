// Skeleton ABI: opens (never loads, so no privilege) each BPF skeleton and checks that the maps the
// programs see have the names and key/value sizes of bpf/netqos_abi.h, which userspace uses.
#include <bpf/libbpf.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "bpf/dataplane.h"
#include "bpf/nic_attach.h"
#include "bpf/veth_attach.h"
#include "netqos_abi.h"
#include "netqos_cgroup.skel.h"
#include "netqos_nic.skel.h"
#include "netqos_pod.skel.h"

namespace {

struct ExpectedMap {
  const char* name;
  uint32_t key_size;
  uint32_t value_size;
  bpf_map_type type;
  uint32_t max_entries;
};

const ExpectedMap kExpected[] = {
    {netqos::bpf::kClassMapName, sizeof(uint64_t), sizeof(netqos_class), BPF_MAP_TYPE_HASH,
     NETQOS_MAX_ENTRIES},
    {netqos::bpf::kCgroupStatsMapName, sizeof(uint64_t), sizeof(netqos_counters),
     BPF_MAP_TYPE_PERCPU_HASH, NETQOS_MAX_ENTRIES},
    {netqos::bpf::kClassStatsMapName, sizeof(uint32_t), sizeof(netqos_counters),
     BPF_MAP_TYPE_PERCPU_HASH, NETQOS_MAX_ENTRIES},
    {netqos::bpf::kSockTagMapName, sizeof(int), sizeof(netqos_sock_tag), BPF_MAP_TYPE_SK_STORAGE,
     0},
    {netqos::bpf::kPodAddrMapName, sizeof(netqos_addr), sizeof(uint64_t), BPF_MAP_TYPE_HASH,
     NETQOS_MAX_ENTRIES},
    {netqos::bpf::kFragMapName, sizeof(netqos_frag_key), sizeof(uint64_t), BPF_MAP_TYPE_LRU_HASH,
     NETQOS_MAX_FRAGS},
    {netqos::bpf::kAggregateMapName, sizeof(uint64_t), sizeof(uint64_t), BPF_MAP_TYPE_HASH,
     NETQOS_MAX_ENTRIES},
    {netqos::bpf::kVethMapName, sizeof(uint32_t), sizeof(netqos_veth), BPF_MAP_TYPE_HASH,
     NETQOS_MAX_ENTRIES},
    {netqos::bpf::kCarrierMapName, sizeof(uint32_t), sizeof(uint64_t), BPF_MAP_TYPE_ARRAY,
     NETQOS_CARRIER_SLOTS},
    {netqos::bpf::kRxOwnerMapName, sizeof(netqos_flow_key), sizeof(uint64_t), BPF_MAP_TYPE_LRU_HASH,
     NETQOS_MAX_RX_OWNERS},
};

void CheckObject(bpf_object* obj) {
  for (const ExpectedMap& e : kExpected) {
    INFO("map " << e.name);
    CHECK(std::strlen(e.name) <= 15);
    bpf_map* map = bpf_object__find_map_by_name(obj, e.name);
    REQUIRE(map != nullptr);
    CHECK(std::string(bpf_map__name(map)) == e.name);
    CHECK(bpf_map__key_size(map) == e.key_size);
    CHECK(bpf_map__value_size(map) == e.value_size);
    CHECK(bpf_map__type(map) == e.type);
    if (e.type != BPF_MAP_TYPE_SK_STORAGE) CHECK(bpf_map__max_entries(map) == e.max_entries);
  }
  bpf_map* map = nullptr;
  bpf_object__for_each_map(map, obj) {
    INFO("map " << bpf_map__name(map));
    CHECK(std::strlen(bpf_map__name(map)) <= 15);
  }
}

}  // namespace

// File names say where the programs attach: the cgroup object holds cgroup hooks only, the NIC
// and pod objects tc programs only.
TEST_CASE("cgroup skeleton maps match the ABI header", "[bpf][abi]") {
  netqos_cgroup* skel = netqos_cgroup__open();
  REQUIRE(skel != nullptr);
  CheckObject(skel->obj);
  CHECK(std::string(bpf_program__section_name(skel->progs.netqos_egress)) == "cgroup_skb/egress");
  CHECK(std::string(bpf_program__section_name(skel->progs.netqos_rx)) == "cgroup_skb/ingress");
  CHECK(std::string(bpf_program__section_name(skel->progs.netqos_sockopt)) == "cgroup/setsockopt");
  CHECK(std::string(bpf_program__section_name(skel->progs.netqos_sockopt_flat)) ==
        "cgroup/setsockopt");
  netqos_cgroup__destroy(skel);
}

TEST_CASE("NIC skeleton maps match the ABI header", "[bpf][abi]") {
  netqos_nic* skel = netqos_nic__open();
  REQUIRE(skel != nullptr);
  CheckObject(skel->obj);
  CHECK(std::string(bpf_program__section_name(skel->progs.netqos_ingress)) == "tc");
  CHECK(std::string(bpf_program__section_name(skel->progs.netqos_nic_tx)) == "tc");
  CHECK(std::string(bpf_program__name(skel->progs.netqos_ingress)) ==
        netqos::bpf::kIngressProgName);
  CHECK(std::string(bpf_program__name(skel->progs.netqos_nic_tx)) == netqos::bpf::kEgressProgName);
  CHECK(skel->rodata->cfg_redirect_to_ifb == 0);
  netqos_nic__destroy(skel);
}

TEST_CASE("CgroupIdOf rejects paths that are not cgroup2 directories", "[bpf]") {
  CHECK(netqos::bpf::CgroupIdOf("/").status().code() == netqos::StatusCode::kInvalidArgument);
  CHECK(!netqos::bpf::CgroupIdOf("/nonexistent/netqos").ok());
}

TEST_CASE("pod veth skeleton maps match the ABI header", "[bpf][abi]") {
  netqos_pod* skel = netqos_pod__open();
  REQUIRE(skel != nullptr);
  CheckObject(skel->obj);
  CHECK(std::string(bpf_program__section_name(skel->progs.netqos_pod_tx)) == "tc");
  CHECK(std::string(bpf_program__section_name(skel->progs.netqos_pod_rx)) == "tc");
  CHECK(std::string(bpf_program__name(skel->progs.netqos_pod_tx)) == netqos::bpf::kPodTxProgName);
  CHECK(std::string(bpf_program__name(skel->progs.netqos_pod_rx)) == netqos::bpf::kPodRxProgName);
  CHECK(skel->rodata->cfg_shape_node_local == 0);
  netqos_pod__destroy(skel);
}
