#include "checkpoint/katalyst_checksum.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

namespace netqos::checkpoint {

using nlohmann::json;

namespace {

// A numa_node list naming more ids than this is refused: Go would build the whole set (a range
// such as "0-4000000000" exhausts Katalyst's memory), and no machine has that many NUMA nodes.
constexpr uint64_t kMaxCpuSetElements = uint64_t{1} << 16;

// What a JSON member is, as far as Go's decoder is concerned.
enum class Member { kMissing, kNull, kPresent };

Member Classify(const json& obj, const char* key, const json** out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Member::kMissing;
  if (it->is_null()) return Member::kNull;
  *out = &*it;
  return Member::kPresent;
}

// Where the rendering goes: kept as text, or only hashed (a large checkpoint's rendering is
// larger than the file, and the checksum needs none of it kept).
class Sink {
 public:
  explicit Sink(bool keep_text) : keep_text_(keep_text) {}
  Sink& operator+=(std::string_view s) {
    if (keep_text_) {
      text_ += s;
    } else {
      for (char c : s) hash_ = (hash_ ^ static_cast<unsigned char>(c)) * 16777619U;
    }
    return *this;
  }
  Sink& operator+=(char c) { return *this += std::string_view(&c, 1); }
  std::string& text() { return text_; }
  uint32_t hash() const { return keep_text_ ? Fnv1a32(text_) : hash_; }

