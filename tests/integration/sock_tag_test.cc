// The class copied into a socket's tag (netqos_sock_tag) against the real kernel: a socket keeps
// its cgroup for life, so the tag may stand in for the class map only until the class map
// changes. Each case changes the class entry of a socket's container after its packets were
// classified (moved to another class, removed, added) and checks that the next packets, through
// the cgroup programs and the NIC's ingress program, take the new entry. They fail when the
// generation is not moved after a class map write. Root only.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <linux/btf.h>
#include <linux/pkt_cls.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "bpf/class_generation.h"
#include "bpf/dataplane.h"
#include "bpf/nic_attach.h"
#include "bpf/pinned_maps.h"
#include "support/bpf_test_run.h"
#include "support/bpffs_fixture.h"
#include "support/cgroup_fixture.h"
#include "support/shared_class_entry.h"

namespace {

using netqos::bpf::Dataplane;
using netqos::bpf::NicPrograms;
using netqos::testing::Ipv4Packet;
using netqos::testing::PrivateBpffs;
using netqos::testing::SharedClassEntry;
using netqos::testing::TestCgroup;

constexpr uint32_t kLoopback = 0x7f000001;
constexpr uint32_t kSenderPriority = 3;  // what the test runs' packets come with

// One byte with room for one fd in SCM_RIGHTS: what SocketIn's child sends and its parent reads.
struct FdMessage {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};

  FdMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
  }
  FdMessage(const FdMessage&) = delete;
  FdMessage& operator=(const FdMessage&) = delete;
};

// A UDP socket bound to loopback, created by a child in `cgroup` (so the socket is that cgroup's
// for life) and handed over with SCM_RIGHTS; -1 on failure.
int SocketIn(const TestCgroup& cgroup) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_DGRAM, 0, pair) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::close(pair[0]);
    try {
      cgroup.AddProcess(0);
    } catch (...) {
      ::_exit(2);
    }
    const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(kLoopback);
    if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) ::_exit(3);
    FdMessage out;
    cmsghdr* cm = CMSG_FIRSTHDR(&out.msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &s, sizeof(int));
    ::_exit(::sendmsg(pair[1], &out.msg, 0) == 1 ? 0 : 4);
  }
  ::close(pair[1]);
  FdMessage in;
  const ssize_t n = ::recvmsg(pair[0], &in.msg, 0);
  ::close(pair[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  cmsghdr* cm = CMSG_FIRSTHDR(&in.msg);
  if (n != 1 || cm == nullptr || cm->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(cm), sizeof(int));
  return fd;
}

uint16_t PortOf(int s) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.sin_port);
}

// One datagram from the socket to itself over loopback: netqos_egress, then netqos_rx, run on
// the socket (whichever process sends: the socket's cgroup is where it was created).
bool SendToSelf(int s) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(kLoopback);
  addr.sin_port = htons(PortOf(s));
  const char out = 1;
  if (::sendto(s, &out, 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 1) return false;
  char in = 0;
  return ::recv(s, &in, 1, 0) == 1;
}

// The NIC ingress program's verdict and priority for a datagram arriving for the socket.
netqos::testing::SkbRunResult ArrivingFor(int ingress, int s) {
  return netqos::testing::RunSkbProgram(
      ingress, Ipv4Packet(IPPROTO_UDP, kLoopback, 6000, kLoopback, PortOf(s)), kSenderPriority);
}

struct Counts {
  uint64_t tx = 0;
  uint64_t rx = 0;
};

Counts ClassCounts(const Dataplane& dp, uint32_t net_class_id) {
  auto c = dp.ClassCounters(net_class_id);
  REQUIRE(c.ok());
  return {c->tx_packets, c->rx_packets};
}

Counts ContainerCounts(const Dataplane& dp, uint64_t cgroup_id) {
  auto c = dp.ContainerCounters(cgroup_id);
  REQUIRE(c.ok());
  return {c->tx_packets, c->rx_packets};
}

// The class map's generation, in slot 0 of the pinned carrier array.
uint64_t Generation(const std::string& pin_dir) {
  const int fd = bpf_obj_get((pin_dir + "/" + netqos::bpf::kCarrierMapName).c_str());
  REQUIRE(fd >= 0);
  auto gen = netqos::bpf::ReadClassGeneration(fd);
  ::close(fd);
  REQUIRE(gen.ok());
  return *gen;
}

