// The checks on netqosctl's numeric and closed-choice flags. They run on the text before CLI11
// converts it, so a bad value is refused with the accepted range written the way a person would
// write it ("from 0.001 to 86400 seconds"), never CLI11's default message with the limits of a
// double spelled out in 309 digits. CLI11 prefixes the flag's name.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace netqos::ctl {

// The message for `text` given to a flag taking a number from `min` to `max` `unit` (whole
// numbers only when `whole`); "" when it is one. Pure, for the tests.
std::string CheckNumber(const std::string& text, double min, double max, const std::string& unit,
                        bool whole);

CLI::Validator NumberIn(double min, double max, const std::string& unit);
CLI::Validator WholeNumberIn(double min, double max, const std::string& unit);
// One of `choices`, spelled out in the message.
CLI::Validator OneOf(std::vector<std::string> choices);

}  // namespace netqos::ctl
