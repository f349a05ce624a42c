// "Did you mean ...?" for a mistyped netqosctl command: the closest known name by edit distance,
// when it is close enough to be what was meant. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace netqos::ctl {

// Levenshtein distance: insertions, deletions and substitutions, each costing one; a swap of two
// adjacent characters ("stauts") costs one too (Damerau's rule), as typing errors go.
size_t EditDistance(const std::string& a, const std::string& b);

// The name closest to `typed`, if within a third of its length (at least 1, at most 3 edits), or
// if `typed` is a prefix of exactly one name; nullopt otherwise. Ties go to the first name.
std::optional<std::string> ClosestName(const std::string& typed,
                                       const std::vector<std::string>& names);

}  // namespace netqos::ctl
