// The class map's generation, in slot 0 of the carrier array (NETQOS_CLASS_GEN_SLOT): moved after
// every write to the class map, so that the BPF programs stop using what they copied from it into
// sockets' tags.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace netqos::bpf {

// Moves the generation in the carrier array fd to a value it has never held: the larger of its
// value + 1 and CLOCK_MONOTONIC in ns, with NETQOS_CLASS_GEN_BIT set (so it is never 0, which
// means "not yet" to the programs, and never a cgroup id, should a packet name slot 0). The clock
// makes two writers safe without a lock (two Dataplanes of one pin dir, or a netqosd restarting
// while the old one still writes): a writer reads the clock after its own class map write, so its
// value is above any generation a program read before that write, even when the other writer read
// the same old value. Call it after the class map write it covers, never before.
Status BumpClassGeneration(int fd);

// The generation's value (0 before the first bump).
Result<uint64_t> ReadClassGeneration(int fd);

}  // namespace netqos::bpf