// netqos_nic_tx run on a packet whose skb->queue_mapping is `queue_mapping`, as a pod's veth
// leaves a carried packet. BPF_PROG_TEST_RUN refuses a queue_mapping in the skb context it is
// given, so a two-step program sets the field and tail-calls netqos_nic_tx. retval 99: the tail
// call did not happen (the result says nothing about netqos_nic_tx then).
netqos::testing::SkbRunResult CarriedThroughNic(int nic_tx, uint32_t queue_mapping) {
  const int progs = bpf_map_create(BPF_MAP_TYPE_PROG_ARRAY, "nq_test_carry", sizeof(uint32_t),
                                   sizeof(uint32_t), 1, nullptr);
  REQUIRE(progs >= 0);
  const uint32_t key = 0;
  const uint32_t target = static_cast<uint32_t>(nic_tx);
  REQUIRE(bpf_map_update_elem(progs, &key, &target, BPF_ANY) == 0);
  const auto insn = [](uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
    bpf_insn i{};
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
  };
  const bpf_insn prog[] = {
      insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0),  // r6 = skb
      insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, 0, 0, static_cast<int32_t>(queue_mapping)),
      insn(BPF_STX | BPF_MEM | BPF_W, BPF_REG_1, BPF_REG_2,
           static_cast<int16_t>(offsetof(__sk_buff, queue_mapping)), 0),
      insn(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_2, BPF_PSEUDO_MAP_FD, 0, progs),  // r2 = progs
      insn(0, 0, 0, 0, 0),
      insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, 0),  // index 0
      insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_6, 0, 0),
      insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_tail_call),
      insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 99),
      insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
  };
  const int wrapper = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "nq_test_carry", "Dual BSD/GPL", prog,
                                    sizeof(prog) / sizeof(prog[0]), nullptr);
  INFO("bpf_prog_load(nq_test_carry): " << wrapper);
  if (wrapper < 0) ::close(progs);
  REQUIRE(wrapper >= 0);
  auto r = netqos::testing::RunSkbProgram(
      wrapper, Ipv4Packet(IPPROTO_UDP, 0x0a000001, 6000, 0x0a000002, 7000), kSenderPriority);
  ::close(wrapper);
  // Only now: the kernel empties a program array once no user space fd holds it.
  ::close(progs);
  return r;
}

struct Fixture {
  PrivateBpffs bpffs;
  TestCgroup root{"netqos-socktag-" + std::to_string(::getpid())};
  TestCgroup a{root, "a"};
  TestCgroup nested{a, "nested"};
  TestCgroup b{root, "b"};
  std::unique_ptr<Dataplane> dp;
  std::unique_ptr<NicPrograms> nic;

  Fixture() {
    auto opened = Dataplane::Open({.pin_dir = bpffs.PinDir(), .cgroup_path = root.Path()});
    INFO(opened.status().message());
    REQUIRE(opened.ok());
    dp = std::move(opened).value();
    auto loaded = NicPrograms::Load({.pin_dir = bpffs.PinDir()});
    INFO(loaded.status().message());
    REQUIRE(loaded.ok());
    nic = std::move(loaded).value();
  }
};

}  // namespace