 private:
  const bool keep_text_;
  std::string text_;
  uint32_t hash_ = 2166136261U;
};

// A JSON integer Go decodes into an unsigned field. A parsed document holds every non-negative
// integer as unsigned; one built in code may hold it as signed.
bool IsUnsigned(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

class Renderer {
 public:
  Renderer(KatalystLayout layout, bool keep_text) : layout_(layout), out_(keep_text) {}

  Status Checkpoint(const json& doc) {
    if (!doc.is_object()) return InvalidArgument("checkpoint: expected an object");
    out_ += "(*state.NetworkPluginCheckpoint){PolicyName:(string)";
    NETQOS_RETURN_IF_ERROR(StringValue(doc, "policyName", "policyName"));
    // Katalyst decodes into a checkpoint whose two maps already exist (empty): a missing member
    // leaves that empty map, only an explicit null makes it nil.
    out_ += " MachineState:(state.NICMap)";
    NETQOS_RETURN_IF_ERROR(TopLevelMap(doc, "machineState", &Renderer::NicMap));
    out_ += " PodEntries:";
    FieldType("state.PodEntries");
    NETQOS_RETURN_IF_ERROR(TopLevelMap(doc, "pod_entries", &Renderer::PodEntries));
    // Hashed as 0, but it must still decode as a uint64.
    const json* sum = nullptr;
    if (Classify(doc, "checksum", &sum) == Member::kPresent && !IsUnsigned(*sum)) {
      return InvalidArgument("checksum: expected an unsigned integer");
    }
    out_ += " Checksum:";
    FieldType("checksum.Checksum");
    out_ += "0}";
    return Status::Ok();
  }

  Sink& sink() { return out_; }

 private:
  using MapBody = Status (Renderer::*)(const json&, const std::string&);

  Status TopLevelMap(const json& doc, const char* key, MapBody body) {
    const json* v = nullptr;
    switch (Classify(doc, key, &v)) {
      case Member::kMissing:
        out_ += "map[]";
        return Status::Ok();
      case Member::kNull:
        out_ += "<nil>";
        return Status::Ok();
      case Member::kPresent:
        break;
    }
    return (this->*body)(*v, key);
  }

  // go-spew's "ignore the next type" flag. A map sets it before formatting each key and each
  // value, and formatting a value clears it, except a nil pointer: "<nil>" returns early and
  // leaves it set. So when a map's last value is a nil pointer, the next struct field after
  // that map (or after the structs and maps that close with it) is printed without its type:
  // "... eth1:<nil>] PodEntries:map[...]", "... c:<nil>]] Checksum:0". Only the checkpoint's
  // PodEntries and Checksum can follow such a map; every other field's type is written as is.
  void FieldType(const char* type) {
    if (!ignore_type_) {
      out_ += '(';
      out_ += type;
      out_ += ')';
    }
    ignore_type_ = false;
  }

  static Status Expect(bool ok, const std::string& where, const char* what) {
    if (ok) return Status::Ok();
    return InvalidArgument(where + ": expected " + what);
  }

  // map[k:v k:v] with byte-wise sorted keys (nlohmann's object order is std::string's <, the
  // same as Go's string comparison). Keys and values carry no type inside a map.
  template <typename Fn>
  Status Map(const json& j, const std::string& where, Fn&& value) {
    NETQOS_RETURN_IF_ERROR(Expect(j.is_object(), where, "an object"));
    out_ += "map[";
    bool first = true;
    for (const auto& [key, v] : j.items()) {
      if (!first) out_ += ' ';
      first = false;
      out_ += key;
      out_ += ':';
      ignore_type_ = false;  // formatting the key consumed it; only a nil pointer value sets it
      NETQOS_RETURN_IF_ERROR(value(v, where + "." + key));
    }
    out_ += ']';
    return Status::Ok();
  }

  // A nil pointer or map inside a map prints as <nil>; a pointer to a struct as <*>{...}.
  template <typename Fn>
  Status PointerInMap(const json& v, const std::string& where, Fn&& body) {
    if (v.is_null()) {
      out_ += "<nil>";
      ignore_type_ = true;
      return Status::Ok();
    }
    NETQOS_RETURN_IF_ERROR(Expect(v.is_object(), where, "an object"));
    out_ += "<*>";
    return body(v, where);
  }

  Status NicMap(const json& j, const std::string& where) {
    return Map(j, where, [this](const json& v, const std::string& w) {
      return PointerInMap(v, w, [this](const json& nic, const std::string& nw) {
        out_ += "{EgressState:(state.BandwidthInfo)";
        NETQOS_RETURN_IF_ERROR(Bandwidth(nic, "egress_state", nw));
        out_ += " IngressState:(state.BandwidthInfo)";
        NETQOS_RETURN_IF_ERROR(Bandwidth(nic, "ingress_state", nw));
        out_ += " PodEntries:(state.PodEntries)";
        NETQOS_RETURN_IF_ERROR(NilableMap(nic, "pod_entries", nw, &Renderer::PodEntries));
        out_ += '}';
        return Status::Ok();
      });
    });
  }

  Status PodEntries(const json& j, const std::string& where) {
    return Map(j, where, [this](const json& pod, const std::string& w) {
      if (pod.is_null()) {
        out_ += "<nil>";
        return Status::Ok();
      }
      return Map(pod, w, [this](const json& v, const std::string& cw) {
        return PointerInMap(
            v, cw, [this](const json& a, const std::string& aw) { return Allocation(a, aw); });
      });
    });
  }

  // A member of a freshly allocated struct: missing and null both leave the nil map.
  Status NilableMap(const json& obj, const char* key, const std::string& where, MapBody body) {
    const json* v = nullptr;
    if (Classify(obj, key, &v) != Member::kPresent) {
      out_ += "<nil>";
      return Status::Ok();
    }
    return (this->*body)(*v, where + "." + key);
  }

  Status Bandwidth(const json& nic, const char* key, const std::string& where) {
    static constexpr const char* kFields[] = {"Capacity",    "SysReservation", "Reservation",
                                              "Allocatable", "Allocated",      "Free"};
    const std::string w = where + "." + key;
    const json* bw = nullptr;
    const bool present = Classify(nic, key, &bw) == Member::kPresent;
    if (present) NETQOS_RETURN_IF_ERROR(Expect(bw->is_object(), w, "an object"));
    out_ += '{';
    for (const char* field : kFields) {
      if (field != kFields[0]) out_ += ' ';
      out_ += field;
      out_ += ":(uint32)";
      if (present) {
        NETQOS_RETURN_IF_ERROR(UnsignedValue(*bw, field, w, std::numeric_limits<uint32_t>::max()));
      } else {
        out_ += '0';
      }
    }
    out_ += '}';
    return Status::Ok();
  }

  // The fields both layouts start with (v0.5.3's AllocationInfo, HEAD's AllocationMeta).
  Status Identity(const json& a, const std::string& where) {
    NETQOS_RETURN_IF_ERROR(StringField(a, "PodUid", "pod_uid", where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " PodNamespace", "pod_namespace", where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " PodName", "pod_name", where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " ContainerName", "container_name", where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " ContainerType", "container_type", where));
    out_ += " ContainerIndex:(uint64)";
    return UnsignedValue(a, "container_index", where, std::numeric_limits<uint64_t>::max());
  }

  Status Allocation(const json& a, const std::string& where) {
    if (layout_ == KatalystLayout::kV053) {
      out_ += '{';
      NETQOS_RETURN_IF_ERROR(Identity(a, where));
      out_ += " RampUp:(bool)";
      NETQOS_RETURN_IF_ERROR(BoolValue(a, "ramp_up", where));
      NETQOS_RETURN_IF_ERROR(StringField(a, " PodRole", "pod_role", where));
      NETQOS_RETURN_IF_ERROR(StringField(a, " PodType", "pod_type", where));
      NETQOS_RETURN_IF_ERROR(Bandwidths(a, where));
      NETQOS_RETURN_IF_ERROR(StringField(a, " IfName", "if_name", where));
      NETQOS_RETURN_IF_ERROR(NumaNodes(a, where));
      NETQOS_RETURN_IF_ERROR(StringMapField(a, " Labels", "labels", where));
      NETQOS_RETURN_IF_ERROR(StringMapField(a, " Annotations", "annotations", where));
      out_ += '}';
      return Status::Ok();
    }
    // The embedded struct is one field named after its type; encoding/json flattens its members.
    out_ += "{AllocationMeta:(commonstate.AllocationMeta){";
    NETQOS_RETURN_IF_ERROR(Identity(a, where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " OwnerPoolName", "owner_pool_name", where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " PodRole", "pod_role", where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " PodType", "pod_type", where));
    NETQOS_RETURN_IF_ERROR(StringMapField(a, " Labels", "labels", where));
    NETQOS_RETURN_IF_ERROR(StringMapField(a, " Annotations", "annotations", where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " QoSLevel", "qosLevel", where));
    out_ += '}';
    NETQOS_RETURN_IF_ERROR(Bandwidths(a, where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " Identifier", "identifier", where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " NSName", "ns_name", where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " IfName", "if_name", where));
    NETQOS_RETURN_IF_ERROR(NumaNodes(a, where));
    NETQOS_RETURN_IF_ERROR(StringField(a, " NetClassID", "net_class_id", where));
    out_ += '}';
    return Status::Ok();
  }

  Status Bandwidths(const json& a, const std::string& where) {
    out_ += " Egress:(uint32)";
    NETQOS_RETURN_IF_ERROR(UnsignedValue(a, "egress", where, std::numeric_limits<uint32_t>::max()));
    out_ += " Ingress:(uint32)";
    return UnsignedValue(a, "ingress", where, std::numeric_limits<uint32_t>::max());
  }

  // `label` is " Name" (or "Name" for a struct's first field).
  Status StringField(const json& obj, const char* label, const char* key,
                     const std::string& where) {
    out_ += label;
    out_ += ":(string)";
    return StringValue(obj, key, where + "." + key);
  }

  // go-spew's %#v writes a string's bytes as they are: no quotes, no escaping.
  Status StringValue(const json& obj, const char* key, const std::string& where) {
    const json* v = nullptr;
    if (Classify(obj, key, &v) != Member::kPresent) return Status::Ok();
    NETQOS_RETURN_IF_ERROR(Expect(v->is_string(), where, "a string"));
    out_ += v->get_ref<const std::string&>();
    return Status::Ok();
  }

  Status UnsignedValue(const json& obj, const char* key, const std::string& where, uint64_t max) {
    const json* v = nullptr;
    if (Classify(obj, key, &v) != Member::kPresent) {
      out_ += '0';
      return Status::Ok();
    }
    const std::string w = where + "." + key;
    NETQOS_RETURN_IF_ERROR(Expect(IsUnsigned(*v), w, "an unsigned integer"));
    const uint64_t n = v->get<uint64_t>();
    NETQOS_RETURN_IF_ERROR(Expect(n <= max, w, "a value in range"));
    out_ += std::to_string(n);
    return Status::Ok();
  }

  Status BoolValue(const json& obj, const char* key, const std::string& where) {
    const json* v = nullptr;
    bool b = false;
    if (Classify(obj, key, &v) == Member::kPresent) {
      NETQOS_RETURN_IF_ERROR(Expect(v->is_boolean(), where + "." + key, "a boolean"));
      b = v->get<bool>();
    }
    out_ += b ? "true" : "false";
    return Status::Ok();
  }

  // map[string]string: missing or null is a nil map; a null element decodes to "".
  Status StringMapField(const json& obj, const char* label, const char* key,
                        const std::string& where) {
    out_ += label;
    out_ += ":(map[string]string)";
    const json* v = nullptr;
    if (Classify(obj, key, &v) != Member::kPresent) {
      out_ += "<nil>";
      return Status::Ok();
    }
    return Map(*v, where + "." + key, [this](const json& e, const std::string& w) {
      if (e.is_null()) return Status::Ok();
      NETQOS_RETURN_IF_ERROR(Expect(e.is_string(), w, "a string"));
      out_ += e.get_ref<const std::string&>();
      return Status::Ok();
    });
  }

  // machine.CPUSet{Initialed bool; elems map[int]struct{}}. Its UnmarshalJSON is called even
  // for null, and refuses anything but a string.
  Status NumaNodes(const json& a, const std::string& where) {
    out_ += " NumaNodes:(machine.CPUSet){Initialed:(bool)";
    const std::string w = where + ".numa_node";
    auto it = a.find("numa_node");
    if (it == a.end()) {
      out_ += "false elems:(map[int]struct {})<nil>}";
      return Status::Ok();
    }
    NETQOS_RETURN_IF_ERROR(Expect(it->is_string(), w, "a string"));
    const std::string& text = it->get_ref<const std::string&>();
    if (text == "nil") {
      out_ += "false elems:(map[int]struct {})<nil>}";
      return Status::Ok();
    }
    std::set<int64_t> ids;
    NETQOS_RETURN_IF_ERROR(ParseCpuList(text, w, &ids));
    out_ += "true elems:(map[int]struct {})map[";
    bool first = true;
    for (int64_t id : ids) {
      if (!first) out_ += ' ';
      first = false;
      out_ += std::to_string(id);
      out_ += ":{}";
    }
    out_ += "]}";
    return Status::Ok();
  }

  // strconv.Atoi in base 10: an optional sign, then at least one decimal digit, within int64.
  static bool Atoi(std::string_view s, int64_t* out) {
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
      negative = s[0] == '-';
      s.remove_prefix(1);
    }
    if (s.empty()) return false;
    uint64_t n = 0;
    const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      const uint64_t d = static_cast<uint64_t>(c - '0');
      if (n > (limit - d) / 10) return false;
      n = n * 10 + d;
    }
    *out = negative ? static_cast<int64_t>(0 - n) : static_cast<int64_t>(n);
    return true;
  }

