// JSON encoding of the allocation state in Katalyst's checkpoint layout (docs/compatibility.md):
// the field names of AllocationInfo and BandwidthInfo, readable from v0.5.3 and HEAD files alike.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

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
