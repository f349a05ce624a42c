#include "ctl/output_format.h"

#include <nlohmann/json.hpp>

#include "ctl/yaml_text.h"
#include "render/table.h"

namespace netqos::ctl {

using Json = nlohmann::json;

std::optional<OutputFormat> ParseOutputFormat(std::string_view name) {
  if (name == "table") return OutputFormat::kTable;
  if (name == "wide") return OutputFormat::kWide;
  if (name == "json") return OutputFormat::kJson;
  if (name == "yaml") return OutputFormat::kYaml;
  return std::nullopt;
}

std::string_view OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable:
      return "table";
    case OutputFormat::kWide:
      return "wide";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kYaml:
      return "yaml";
  }
  return "table";
}

namespace {

Json Versioned(Json doc) {
  if (doc.is_object()) doc["schema_version"] = kSchemaVersion;
  return doc;
}

}  // namespace

std::string DocumentText(OutputFormat format, Json doc) {
  doc = Versioned(std::move(doc));
  if (format == OutputFormat::kYaml) return YamlText(doc);
  return render::JsonText(doc) + "\n";
}

std::string StreamDocumentText(OutputFormat format, Json doc) {
  doc = Versioned(std::move(doc));
  if (format == OutputFormat::kYaml) return "---\n" + YamlText(doc);
  return render::JsonText(doc, -1) + "\n";
}

}  // namespace netqos::ctl