  // Katalyst's list parser: items split on ',', each split on '-'; one part is an id, two are an
  // inclusive range (empty when reversed), more are ignored; "" is the empty (initialised) set.
  static Status ParseCpuList(const std::string& text, const std::string& where,
                             std::set<int64_t>* ids) {
    if (text.empty()) return Status::Ok();
    uint64_t added = 0;
    size_t start = 0;
    for (;;) {
      const size_t comma = text.find(',', start);
      const std::string_view item = std::string_view(text).substr(
          start, comma == std::string::npos ? text.npos : comma - start);
      std::vector<std::string_view> bounds;
      size_t b = 0;
      for (;;) {
        const size_t dash = item.find('-', b);
        bounds.push_back(item.substr(b, dash == item.npos ? item.npos : dash - b));
        if (dash == item.npos) break;
        b = dash + 1;
      }
      if (bounds.size() <= 2) {
        int64_t lo = 0;
        int64_t hi = 0;
        if (!Atoi(bounds[0], &lo) || (bounds.size() == 2 && !Atoi(bounds[1], &hi))) {
          return InvalidArgument(where + ": not a list of ids: \"" + text + "\"");
        }
        if (bounds.size() == 1) hi = lo;
        if (lo <= hi) {
          const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
          added += span;
          if (span > kMaxCpuSetElements || added > kMaxCpuSetElements) {
            return InvalidArgument(where + ": too many ids: \"" + text + "\"");
          }
          for (int64_t id = lo;; ++id) {
            ids->insert(id);
            if (id == hi) break;
          }
        }
      }
      if (comma == std::string::npos) return Status::Ok();
      start = comma + 1;
    }
  }

  const KatalystLayout layout_;
  Sink out_;
  bool ignore_type_ = false;
};

}  // namespace

const char* KatalystLayoutName(KatalystLayout layout) {
  return layout == KatalystLayout::kV053 ? "v0.5.3" : "HEAD";
}

const char* KatalystLayoutFlagValue(KatalystLayout layout) {
  return ChoiceName(layout, kKatalystLayoutNames).data();
}

Result<std::string> KatalystSpewRendering(const json& doc, KatalystLayout layout) {
  Renderer r(layout, /*keep_text=*/true);
  NETQOS_RETURN_IF_ERROR(r.Checkpoint(doc));
  return std::move(r.sink().text());
}

uint32_t Fnv1a32(std::string_view data) {
  uint32_t h = 2166136261U;
  for (char c : data) h = (h ^ static_cast<unsigned char>(c)) * 16777619U;
  return h;
}

Result<uint32_t> KatalystChecksum(const json& doc, KatalystLayout layout) {
  Renderer r(layout, /*keep_text=*/false);
  NETQOS_RETURN_IF_ERROR(r.Checkpoint(doc));
  return r.sink().hash();
}

}  // namespace netqos::checkpoint
