// YAML for `netqosctl -o yaml`: the same document as -o json, written in block style. A small
// emitter over nlohmann::json (netqos has no YAML library, and emitting is all it needs). Plain
// scalars where YAML reads them back as the same string, double quotes where a YAML 1.1 or 1.2
// reader would take them for something else ("yes", "off", "null", "0-1", "10:100", ": x"...).
// Pure.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace netqos::ctl {

// True when `s` written plain would not read back as the same string.
bool YamlNeedsQuotes(const std::string& s);

// A string as a YAML scalar: plain, or double-quoted with JSON's escapes (valid in YAML).
std::string YamlString(const std::string& s);

// The document in block style, one line per scalar, ending with a newline.
std::string YamlText(const nlohmann::json& doc);

}  // namespace netqos::ctl