TEST_CASE("a socket's packets take its container's class entry as it moves, goes and comes back",
          "[bpf]") {
  Fixture fx;
  const uint64_t id_a = fx.a.Id();
  REQUIRE(fx.dp->SetClass(id_a, SharedClassEntry(0x10070, 81)).ok());
  const int s = SocketIn(fx.a);
  REQUIRE(s >= 0);

  // Classified, and the tag now holds class 81.
  REQUIRE(SendToSelf(s));
  CHECK(ClassCounts(*fx.dp, 81).tx == 1);
  CHECK(ClassCounts(*fx.dp, 81).rx == 1);
  auto in = ArrivingFor(fx.nic->IngressFd(), s);
  CHECK(in.priority == 0x10070u);

  // Moved to another class: the next packets are class 82's, never 81's again.
  const uint64_t gen_before = Generation(fx.bpffs.PinDir());
  REQUIRE(fx.dp->SetClass(id_a, SharedClassEntry(0x10071, 82)).ok());
  CHECK(Generation(fx.bpffs.PinDir()) > gen_before);
  REQUIRE(SendToSelf(s));
  CHECK(ClassCounts(*fx.dp, 82).tx == 1);
  CHECK(ClassCounts(*fx.dp, 82).rx == 1);
  CHECK(ClassCounts(*fx.dp, 81).tx == 1);
  in = ArrivingFor(fx.nic->IngressFd(), s);
  CHECK(in.priority == 0x10071u);

  // The entry removed (no cap, no class): neither counted nor given a class on arrival.
  REQUIRE(fx.dp->ClearClass(id_a).ok());
  REQUIRE(SendToSelf(s));
  CHECK(ContainerCounts(*fx.dp, id_a).tx == 2);
  CHECK(ContainerCounts(*fx.dp, id_a).rx == 2);
  in = ArrivingFor(fx.nic->IngressFd(), s);
  CHECK(in.retval == static_cast<uint32_t>(TC_ACT_OK));
  CHECK(in.priority == kSenderPriority);

  // Given a class again: taken from the next packet.
  REQUIRE(fx.dp->SetClass(id_a, SharedClassEntry(0x10072, 83)).ok());
  in = ArrivingFor(fx.nic->IngressFd(), s);
  CHECK(in.priority == 0x10072u);
  REQUIRE(SendToSelf(s));
  CHECK(ClassCounts(*fx.dp, 83).tx == 1);
  CHECK(ClassCounts(*fx.dp, 83).rx == 1);
  ::close(s);
}

TEST_CASE("a socket of no class is classified from its next packet once its container has one",
          "[bpf]") {
  Fixture fx;
  const uint64_t id_b = fx.b.Id();
  const uint64_t id_a = fx.a.Id();
  const int own = SocketIn(fx.b);
  const int below = SocketIn(fx.nested);  // a process in a cgroup below container a's
  REQUIRE(own >= 0);
  REQUIRE(below >= 0);

  // No class anywhere: the tags say so, and nothing is counted.
  REQUIRE(SendToSelf(own));
  REQUIRE(SendToSelf(below));
  CHECK(ContainerCounts(*fx.dp, id_b).tx == 0);
  CHECK(ContainerCounts(*fx.dp, id_a).tx == 0);
  CHECK(ArrivingFor(fx.nic->IngressFd(), own).priority == kSenderPriority);

  // An unrelated write moves the generation too; still no class for either.
  REQUIRE(fx.dp->SetClass(0x7f00000000000001ull, SharedClassEntry(0x10079, 89)).ok());
  REQUIRE(SendToSelf(own));
  CHECK(ContainerCounts(*fx.dp, id_b).tx == 0);

  // The containers get their classes: the next packets are theirs, the nested socket's as a's.
  REQUIRE(fx.dp->SetClass(id_b, SharedClassEntry(0x10073, 84)).ok());
  REQUIRE(fx.dp->SetClass(id_a, SharedClassEntry(0x10074, 85)).ok());
  CHECK(ArrivingFor(fx.nic->IngressFd(), own).priority == 0x10073u);
  REQUIRE(SendToSelf(own));
  REQUIRE(SendToSelf(below));
  CHECK(ContainerCounts(*fx.dp, id_b).tx == 1);
  CHECK(ContainerCounts(*fx.dp, id_b).rx == 1);
  CHECK(ClassCounts(*fx.dp, 84).tx == 1);
  CHECK(ContainerCounts(*fx.dp, id_a).tx == 1);
  CHECK(ContainerCounts(*fx.dp, id_a).rx == 1);
  CHECK(ContainerCounts(*fx.dp, fx.nested.Id()).tx == 0);
  CHECK(ArrivingFor(fx.nic->IngressFd(), below).priority == 0x10074u);
  ::close(own);
  ::close(below);
}

