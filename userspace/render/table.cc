#include "render/table.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/terminal_text.h"

namespace netqos::render {
namespace {

// Columns on a terminal: one per UTF-8 character (the continuation bytes 10xxxxxx take none),
// so that a name with accents or a sparkline's block glyphs keep the columns aligned.
size_t DisplayWidth(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

void Table::AddRow(std::vector<std::string> row) {
  // Cells carry names and messages from pods: nothing in them may drive the terminal.
  for (auto& cell : row) cell = TerminalText(cell);
  rows_.push_back(std::move(row));
}

void Table::Print(std::ostream& out) const {
  std::vector<size_t> widths(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], DisplayWidth(row[i]));
    }
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < widths.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      line += cell;
      if (i + 1 < widths.size()) line += std::string(widths[i] - DisplayWidth(cell) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  print(header_);
  for (const auto& row : rows_) print(row);
}

void PrintKeyValues(const std::vector<std::pair<std::string, std::string>>& kv, std::ostream& out) {
  size_t width = 0;
  for (const auto& [k, v] : kv) width = std::max(width, k.size());
  for (const auto& [k, v] : kv) {
    out << k << ":" << std::string(width - k.size() + 1, ' ') << TerminalText(v) << "\n";
  }
}

std::string JsonText(const nlohmann::json& j, int indent) {
  // ASCII only: no control character, C1 included, reaches the terminal unescaped; bytes that are
  // not UTF-8 are replaced rather than thrown on.
  return j.dump(indent, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
}

}  // namespace netqos::render
