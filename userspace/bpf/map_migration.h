// Migration of pinned maps of another layout version (netqos_cls_v0 -> netqos_cls_v1): entries are
// copied into the current map, values converted member by member by BTF name, so an upgrade
// changes layouts without dropping enforcement. Used by Dataplane::Open and Dataplane::Uninstall.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

struct bpf_map;
struct bpf_object;
struct btf;

namespace netqos::bpf {

// "netqos_cls_v1" -> {"netqos_cls_v", 1}. nullopt unless the name ends in "_v<digits>" (at most 9).
struct VersionedName {
  std::string family;  // the name up to and including "_v"
  uint32_t version = 0;
};
std::optional<VersionedName> ParseVersionedName(std::string_view name);

// How to turn a value of the old layout into one of the new: for every member of the new struct,
// the bytes of the old member with the same name and size; every other byte is zero.
struct ValueConversion {
  struct Field {
    std::string name;
    uint32_t old_offset = 0;
    uint32_t new_offset = 0;
    uint32_t size = 0;
  };
  uint32_t old_size = 0;
  uint32_t new_size = 0;
  std::vector<Field> fields;         // copied
  std::vector<std::string> dropped;  // old members with no same-name, same-size new member
  std::vector<std::string> zeroed;   // new members that start at zero

  // Writes new_size bytes to out from old_size bytes at in.
  void Apply(const void* in, void* out) const;
};

// Plans the conversion between two BTF value types (typedefs and modifiers are looked through).
// Structs and unions are matched by member name; bitfield or anonymous members are refused. Two
// non-composite types convert only when their sizes are equal. `what` names the map in errors.
Result<ValueConversion> PlanValueConversion(const btf* old_btf, uint32_t old_type_id,
                                            const btf* new_btf, uint32_t new_type_id,
                                            const std::string& what);

// One old pinned map whose entries were copied into the current map of its family.
struct MigratedMap {
  std::string old_pin;                      // e.g. /sys/fs/bpf/netqos/netqos_cls_v0
  std::string target;                       // the current map, e.g. netqos_cls_v1
  uint64_t copied = 0;                      // entries written into the target
  uint64_t kept = 0;                        // entries the target already had, left as they were
  std::vector<std::string> dropped_fields;  // old value members not carried over
  std::vector<std::string> zeroed_fields;   // new value members the copies start at zero
};

struct MigrationReport {
  std::vector<MigratedMap> maps;  // empty when no other version was pinned
  bool unpinned = false;          // the old pins have been removed

  bool empty() const { return maps.empty(); }
  // One line per map, key=value, for the app's log.
  std::vector<std::string> Describe() const;
};

// A current (loaded, pinned) map and the object whose BTF declares its value type (in .maps).
struct MigrationTarget {
  bpf_object* obj = nullptr;
  bpf_map* map = nullptr;  // named <family>_v<N>
};

// For each target <family>_v<N>: copies every entry of each map pinned in pin_dir as
// <family>_v<M>, M != N (highest M first), into the target. An entry the target already has (an
// interrupted earlier upgrade) is never overwritten. All old maps are checked before anything is
// copied: one without BTF, with another key size, a value that cannot be planned, or per-CPU where
// the target is not (or the reverse) fails with FailedPrecondition naming the pin, and the old
// pins stay in place either way (UnpinMigratedMaps removes them once nothing uses them).
Result<MigrationReport> MigrateOtherVersions(const std::string& pin_dir,
                                             const std::vector<MigrationTarget>& targets);

// Unpins the old maps of a report and sets report->unpinned. A pin already gone is fine.
Status UnpinMigratedMaps(MigrationReport* report);

// Paths of the pins in pin_dir named <family>_v<M> for the family of one of current_names and
// M != its version, sorted. A missing pin_dir yields none.
Result<std::vector<std::string>> FindOtherVersionPins(
    const std::string& pin_dir, const std::vector<std::string>& current_names);

}  // namespace netqos::bpf