TEST_CASE("Open moves the class generation off 0 and unpins socket tags of the older layout",
          "[bpf]") {
  PrivateBpffs bpffs;
  TestCgroup root{"netqos-socktag-open-" + std::to_string(::getpid())};
  REQUIRE(::mkdir(bpffs.PinDir().c_str(), 0700) == 0);
  // What a netqosd of the older layout left pinned: sk storage of 8-byte values (a cgroup id).
  // The kernel wants BTF for the key and value of sk storage.
  btf* types = btf__new_empty();
  REQUIRE(types != nullptr);
  const int int_id = btf__add_int(types, "int", sizeof(int), BTF_INT_SIGNED);
  const int u64_id = btf__add_int(types, "unsigned long long", sizeof(uint64_t), 0);
  REQUIRE(int_id > 0);
  REQUIRE(u64_id > 0);
  REQUIRE(btf__load_into_kernel(types) == 0);
  LIBBPF_OPTS(bpf_map_create_opts, opts, .btf_fd = static_cast<__u32>(btf__fd(types)),
              .btf_key_type_id = static_cast<__u32>(int_id),
              .btf_value_type_id = static_cast<__u32>(u64_id), .map_flags = BPF_F_NO_PREALLOC);
  const std::string old_pin = bpffs.PinDir() + "/netqos_sktag_v1";
  const int old_fd = bpf_map_create(BPF_MAP_TYPE_SK_STORAGE, "netqos_sktag_v1", sizeof(int),
                                    sizeof(uint64_t), 0, &opts);
  btf__free(types);
  REQUIRE(old_fd >= 0);
  REQUIRE(bpf_obj_pin(old_fd, old_pin.c_str()) == 0);
  ::close(old_fd);

  auto dp = Dataplane::Open({.pin_dir = bpffs.PinDir(), .cgroup_path = root.Path()});
  INFO(dp.status().message());
  REQUIRE(dp.ok());
  CHECK(Generation(bpffs.PinDir()) != 0);
  CHECK(::access(old_pin.c_str(), F_OK) != 0);
  CHECK(::access((bpffs.PinDir() + "/" + netqos::bpf::kSockTagMapName).c_str(), F_OK) == 0);
}

TEST_CASE("the class generation lives in carrier slot 0, which no carrier may use", "[bpf]") {
  Fixture fx;
  const uint64_t id_b = fx.b.Id();
  const uint64_t opened = Generation(fx.bpffs.PinDir());
  CHECK((opened & NETQOS_CLASS_GEN_BIT) != 0);  // never a cgroup id, never 0
  REQUIRE(fx.dp->SetClass(id_b, SharedClassEntry(0x10075, 86)).ok());
  const uint64_t gen = Generation(fx.bpffs.PinDir());
  CHECK(gen > opened);
  CHECK((gen & NETQOS_CLASS_GEN_BIT) != 0);

  // The carrier calls leave slot 0 alone, and the listing does not show it.
  CHECK_FALSE(fx.dp->SetCarrier(0, id_b).ok());
  CHECK(fx.dp->ClearCarrier(0).ok());
  CHECK(Generation(fx.bpffs.PinDir()) == gen);
  REQUIRE(fx.dp->SetCarrier(5, id_b).ok());
  auto carriers = fx.dp->ListCarriers();
  REQUIRE(carriers.ok());
  REQUIRE(carriers->size() == 1);
  CHECK(carriers->front().first == 5u);
  CHECK(carriers->front().second == id_b);

  // A class entry keyed by the generation (no cgroup has such an id, but a packet that named
  // slot 0 would find it if the NIC's program read the slot as a carrier).
  const int cls_map = bpf_obj_get((fx.bpffs.PinDir() + "/" + netqos::bpf::kClassMapName).c_str());
  REQUIRE(cls_map >= 0);
  const netqos_class decoy = SharedClassEntry(0x10076, 87);
  REQUIRE(bpf_map_update_elem(cls_map, &gen, &decoy, BPF_ANY) == 0);
  ::close(cls_map);
  REQUIRE(Generation(fx.bpffs.PinDir()) == gen);

  // A real slot carries its container's class: the harness reaches netqos_nic_tx's carrier path.
  auto carried = CarriedThroughNic(fx.nic->EgressFd(), NETQOS_CARRIER_FLAG | 5);
  REQUIRE(carried.err == 0);
  REQUIRE(carried.retval == static_cast<uint32_t>(TC_ACT_OK));
  CHECK(carried.priority == 0x10075u);
  // Slot 0 carries nothing: the packet is unclassified (priority 0), not the decoy's.
  auto zero = CarriedThroughNic(fx.nic->EgressFd(), NETQOS_CARRIER_FLAG | NETQOS_CLASS_GEN_SLOT);
  REQUIRE(zero.err == 0);
  REQUIRE(zero.retval == static_cast<uint32_t>(TC_ACT_OK));
  CHECK(zero.priority == 0u);
}
