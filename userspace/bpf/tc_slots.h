// netqos's places on a device's clsact qdisc, shared by the NIC programs (nic_attach.h) and the
// pod veth programs (veth_attach.h): one cls_bpf filter per direction at a fixed (pref, handle),
// holding a program of a known name, and, one pref above it, a u32 match-all rule whose
// act_mirred redirects what the program left without a verdict (TC_ACT_UNSPEC) to an IFB.
// Everything here works in the calling thread's network namespace and refuses to touch a filter
// netqos did not put there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "os/libnl_ptr.h"

struct nl_sock;

namespace netqos::bpf::tc {

// The program's filter: `tc filter show dev X ingress` prints "pref 49374 bpf chain 0 handle
// 0x6e71 <prog>:[<id>] direct-action". The handle spells "nq". The pref is high on purpose: lower
// prefs run first, so every other filter (Cilium uses pref 1, tc's auto-assigned prefs are 0xc000
// and below) sees the packet before ours, and our verdict is the last word. tc keeps the pref in
// 16 bits; libbpf rejects larger values.
inline constexpr uint32_t kHandle = 0x6e71;
inline constexpr uint32_t kPriority = 0xc0de;
// The redirect rule, one pref after the program: "pref 49375 u32 chain 0 fh 800::e71 ... action
// order 1: mirred (Egress Redirect to device nqifb7) stolen". Its node id is kHandle's low 12 bits
// (the most a u32 node id has); the hash table part is the kernel's (800: unless other u32 filters
// share the clsact qdisc).
inline constexpr uint32_t kRedirectPriority = kPriority + 1;
inline constexpr uint32_t kRedirectU32Node = kHandle & 0xfff;

enum class Direction { kIngress, kEgress };

// One direction of a device's clsact qdisc and the name of the program netqos keeps there.
struct Side {
  Direction direction;
  const char* prog;
};

const char* DirectionText(Direction d);  // "ingress", "egress" (as tc says it)

// "ifindex 7 (eth0)" when the device exists in the calling thread's namespace; NotFound if not.
Result<std::string> DescribeLink(int ifindex, const char* op);

// Whether our slot holds side.prog (false when it is empty or the device has no clsact qdisc);
// FailedPrecondition naming the intruder when another program holds it.
Result<bool> SlotIsOurs(int ifindex, const std::string& link, const char* op, const Side& side);
// Creates the clsact qdisc if missing and attaches prog_fd at our slot of `side`, replacing our
// own program there atomically.
Status AttachProgram(int ifindex, const std::string& link, const Side& side, int prog_fd,
                     const char* op);
// Removes our program; Ok when it is not there or the device is gone.
Status DetachProgram(int ifindex, const Side& side, const char* op);
// Whether our program is attached (a foreign program there is false); NotFound without device.
Result<bool> ProgramAttached(int ifindex, const Side& side, const char* op);
// The id of our program there; 0 when it is not attached (or a foreign one holds the slot).
Result<uint32_t> AttachedProgramId(int ifindex, const Side& side, const char* op);

// A netlink route socket for the redirect rule's calls.
Result<os::NlSockPtr> Connect();

// What the redirect's pref of one direction holds.
struct RedirectSlot {
  bool present = false;            // some u32 filter, all of it ours (the whole pref goes)
  std::optional<uint32_t> handle;  // our rule's full handle
  int target = 0;                  // where our rule's mirred egress redirect sends; 0 if none
};

// Reads the redirect's pref; FailedPrecondition naming what is there if it is not all ours.
Result<RedirectSlot> ReadRedirect(nl_sock* sock, int ifindex, Direction d, const std::string& link,
                                  const char* op);
// Points our rule at `target`: replaces it in place (atomically for the packets) when `existing`
// is its handle, creates it otherwise.
Status PutRedirect(nl_sock* sock, int ifindex, Direction d, const std::string& link, int target,
                   std::optional<uint32_t> existing);
// Removes the whole u32 filter at the redirect's pref (its rule and hash table).
Status DeleteRedirect(nl_sock* sock, int ifindex, Direction d, const std::string& link);

}  // namespace netqos::bpf::tc
