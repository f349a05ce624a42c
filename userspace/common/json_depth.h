// A guard for JSON from files and the network before it is parsed: nlohmann's parser is
// iterative, but dump() and comparisons recurse, so a document a million brackets deep (a hostile
// journal line, pod list or topology file) would overflow the stack later, on every start.
// Nothing netqos reads nests deeper than a dozen levels.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace netqos {

inline constexpr size_t kMaxJsonNesting = 64;

// Whether arrays and objects in `text` nest deeper than kMaxJsonNesting (brackets inside strings
// do not count). Linear, no allocation; stops at the first level too deep.
bool JsonTooDeep(std::string_view text);

// "nested deeper than 64 levels", for error messages.
std::string JsonTooDeepText();

}  // namespace netqos
