// The checksum Katalyst stores in its network_plugin_state checkpoint, recomputed from the parsed
// file so that netqos can verify a Katalyst-written checkpoint (docs/compatibility.md, row 8).
//
// Katalyst uses the kubelet's checkpoint checksum: FNV-1a 32-bit over a go-spew rendering of its
// in-memory checkpoint (a pointer to state.NetworkPluginCheckpoint, Checksum field zeroed). That
// rendering is a function of the Go value json.Unmarshal builds from the file, printed with Go
// type names, so it is reproduced here from the JSON document by mirroring both:
//   * what Go decodes: a missing top-level map stays the empty map Katalyst decodes into, an
//     explicit null makes it nil (printed differently); missing fields are zero values; a
//     numa_node string becomes a machine.CPUSet ("nil" or a missing member: the uninitialised
//     set); a value Go would refuse (a negative or non-integer number, a uint32 overflow, a
//     wrong JSON type, null for numa_node) is an error, because Katalyst refuses that file too;
//   * how go-spew prints it ("%#v", sorted keys, methods disabled): "(type)value" for struct
//     fields, raw strings without quotes or escaping, map keys and values without types, a
//     non-nil pointer inside a map as "<*>" and its struct, a nil map or pointer as "<nil>";
//     and one quirk: after a nil pointer that is the last value of a map, the next struct field
//     is printed without its "(type)" (go-spew leaves its skip-the-type flag set).
// The Go types changed between Katalyst releases, and each layout hashes identical JSON
// differently; a file verifies if its checksum matches either layout.
//
// Not mirrored (a Katalyst-written file never has them, and a file that has them fails to verify
// or verifies as netqos reads it): Go's case-insensitive field-name matching, the merging of a
// repeated member, and JSON escapes inside numa_node (Go parses that string undecoded).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "common/named_enum.h"
#include "common/status.h"

namespace netqos::checkpoint {

enum class KatalystLayout {
  // Katalyst v0.4.0 to v0.5.20: AllocationInfo has the meta fields itself, and ramp_up.
  kV053,
  // v0.5.21 onwards (current at v0.5.47): commonstate.AllocationMeta embedded; qosLevel,
  // identifier, ns_name, net_class_id. Every other hashed type is the same in all releases.
  kHead,
};
// --katalyst-checkpoint-layout's spellings.
inline constexpr Choices<KatalystLayout, 2> kKatalystLayoutNames{{
    {"v0.5.3", KatalystLayout::kV053},
    {"head", KatalystLayout::kHead},
}};

// "v0.5.3" or "HEAD", for logs.
const char* KatalystLayoutName(KatalystLayout layout);
// The spelling of --katalyst-checkpoint-layout and of a snapshot's netqos.katalyst_layout:
// "v0.5.3" or "head".
const char* KatalystLayoutFlagValue(KatalystLayout layout);

// The go-spew text Katalyst hashes for this document (the "checksum" member is rendered as 0).
// InvalidArgument, naming the member, when Go's json.Unmarshal would refuse the document.
Result<std::string> KatalystSpewRendering(const nlohmann::json& doc, KatalystLayout layout);

uint32_t Fnv1a32(std::string_view data);

// Fnv1a32 of KatalystSpewRendering: compare with the stored "checksum".
Result<uint32_t> KatalystChecksum(const nlohmann::json& doc, KatalystLayout layout);

}  // namespace netqos::checkpoint
