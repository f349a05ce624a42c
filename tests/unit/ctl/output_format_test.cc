// netqosctl's output formats as pure pieces: the YAML emitter (block style, quoting what a YAML
// reader would misread), the documents' schema_version, null for absent values, and the checks
// of numeric flags.
#include "ctl/output_format.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "ctl/flag_checks.h"
#include "ctl/yaml_text.h"

using netqos::ctl::CheckNumber;
using netqos::ctl::DocumentText;
using netqos::ctl::OutputFormat;
using netqos::ctl::YamlNeedsQuotes;
using netqos::ctl::YamlString;
using netqos::ctl::YamlText;
using Json = nlohmann::json;

TEST_CASE("YAML quotes the strings a YAML reader would take for something else") {
  // Booleans of YAML 1.1 and 1.2, null, special floats, in any case.
  for (const char* s : {"yes", "No", "ON", "off", "y", "N", "true", "False", "null", "NULL", "~",
                        ".inf", "-.Inf", ".nan", "<<"}) {
    INFO(s);
    CHECK(YamlNeedsQuotes(s));
  }
  // Numbers as strings, and what YAML 1.1 reads as numbers or dates: sexagesimal, hex, octal.
  for (const char* s :
       {"0", "42", "-1", "+3", "1.5", ".5", "1e3", "0x1f", "0o17", "10:100", "0-1", "2026-01-01"}) {
    INFO(s);
    CHECK(YamlNeedsQuotes(s));
  }
  // Leading indicators, ": " and " #" inside, surrounding spaces, control characters, empty.
  for (const char* s :
       {"-x",   "- x",  "?",  ":x",    "*alias", "&anchor",     "!tag",      "|",   ">",
        "#c",   "%d",   "@x", "`x",    "'q",     "\"q",         "[a]",       "{a}", ",a",
        "a: b", "a #b", "a:", " lead", "trail ", "line\nbreak", "tab\there", ""}) {
    INFO(s);
    CHECK(YamlNeedsQuotes(s));
  }
  // Ordinary text stays plain, colons and hashes inside words included.
  for (const char* s : {"eth0", "bpf", "shared_cores", "ns1-eth1", "a:b", "a#b", "web/app",
                        "/sys/fs/bpf/netqos", "fe80::1", "no such cgroup", "yesterday"}) {
    INFO(s);
    CHECK_FALSE(YamlNeedsQuotes(s));
  }
  CHECK(YamlString("yes") == "\"yes\"");
  CHECK(YamlString("a\"b\n") == "\"a\\\"b\\n\"");
  CHECK(YamlString("eth0") == "eth0");
}

TEST_CASE("YAML is ASCII: other characters are escaped, as in -o json") {
  CHECK(YamlString("caf\xc3\xa9") == "\"caf\\u00e9\"");
  // Beyond the BMP: one \U escape (YAML), not JSON's surrogate pair.
  CHECK(YamlString("\xf0\x9f\x98\x80") == "\"\\U0001F600\"");
  // A C1 control (NEL) and a byte that is not UTF-8 never reach the terminal raw.
  CHECK(YamlString("a\xc2\x85"
                   "b") == "\"a\\u0085b\"");
  CHECK(YamlString("a\xff") == "\"a\\ufffd\"");
  // A backslash followed by "u" in the text is the text.
  CHECK(YamlString("x\\ud83d\\ude00") == "x\\ud83d\\ude00");
  CHECK(YamlString("\xc3\xa9\\ud83d\\ude00") == "\"\\u00e9\\\\ud83d\\\\ude00\"");
}

