// libFuzzer target: the text parsers behind a request's annotations. One input is read as
// - the network_enhancement JSON (core's strict reader, ParseJsonObject), checked against
//   nlohmann::json as a second opinion and round-tripped through a re-serialization;
// - a whole annotation set (FilterRequest) with that JSON as network_enhancement, and as the
//   lenient cpu_enhancement;
// - a qos_level annotation value (ResolveQosLevel) and a net_class_id value (ParseNetClassId),
//   both against simple oracles;
// - a NUMA list ("0-1,3", the checkpoint's numa_node) and an IP address (topology files), each
//   round-tripped through its formatter;
// - a kubernetes.io/*-bandwidth value (ParseBandwidthQuantity), against a regular expression of
//   Kubernetes' quantity grammar and a long double evaluation, and round-tripped.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "core/bandwidth_quantity.h"
#include "core/config.h"
#include "core/constants.h"
#include "core/ip_format.h"
#include "core/json_object.h"
#include "core/net_class.h"
#include "core/numa_set.h"
#include "core/qos.h"
#include "fuzz_check.h"

namespace {

using namespace netqos;

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) {
      return false;
    }
    i += len;
  }
  return true;
}

// JSON string literal for arbitrary bytes, escaping only what JSON requires, so that the strict
// reader must decode it back to the same bytes.
std::string Quote(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void CheckJsonObject(std::string_view text) {
  auto members = core::ParseJsonObject(text);

  // Second opinion. The readers legitimately differ on invalid UTF-8 and on lone surrogate
  // escapes (Go, and so netqos, accept both; nlohmann rejects them), on NUL bytes (nlohmann
  // takes one for the end of the input, Go and netqos reject it) and netqos caps nesting.
  const bool comparable = ValidUtf8(text) && text.find('\0') == std::string_view::npos &&
                          text.find("\\u") == std::string_view::npos &&
                          text.find("\\U") == std::string_view::npos && text.size() < 400;
  if (comparable) {
    nlohmann::json j;
    bool nl_ok = false;
    bool nl_knows = true;
    try {
      j = nlohmann::json::parse(text.begin(), text.end());
      nl_ok = j.is_object() || j.is_null();
    } catch (const nlohmann::json::out_of_range&) {
      nl_knows = false;  // a number no double holds (1e400): valid JSON that nlohmann refuses
    } catch (const nlohmann::json::exception&) {
      nl_ok = false;
    }
    if (nl_knows) {
      FUZZ_CHECK(members.ok() == nl_ok, "the strict reader agrees with nlohmann on validity");
    }
    if (nl_knows && members.ok() && j.is_object()) {
      std::map<std::string, const core::JsonMember*> last;
      for (const auto& m : *members) last[m.key] = &m;
      FUZZ_CHECK(last.size() == j.size(), "same set of keys");
      for (const auto& [key, m] : last) {
        auto it = j.find(key);
        FUZZ_CHECK(it != j.end(), "every key is seen by both");
        if (m->type == core::JsonType::kString) {
          FUZZ_CHECK(it->is_string() && it->get<std::string>() == m->string_value,
                     "string values agree (last duplicate wins)");
        } else {
          FUZZ_CHECK(!it->is_string(), "non-string types agree");
        }
      }
    }
  }
  if (!members.ok()) {
    FUZZ_CHECK(members.status().code() == StatusCode::kInvalidArgument,
               "a bad document is InvalidArgument");
    return;
  }

  // Round trip: re-serialize the string and null members; parsing that gives them back.
  std::string doc = "{";
  std::vector<core::JsonMember> kept;
  for (const auto& m : *members) {
    if (m.type != core::JsonType::kString && m.type != core::JsonType::kNull) continue;
    if (!kept.empty()) doc += ",";
    doc +=
        Quote(m.key) + ":" + (m.type == core::JsonType::kString ? Quote(m.string_value) : "null");
    kept.push_back(m);
  }
  doc += "}";
  auto again = core::ParseJsonObject(doc);
  FUZZ_CHECK(again.ok(), "a re-serialized object parses");
  FUZZ_CHECK(again->size() == kept.size(), "same member count after the round trip");
  for (size_t i = 0; i < kept.size(); ++i) {
    const auto& a = kept[i];
    const auto& b = (*again)[i];
    FUZZ_CHECK(a.key == b.key && a.type == b.type && a.string_value == b.string_value,
               "members survive the round trip");
  }
}

void CheckFilterRequest(const std::string& text) {
  const core::QosConfig config;
  for (const std::string& level : core::QosLevels()) {
    core::StringMap ann = {{core::kQosLevelKey, level}, {core::kNetworkEnhancementKey, text}};
    core::StringMap labels = {{core::kQosLevelKey, level}};
    auto f = core::FilterRequest(config, labels, ann);
    auto members = core::ParseJsonObject(text);
    if (!members.ok()) {
      FUZZ_CHECK(!f.ok(), "a malformed network_enhancement is rejected");
    } else {
      for (const auto& m : *members) {
        if (m.type != core::JsonType::kString && m.type != core::JsonType::kNull) {
          FUZZ_CHECK(!f.ok(), "a non-string network_enhancement value is rejected");
        }
      }
    }
    if (f.ok()) {
      FUZZ_CHECK(f->qos_level == level, "the annotated level is kept");
      FUZZ_CHECK(f->labels.at(core::kQosLevelKey) == level, "labels carry the level");
      FUZZ_CHECK(f->annotations.count(core::kNetworkEnhancementKey) == 0,
                 "the raw enhancement is flattened away");
      if (auto it = f->annotations.find(core::kNamespaceTypeKey); it != f->annotations.end()) {
        const std::string& v = it->second;
        FUZZ_CHECK(v == core::kHostNs || v == core::kHostNsPreferred || v == core::kAntiHostNs ||
                       v == core::kAntiHostNsPreferred,
                   "an accepted namespace_type is a known value");
      }
      if (auto it = f->annotations.find(core::kTopologyAffinityRestrictedKey);
          it != f->annotations.end()) {
        FUZZ_CHECK(it->second == "true" || it->second == "false",
                   "an accepted topology_affinity_restricted is a bool");
      }
    } else {
      FUZZ_CHECK(f.status().code() == StatusCode::kInvalidArgument,
                 "a rejected request is InvalidArgument");
    }
    // The cpu enhancement is lenient about its JSON: no crash is all that is promised.
    core::StringMap cpu = {{core::kQosLevelKey, level}, {core::kCpuEnhancementKey, text}};
    (void)core::FilterRequest(config, labels, cpu);
  }
}

void CheckQosLevel(const std::string& text) {
  const core::QosConfig config;
  auto level = core::ResolveQosLevel(config, {{core::kQosLevelKey, text}});
  const bool known = core::QosLevels().count(text) != 0;
  FUZZ_CHECK(level.ok() == known, "only the four level names resolve");
  if (level.ok()) FUZZ_CHECK(*level == text, "a level resolves to itself");
}

void CheckNetClassId(const std::string& text) {
  auto id = core::ParseNetClassId(text);
  bool digits = !text.empty();
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  std::string stripped = text.substr(std::min(text.find_first_not_of('0'), text.size()));
  if (stripped.empty() && digits) stripped = "0";
  const bool fits =
      digits && (stripped.size() < 10 || (stripped.size() == 10 && stripped <= "4294967295"));
  FUZZ_CHECK(id.ok() == fits, "class ids are decimal numbers up to 2^32-1");
  if (id.ok()) FUZZ_CHECK(std::to_string(*id) == stripped, "the class id prints back");

  core::PolicyConfig config;
  auto resolved = core::ResolveNetClassId(config, {{config.pod_net_class_annotation_key, text}},
                                          core::kSharedCores);
  FUZZ_CHECK(resolved.ok() == id.ok(), "the annotation resolves exactly when it parses");
}

void CheckNumaList(const std::string& text) {
  auto set = core::ParseNumaList(text);
  if (!set.ok()) return;
  const std::string printed = core::FormatNumaList(*set);
  auto again = core::ParseNumaList(printed);
  FUZZ_CHECK(again.ok() && *again == *set, "a NUMA list survives format -> parse");
  FUZZ_CHECK(core::FormatNumaList(*again) == printed, "formatting is canonical");
}

void CheckIp(const std::string& text) {
  auto ip = core::ParseIp(text);
  if (!ip.ok()) return;
  const std::string printed = core::FormatIp(*ip);
  auto again = core::ParseIp(printed);
  FUZZ_CHECK(again.ok() && *again == *ip, "an address survives format -> parse");
  auto normalized = core::NormalizeIp(text);
  FUZZ_CHECK(normalized.ok() && *normalized == printed, "NormalizeIp is parse + format");
}

// The quantity's value by an independent route: a regular expression for the grammar, strtold
// for the number; nullopt when the grammar refuses it.
std::optional<long double> ApproxQuantity(const std::string& text) {
  static const std::regex grammar(
      "([+-]?(?:[0-9]+[.]?[0-9]*|[.][0-9]+))(|[numkMGTPE]|[KMGTPE]i|[eE]([+-]?[0-9]+))");
  std::smatch m;
  if (!std::regex_match(text, m, grammar)) return std::nullopt;
  long double scale = 1;
  const std::string suffix = m[2];
  if (m[3].matched) {
    errno = 0;
    const long long exp = std::strtoll(m[3].str().c_str(), nullptr, 10);
    if (errno == ERANGE) return std::nullopt;  // not an int64_t exponent
    scale = std::pow(10.0L, static_cast<long double>(std::clamp(exp, -4000LL, 4000LL)));
  } else if (suffix.size() == 2) {
    scale = std::pow(1024.0L, static_cast<long double>(std::string("KMGTPE").find(suffix[0]) + 1));
  } else if (!suffix.empty()) {
    const int exp[] = {-9, -6, -3, 3, 6, 9, 12, 15, 18};
    scale = std::pow(10.0L, exp[std::string("numkMGTPE").find(suffix[0])]);
  }
  return std::strtold(m[1].str().c_str(), nullptr) * scale;
}

void CheckBandwidthQuantity(const std::string& text) {
  auto bps = core::ParseBandwidthQuantity(text);
  if (text.size() > core::kMaxQuantityLength) {
    FUZZ_CHECK(!bps.ok(), "an over-long quantity is refused unread");
    return;
  }
  const auto approx = ApproxQuantity(text);
  if (!approx) {
    FUZZ_CHECK(!bps.ok(), "only Kubernetes' grammar parses");
    return;
  }
  // strtold and powl are not exact (the parser is): within `slack` of an integer the oracle
  // cannot tell which side the value is on, anywhere else it must round up exactly.
  const long double slack = 1e-9L + std::fabs(*approx) * 1e-17L;
  if (bps.ok()) {
    const long double v = static_cast<long double>(*bps);
    const long double nearest = std::round(*approx);
    if (std::fabs(*approx - nearest) <= slack) {
      FUZZ_CHECK(v == nearest || v == nearest + 1, "the value is the quantity rounded up");
    } else {
      FUZZ_CHECK(v == std::ceil(*approx), "the value is the quantity rounded up");
    }
    FUZZ_CHECK(*bps >= core::kMinAnnotatedBitsPerSecond && *bps <= core::kMaxAnnotatedBitsPerSecond,
               "only values within the kubelet's bounds are accepted");
    auto again = core::ParseBandwidthQuantity(std::to_string(*bps));
    FUZZ_CHECK(again.ok() && *again == *bps, "the value prints back as a plain quantity");
  } else {
    const long double lo = static_cast<long double>(core::kMinAnnotatedBitsPerSecond);
    const long double hi = static_cast<long double>(core::kMaxAnnotatedBitsPerSecond);
    FUZZ_CHECK(*approx <= lo - 1 + slack || *approx > hi - slack,
               "a grammatical quantity is refused only out of bounds");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckJsonObject(text);
  CheckFilterRequest(text);
  CheckQosLevel(text);
  CheckNetClassId(text);
  CheckNumaList(text);
  CheckIp(text);
  CheckBandwidthQuantity(text);
  return 0;
}
