// Table: left-aligned columns separated by two spaces, for the human output of netqosctl and
// netqosd --print-topology. Widths count UTF-8 characters, not bytes.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace netqos::render {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "key: value" lines with the keys padded to one width.
void PrintKeyValues(const std::vector<std::pair<std::string, std::string>>& kv, std::ostream& out);

}  // namespace netqos::render
