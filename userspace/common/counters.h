// The counters netqos reports, one struct per concept, shared by every layer that holds them (the
// BPF maps' per-CPU sums, the HTB classes' statistics, the service view, netqosctl). Each struct
// comes with the list of its fields, so that what is done to every field (sums, the admin API
// message, netqosctl's JSON) is written once instead of once per field. Adding a counter: the
// member, its line in the list, and the field of the same name in the admin API's message (plus
// where it comes from: bpf/netqos_abi.h, or the HTB class reader); docs/metrics.md has the rest.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace netqos {

// What a container (or a net class) sent and received since its class map entry was created:
// bpf/netqos_abi.h's netqos_counters, summed over CPUs.
struct TrafficCounters {
  uint64_t tx_bytes = 0;  // egress, counted by the cgroup egress program
  uint64_t tx_packets = 0;
  uint64_t rx_bytes = 0;  // ingress, counted by the cgroup ingress program
  uint64_t rx_packets = 0;
  // Packets netqos's shaping dropped. In the maps, what the NIC's EDT program dropped beyond its
  // horizon (the cgroup programs never drop); in a report (service/, the admin API) the daemon
  // adds the own HTB leaves' queue drops, both directions.
  uint64_t drops = 0;

  bool operator==(const TrafficCounters&) const = default;
};

// An HTB class's counters as the kernel keeps them (`tc -s class show`), since the class was
// created (a re-created class starts from zero).
struct QueueCounters {
  uint64_t bytes = 0;            // dequeued to the device: frames, without preamble and FCS
  uint64_t packets = 0;          // dequeued packets (a GSO packet counts as its segments)
  uint64_t drops = 0;            // refused because the queue was full: the shaping's losses
  uint64_t overlimits = 0;       // times the class was over its rate and ceil when asked to send
  uint64_t backlog_bytes = 0;    // queued now (leaves only)
  uint64_t backlog_packets = 0;  // queued now (leaves only)

  bool operator==(const QueueCounters&) const = default;
};

// One member of a counters struct and its name: the field of the admin API's message of the same
// concept (proto/netqos/admin/v1/admin.proto) and netqosctl's JSON key.
template <typename Counters>
struct CounterField {
  std::string_view name;
  uint64_t Counters::*member;
};

// CounterFields<C>::kAll: every member of C, once, in declaration order (the static_asserts
// below check the count, tests/unit/common/counters_test.cc the rest).
template <typename Counters>
struct CounterFields;

template <>
struct CounterFields<TrafficCounters> {
  using C = TrafficCounters;
  static constexpr auto kAll = std::to_array<CounterField<C>>({
      {"tx_bytes", &C::tx_bytes},
      {"tx_packets", &C::tx_packets},
      {"rx_bytes", &C::rx_bytes},
      {"rx_packets", &C::rx_packets},
      {"drops", &C::drops},
  });
};

template <>
struct CounterFields<QueueCounters> {
  using C = QueueCounters;
  static constexpr auto kAll = std::to_array<CounterField<C>>({
      {"bytes", &C::bytes},
      {"packets", &C::packets},
      {"drops", &C::drops},
      {"overlimits", &C::overlimits},
      {"backlog_bytes", &C::backlog_bytes},
      {"backlog_packets", &C::backlog_packets},
  });
};

// A member added to a struct but not to its list fails here.
static_assert(CounterFields<TrafficCounters>::kAll.size() * sizeof(uint64_t) ==
                  sizeof(TrafficCounters),
              "every member of TrafficCounters has its line in CounterFields<TrafficCounters>");
static_assert(CounterFields<QueueCounters>::kAll.size() * sizeof(uint64_t) == sizeof(QueueCounters),
              "every member of QueueCounters has its line in CounterFields<QueueCounters>");

// sum += add, field by field.
template <typename Counters>
void AddCounters(Counters& sum, const Counters& add) {
  for (const auto& f : CounterFields<Counters>::kAll) sum.*f.member += add.*f.member;
}

}  // namespace netqos