TEST_CASE("YAML is block style: maps, lists, lists of maps, empty ones and null") {
  const Json doc = {{"name", "eth0"},
                    {"speed", 1000},
                    {"ratio", 0.5},
                    {"healthy", true},
                    {"reason", nullptr},
                    {"mode", "on"},
                    {"ips", {"10.0.0.1", "fe80::1"}},
                    {"none", Json::array()},
                    {"empty", Json::object()},
                    {"nics", {{{"nic", "eth0"}, {"numa", {0, 1}}}, {{"nic", "eth1"}}}},
                    {"nested", {{"a", {{"b", "c"}}}}},
                    {"grid", {{1, 2}, {3}}}};
  CHECK(YamlText(doc) ==
        "empty: {}\n"
        "grid:\n"
        "  - - 1\n"
        "    - 2\n"
        "  - - 3\n"
        "healthy: true\n"
        "ips:\n"
        "  - \"10.0.0.1\"\n"
        "  - fe80::1\n"
        "mode: \"on\"\n"
        "name: eth0\n"
        "nested:\n"
        "  a:\n"
        "    b: c\n"
        "nics:\n"
        "  - nic: eth0\n"
        "    numa:\n"
        "      - 0\n"
        "      - 1\n"
        "  - nic: eth1\n"
        "none: []\n"
        "ratio: 0.5\n"
        "reason: null\n"
        "speed: 1000\n");
  CHECK(YamlText(Json("yes")) == "\"yes\"\n");
  CHECK(YamlText(Json::array()) == "[]\n");
  // Keys are quoted by the same rule.
  CHECK(YamlText(Json{{"on", 1}, {"10:100", "x"}}) == "\"10:100\": x\n\"on\": 1\n");
}

TEST_CASE("json and yaml documents carry the schema version, and say the same") {
  const Json doc = {{"nic", "eth0"}, {"numa_node", nullptr}, {"speed_mbps", 1000}};
  const Json parsed = Json::parse(DocumentText(OutputFormat::kJson, doc));
  CHECK(parsed["schema_version"] == netqos::ctl::kSchemaVersion);
  CHECK(parsed["numa_node"].is_null());
  CHECK(DocumentText(OutputFormat::kYaml, doc) == "nic: eth0\nnuma_node: null\nschema_version: " +
                                                      std::to_string(netqos::ctl::kSchemaVersion) +
                                                      "\nspeed_mbps: 1000\n");
  // One stream document per line (JSON) or per "---" (YAML).
  CHECK(netqos::ctl::StreamDocumentText(OutputFormat::kJson, doc).find('\n') ==
        netqos::ctl::StreamDocumentText(OutputFormat::kJson, doc).size() - 1);
  CHECK_THAT(netqos::ctl::StreamDocumentText(OutputFormat::kYaml, doc),
             Catch::StartsWith("---\nnic: eth0\n"));
}

TEST_CASE("absent values are null: empty strings and the API's negative sentinels") {
  CHECK(netqos::ctl::StringOrNull("").is_null());
  CHECK(netqos::ctl::StringOrNull("x") == "x");
  CHECK(netqos::ctl::NonNegativeOrNull(int64_t{-1}).is_null());
  CHECK(netqos::ctl::NonNegativeOrNull(int64_t{0}) == 0);
  CHECK(netqos::ctl::NonNegativeOrNull(-1.0).is_null());
}

TEST_CASE("output formats parse by name, and nothing else does") {
  CHECK(netqos::ctl::ParseOutputFormat("yaml") == OutputFormat::kYaml);
  CHECK(netqos::ctl::ParseOutputFormat("wide") == OutputFormat::kWide);
  CHECK_FALSE(netqos::ctl::ParseOutputFormat("JSON").has_value());
  CHECK(netqos::ctl::OutputFormatName(OutputFormat::kTable) == "table");
}

TEST_CASE("a numeric flag's bad value is named with a range that reads well") {
  CHECK(CheckNumber("10", 0.001, 86400, "seconds", false).empty());
  CHECK(CheckNumber("2.5", 0.001, 86400, "seconds", false).empty());
  CHECK(CheckNumber("abc", 0.001, 86400, "seconds", false) ==
        "\"abc\" is not a number: give a number from 0.001 to 86400 seconds");
  CHECK(CheckNumber("0", 0.001, 86400, "seconds", false) ==
        "0 is out of range: give a number from 0.001 to 86400 seconds");
  CHECK(CheckNumber("1e999", 0.001, 86400, "seconds", false) ==
        "\"1e999\" is not a number: give a number from 0.001 to 86400 seconds");
  for (const char* bad : {"", " 1", "1 ", "nan", "inf", "10s", "0x"}) {
    INFO(bad);
    CHECK_FALSE(CheckNumber(bad, 0, 10, "", false).empty());
  }
  CHECK(CheckNumber("1.5", 0, 4294967295, "", true) ==
        "\"1.5\" is not a whole number: give a whole number from 0 to 4294967295");
  CHECK(CheckNumber("4294967296", 0, 4294967295, "", true) ==
        "4294967296 is out of range: give a whole number from 0 to 4294967295");
  CHECK(CheckNumber("7", 0, 4294967295, "", true).empty());
}
