// An enum's spellings as a constexpr table, in the layer that owns the enum: its parser, its
// printer and the daemon's flag reader (app/flag_choices.h) all read the one table, so a value
// is spelled in one place.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace netqos {

template <typename E>
struct Choice {
  std::string_view name;  // a string literal: .data() is NUL-terminated
  E value;
};

template <typename E, size_t N>
using Choices = std::array<Choice<E>, N>;

// The accepted spellings, for messages: "a or b", "a, b or c".
template <typename E, size_t N>
std::string ChoiceList(const Choices<E, N>& choices) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += choices[i].name;
  }
  return out;
}

template <typename E, size_t N>
std::optional<E> FindChoice(std::string_view text, const Choices<E, N>& choices) {
  for (const auto& c : choices) {
    if (c.name == text) return c.value;
  }
  return std::nullopt;
}

// The spelling of `value`: the first listed, so a value with aliases shows its first name; "?"
// for a value the table lacks (tests check every enumerator has one).
template <typename E, size_t N>
std::string_view ChoiceName(E value, const Choices<E, N>& choices) {
  for (const auto& c : choices) {
    if (c.value == value) return c.name;
  }
  return "?";
}

}  // namespace netqos
