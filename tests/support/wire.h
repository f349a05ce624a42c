// A minimal protobuf wire-format reader for byte-level assertions (nil vs empty hint lists):
// walks the top-level fields of a message without any schema.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netqos::testing {

struct WireField {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  uint64_t varint = 0;  // wire type 0
  std::string bytes;    // wire type 2
};

inline bool ReadVarint(const std::string& s, size_t* pos, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *pos < s.size(); shift += 7) {
    auto b = static_cast<uint8_t>(s[(*pos)++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

// Returns the top-level fields in order; nullopt if the bytes are not valid wire format.
inline std::optional<std::vector<WireField>> ParseWire(const std::string& s) {
  std::vector<WireField> out;
  size_t pos = 0;
  while (pos < s.size()) {
    uint64_t key = 0;
    if (!ReadVarint(s, &pos, &key)) return std::nullopt;
    WireField f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire_type = static_cast<uint32_t>(key & 7);
    if (f.wire_type == 0) {
      if (!ReadVarint(s, &pos, &f.varint)) return std::nullopt;
    } else if (f.wire_type == 2) {
      uint64_t len = 0;
      if (!ReadVarint(s, &pos, &len) || pos + len > s.size()) return std::nullopt;
      f.bytes = s.substr(pos, len);
      pos += len;
    } else if (f.wire_type == 1) {
      if (pos + 8 > s.size()) return std::nullopt;
      pos += 8;
    } else if (f.wire_type == 5) {
      if (pos + 4 > s.size()) return std::nullopt;
      pos += 4;
    } else {
      return std::nullopt;
    }
    out.push_back(std::move(f));
  }
  return out;
}

// For a map field encoded as repeated entries {1: key, 2: value}: finds the entry with `key` and
// returns whether its value field is present and, if so, its bytes.
struct MapEntryView {
  bool found = false;
  bool value_present = false;
  std::string value_bytes;
};

inline MapEntryView FindMapEntry(const std::string& message, uint32_t field,
                                 const std::string& key) {
  MapEntryView view;
  auto fields = ParseWire(message);
  if (!fields) return view;
  for (const auto& f : *fields) {
    if (f.number != field || f.wire_type != 2) continue;
    auto entry = ParseWire(f.bytes);
    if (!entry) continue;
    bool key_match = false;
    MapEntryView candidate;
    for (const auto& ef : *entry) {
      if (ef.number == 1 && ef.bytes == key) key_match = true;
      if (ef.number == 2) {
        candidate.value_present = true;
        candidate.value_bytes = ef.bytes;
      }
    }
    if (key_match) {
      candidate.found = true;
      return candidate;
    }
  }
  return view;
}

}  // namespace netqos::testing
