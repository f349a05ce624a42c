#include "enforce/dscp.h"

#include <cctype>

#include "shaping/level_items.h"

namespace netqos::enforce {
namespace {

constexpr uint8_t kEf = 46;

std::string Upper(std::string_view text) {
  std::string out(text);
  for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

bool Digit(char ch, char lo, char hi) { return ch >= lo && ch <= hi; }

}  // namespace

Result<uint8_t> ParseDscp(std::string_view text) {
  if (text.empty()) return InvalidArgument("empty DSCP");
  if (Digit(text[0], '0', '9')) {
    // At most 2 digits past leading zeros: "063" is 63, no overflow whatever the length.
    unsigned v = 0;
    for (char ch : text) {
      if (!Digit(ch, '0', '9')) {
        return InvalidArgument("DSCP must be a number 0..63 or a name (EF, CS0..CS7, AF11..AF43)");
      }
      v = v * 10 + static_cast<unsigned>(ch - '0');
      if (v > kMaxDscp) return InvalidArgument("DSCP out of range 0..63");
    }
    return static_cast<uint8_t>(v);
  }
  const std::string name = Upper(text);
  if (name == "EF") return kEf;
  if (name.size() == 3 && name.compare(0, 2, "CS") == 0 && Digit(name[2], '0', '7')) {
    return static_cast<uint8_t>(8 * (name[2] - '0'));
  }
  if (name.size() == 4 && name.compare(0, 2, "AF") == 0 && Digit(name[2], '1', '4') &&
      Digit(name[3], '1', '3')) {
    return static_cast<uint8_t>(8 * (name[2] - '0') + 2 * (name[3] - '0'));
  }
  return InvalidArgument("DSCP must be a number 0..63 or a name (EF, CS0..CS7, AF11..AF43)");
}

std::string DscpText(uint8_t dscp) {
  std::string out = std::to_string(dscp);
  if (dscp == kEf) return out + " (EF)";
  if (dscp % 8 == 0) return out + " (CS" + std::to_string(dscp / 8) + ")";
  const int x = dscp / 8;
  const int y = (dscp % 8) / 2;
  if (dscp % 2 == 0 && x >= 1 && x <= 4 && y >= 1 && y <= 3) {
    return out + " (AF" + std::to_string(x) + std::to_string(y) + ")";
  }
  return out;
}

Status ParseLevelDscpItems(const std::vector<std::string>& items, const char* flag,
                           LevelDscp* out) {
  return shaping::ParseLevelItems(items, flag, "<dscp>", ParseDscp, out);
}

Result<DscpDefault> ParseDscpDefault(std::string_view text, const char* flag) {
  if (text == "auto") return DscpDefault{};
  if (text == "keep") return DscpDefault{DscpDefault::Kind::kKeep, 0};
  auto dscp = ParseDscp(text);
  if (!dscp.ok()) {
    return InvalidArgument(std::string(flag) + ": \"" + std::string(text.substr(0, 64)) +
                           "\": " + dscp.status().message() + ", or auto or keep");
  }
  return DscpDefault{DscpDefault::Kind::kDscp, *dscp};
}

}  // namespace netqos::enforce
