// Table: left-aligned columns separated by two spaces, for the human output of netqosctl and
// netqosd --print-topology. Widths count UTF-8 characters, not bytes.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace netqos::render {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  // Each cell is made safe for a terminal (common/terminal_text.h): escaped and bounded.
  void AddRow(std::vector<std::string> row);
  bool empty() const { return rows_.empty(); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "key: value" lines with the keys padded to one width; values made safe for a terminal.
void PrintKeyValues(const std::vector<std::pair<std::string, std::string>>& kv, std::ostream& out);

// A JSON document as netqosctl prints it: `indent` as nlohmann's dump, ASCII only (every other
// character \u-escaped), invalid UTF-8 replaced.
std::string JsonText(const nlohmann::json& j, int indent = 2);

}  // namespace netqos::render
