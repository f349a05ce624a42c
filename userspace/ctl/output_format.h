// netqosctl's output formats (-o table|wide|json|yaml, --json = -o json) and the documents the
// structured ones print. Every JSON or YAML document carries "schema_version"; the rule for
// raising it is in docs/operations.md ("Output formats"). Pure.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "render/json_values.h"

namespace netqos::ctl {

enum class OutputFormat { kTable, kWide, kJson, kYaml };

// The version of the documents -o json and -o yaml print. Raised when a field is removed or
// renamed or changes its type or meaning; adding a field does not raise it.
inline constexpr int kSchemaVersion = 1;

// "table", "wide", "json", "yaml"; nullopt for anything else.
std::optional<OutputFormat> ParseOutputFormat(std::string_view name);
std::string_view OutputFormatName(OutputFormat format);
inline bool IsStructured(OutputFormat f) {
  return f == OutputFormat::kJson || f == OutputFormat::kYaml;
}

// The document as -o json (indented) or -o yaml prints it, with "schema_version" added to an
// object, ending with a newline.
std::string DocumentText(OutputFormat format, nlohmann::json doc);
// One document of a stream (`top`, one per refresh): a single JSON line, or a YAML document
// opened with "---".
std::string StreamDocumentText(OutputFormat format, nlohmann::json doc);

// The null of a field the daemon leaves empty or negative (render/json_values.h), shared with
// netqosd's --print-topology --json.
using render::NonNegativeOrNull;
using render::StringOrNull;

}  // namespace netqos::ctl
