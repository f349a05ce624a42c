#include "ctl/flag_checks.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace netqos::ctl {
namespace {

// 0.001, 86400, 4294967295: the shortest text that is exact for the limits netqosctl uses.
std::string LimitText(double v) {
  std::ostringstream s;
  s.precision(15);
  s << v;
  return s.str();
}

std::string Range(double min, double max, const std::string& unit, bool whole) {
  return std::string(whole ? "a whole number" : "a number") + " from " + LimitText(min) + " to " +
         LimitText(max) + (unit.empty() ? "" : " " + unit);
}

}  // namespace

std::string CheckNumber(const std::string& text, double min, double max, const std::string& unit,
                        bool whole) {
  const std::string want = Range(min, max, unit, whole);
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  const bool number = !text.empty() && end == begin + text.size() && errno == 0 &&
                      std::isfinite(v) && !std::isspace(static_cast<unsigned char>(text[0]));
  if (!number) return "\"" + text + "\" is not a number: give " + want;
  if (whole && (v != std::floor(v) || text.find_first_of(".eExXpP") != std::string::npos)) {
    return "\"" + text + "\" is not a whole number: give " + want;
  }
  if (v < min || v > max) return text + " is out of range: give " + want;
  return "";
}

CLI::Validator NumberIn(double min, double max, const std::string& unit) {
  return CLI::Validator([=](std::string& text) { return CheckNumber(text, min, max, unit, false); },
                        LimitText(min) + ".." + LimitText(max));
}

CLI::Validator WholeNumberIn(double min, double max, const std::string& unit) {
  return CLI::Validator([=](std::string& text) { return CheckNumber(text, min, max, unit, true); },
                        LimitText(min) + ".." + LimitText(max));
}

CLI::Validator OneOf(std::vector<std::string> choices) {
  std::string list;
  std::string braces;
  for (size_t i = 0; i < choices.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
    braces += (i == 0 ? "" : ",") + choices[i];
  }
  return CLI::Validator(
      [choices, list](std::string& text) {
        if (std::find(choices.begin(), choices.end(), text) != choices.end()) return std::string();
        return "\"" + text + "\" is not one of " + list;
      },
      "{" + braces + "}");
}

}  // namespace netqos::ctl
