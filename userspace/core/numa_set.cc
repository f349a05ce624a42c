#include "core/numa_set.h"

#include <cstdint>
#include <limits>

namespace netqos::core {

std::string FormatNumaList(const NumaSet& set) {
  std::string out;
  auto it = set.begin();
  while (it != set.end()) {
    int first = *it;
    int last = first;
    ++it;
    while (it != set.end() && *it == last + 1) {
      last = *it;
      ++it;
    }
    if (!out.empty()) out += ',';
    out += std::to_string(first);
    if (last != first) out += '-' + std::to_string(last);
  }
  return out;
}

namespace {

Result<int> ParseId(std::string_view digits, std::string_view whole) {
  if (digits.empty()) return InvalidArgument("invalid NUMA list \"" + std::string(whole) + "\"");
  int64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') {
      return InvalidArgument("invalid NUMA list \"" + std::string(whole) + "\"");
    }
    v = v * 10 + (c - '0');
    if (v > std::numeric_limits<int>::max()) {
      return InvalidArgument("NUMA id out of range in \"" + std::string(whole) + "\"");
    }
  }
  return static_cast<int>(v);
}

}  // namespace

Result<NumaSet> ParseNumaList(std::string_view text) {
  NumaSet set;
  if (text.empty()) return set;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      NETQOS_ASSIGN_OR_RETURN(int id, ParseId(item, text));
      set.insert(id);
    } else {
      NETQOS_ASSIGN_OR_RETURN(int lo, ParseId(item.substr(0, dash), text));
      NETQOS_ASSIGN_OR_RETURN(int hi, ParseId(item.substr(dash + 1), text));
      if (lo > hi) {
        return InvalidArgument("invalid range in NUMA list \"" + std::string(text) + "\"");
      }
      // A hostile checkpoint could name a huge range; NUMA ids are small in practice.
      if (hi - lo > 65536) {
        return InvalidArgument("NUMA range too large in \"" + std::string(text) + "\"");
      }
      for (int i = lo; i <= hi; ++i) set.insert(i);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return set;
}

}  // namespace netqos::core
