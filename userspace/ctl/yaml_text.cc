#include "ctl/yaml_text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>

namespace netqos::ctl {
namespace {

using Json = nlohmann::json;

// Words a YAML reader resolves to a boolean, null or a special float: YAML 1.1 (PyYAML, and Go's
// yaml.v2) reads y/n/yes/no/on/off as booleans; 1.2 keeps true/false/null/~.
bool IsReservedWord(const std::string& s) {
  static constexpr std::array<std::string_view, 15> kWords = {
      "y",    "n", "yes",  "no",   "on",    "off",   "true", "false",
      "null", "~", ".nan", ".inf", "-.inf", "+.inf", "<<"};
  std::string lower(s.size(), ' ');
  std::transform(s.begin(), s.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(kWords.begin(), kWords.end(), lower) != kWords.end();
}

// Anything that starts like a number: ints, floats, 0x/0o, YAML 1.1's sexagesimal "10:30" and
// dates. Quoting a few strings that would have been safe costs nothing; misreading one does.
bool StartsLikeNumber(const std::string& s) {
  size_t i = 0;
  if (s[i] == '-' || s[i] == '+') ++i;
  if (i < s.size() && s[i] == '.') ++i;
  return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0;
}

std::string Indent(int n) { return std::string(static_cast<size_t>(n), ' '); }

bool IsCollection(const Json& j) { return (j.is_object() || j.is_array()) && !j.empty(); }

std::string Scalar(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_string()) return YamlString(j.get<std::string>());
  if (j.is_object()) return "{}";
  if (j.is_array()) return "[]";
  return j.dump();  // numbers and booleans read the same in YAML
}

void Emit(const Json& j, int indent, std::string* out);

// One array item: "- " then the item, whose first line shares the dash's line.
void EmitItem(const Json& item, int indent, std::string* out) {
  if (!IsCollection(item)) {
    *out += Indent(indent) + "- " + Scalar(item) + "\n";
    return;
  }
  std::string nested;
  Emit(item, indent + 2, &nested);
  // The nested block starts with indent+2 spaces: the dash takes the place of the last two.
  nested.replace(static_cast<size_t>(indent), 2, "- ");
  *out += nested;
}

void Emit(const Json& j, int indent, std::string* out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [key, value] : j.items()) {
      *out += Indent(indent) + YamlString(key) + ":";
      if (IsCollection(value)) {
        *out += "\n";
        // Sequences under a key are indented too: easier to read, and what kubectl prints.
        Emit(value, indent + 2, out);
      } else {
        *out += " " + Scalar(value) + "\n";
      }
    }
  } else if (j.is_array() && !j.empty()) {
    for (const auto& item : j) EmitItem(item, indent, out);
  } else {
    *out += Indent(indent) + Scalar(j) + "\n";
  }
}

}  // namespace

bool YamlNeedsQuotes(const std::string& s) {
  if (s.empty() || IsReservedWord(s) || StartsLikeNumber(s)) return true;
  // Indicators that start a flow collection, anchor, alias, tag, block scalar, comment, directive
  // or quoted scalar, and "- ", "? ", ": " (and the bare "-", "?", ":").
  static constexpr std::string_view kLeading = "-?:,[]{}#&*!|>'\"%@`";
  if (kLeading.find(s.front()) != std::string_view::npos) return true;
  if (std::isspace(static_cast<unsigned char>(s.front())) != 0 ||
      std::isspace(static_cast<unsigned char>(s.back())) != 0) {
    return true;
  }
  if (s.back() == ':' || s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) {
    return true;
  }
  // Control characters (a newline, a tab, an escape) need the double-quoted escapes; so does
  // anything not ASCII: like -o json, the output is ASCII, so no C1 control or invalid byte
  // reaches the terminal.
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u >= 0x7f;
  });
}

std::string YamlString(const std::string& s) {
  if (!YamlNeedsQuotes(s)) return s;
  // JSON's string escapes (\", \\, \n, \u0001, \u00e9) are valid in a YAML double-quoted
  // scalar, but for a character beyond the BMP, which JSON writes as a UTF-16 surrogate pair and
  // YAML as one \UXXXXXXXX.
  const std::string json =
      Json(s).dump(-1, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace);
  std::string out;
  for (size_t i = 0; i < json.size(); ++i) {
    if (json.compare(i, 2, "\\u") == 0 && i + 12 <= json.size() &&
        json.compare(i + 6, 2, "\\u") == 0) {
      const unsigned long high = std::stoul(json.substr(i + 2, 4), nullptr, 16);
      const unsigned long low = std::stoul(json.substr(i + 8, 4), nullptr, 16);
      if (high >= 0xD800 && high <= 0xDBFF && low >= 0xDC00 && low <= 0xDFFF) {
        char buf[11];
        std::snprintf(buf, sizeof(buf), "\\U%08lX",
                      0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00));
        out += buf;
        i += 11;
        continue;
      }
    }
    if (json.compare(i, 2, "\\\\") == 0) {  // an escaped backslash: not the start of \u
      out += "\\\\";
      ++i;
      continue;
    }
    out += json[i];
  }
  return out;
}

std::string YamlText(const Json& doc) {
  std::string out;
  Emit(doc, 0, &out);
  return out;
}

}  // namespace netqos::ctl
