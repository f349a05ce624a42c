// JSON encoding of the allocation state in Katalyst's checkpoint layout (docs/compatibility.md):
// the field names of AllocationInfo and BandwidthInfo, readable from v0.5.3 and HEAD files alike.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "core/types.h"

namespace netqos::checkpoint {

// Writes the HEAD field set. Meta fields (pod_uid ... pod_type) are omitted when empty or 0, as
// Go's omitempty does; labels and annotations are always written. numa_node uses the Linux list
// format ("0-1,3"), "" for an empty set.
nlohmann::json AllocationToJson(const core::AllocationInfo& info);

// Reads a v0.5.3 or HEAD entry. Unknown fields (ramp_up, owner_pool_name, identifier) are
// ignored; null means "absent", as in Go. A field of the wrong type is an InvalidArgument whose
// message starts with `where` and the field name ("pod_entries.<uid>.<c>.egress: ...").
Result<core::AllocationInfo> AllocationFromJson(const nlohmann::json& j,
                                                const std::string& where = "allocation");

// {uid: {container: AllocationInfo}}.
nlohmann::json PodEntriesToJson(const core::PodEntries& entries);
Result<core::PodEntries> PodEntriesFromJson(const nlohmann::json& j,
                                            const std::string& where = "pod_entries");

// pod_entries read from its text as AllocationToJson and PodEntriesToJson write it, without
// building a document first: with 10,000 containers that document (every entry's members in
// std::maps, then copied out) is most of the time a snapshot takes to load. Also lists the
// entries without a "ns_name" member (as (uid, container)). Returns false, with `entries` and
// `without_netns` unspecified, for anything else (a field of another type, an unknown object or
// array member, malformed JSON): the caller then reads the text the general way, which says
// what is wrong. Meant for snapshots netqos wrote, checked as such on their bytes.
bool PodEntriesFromOwnText(std::string_view text, core::PodEntries* entries,
                           std::vector<std::pair<std::string, std::string>>* without_netns);

// Keys are the Go field names: Capacity, SysReservation, Reservation, Allocatable, Allocated, Free.
nlohmann::json BandwidthToJson(const core::BandwidthInfo& info);
Result<core::BandwidthInfo> BandwidthFromJson(const nlohmann::json& j, const std::string& where);

// Katalyst's machineState: {identifier: {"egress_state", "ingress_state", "pod_entries"}}, where
// a NIC's pod_entries are the entries of `entries` whose nic() is that NIC.
nlohmann::json MachineStateToJson(const core::MachineState& state, const core::PodEntries& entries);
// Type-checks a machineState member. Its keys are resource identifiers, which cannot be split
// back into (netns, name) reliably, and the caller recomputes the machine state anyway, so
// nothing is returned.
Status ValidateMachineStateJson(const nlohmann::json& j, const std::string& where = "machineState");

}  // namespace netqos::checkpoint
