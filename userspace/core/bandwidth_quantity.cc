#include "core/bandwidth_quantity.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>

#include "common/log_value.h"

namespace netqos::core {
namespace {

struct Suffix {
  std::string_view name;
  int exp10;    // a power of ten ...
  int pow1024;  // ... or of 1024
};

constexpr std::array<Suffix, 16> kSuffixes{{{"", 0, 0},
                                            {"n", -9, 0},
                                            {"u", -6, 0},
                                            {"m", -3, 0},
                                            {"k", 3, 0},
                                            {"M", 6, 0},
                                            {"G", 9, 0},
                                            {"T", 12, 0},
                                            {"P", 15, 0},
                                            {"E", 18, 0},
                                            {"Ki", 0, 1},
                                            {"Mi", 0, 2},
                                            {"Gi", 0, 3},
                                            {"Ti", 0, 4},
                                            {"Pi", 0, 5},
                                            {"Ei", 0, 6}}};

// Beyond these the value is out of bounds whatever its (at most kMaxQuantityLength) digits are,
// so the digits are never materialised: a "1e999999" costs nothing.
constexpr int kExp10TooLarge = 40;
constexpr int kExp10TooSmall = -200;

Status NotAQuantity() {
  return InvalidArgument(
      "not a Kubernetes quantity (a number with an optional suffix such as k, M, G, Ki, Mi, Gi or "
      "e6)");
}

// The suffix's scale, or nullopt when it is not one Kubernetes knows.
std::optional<Suffix> ScaleOf(std::string_view s) {
  for (const auto& suffix : kSuffixes) {
    if (suffix.name == s) return suffix;
  }
  if (s.size() < 2 || (s[0] != 'e' && s[0] != 'E')) return std::nullopt;
  // A signed decimal integer that fits int64_t (Go's strconv.ParseInt, as Kubernetes reads it).
  std::string_view digits = s.substr(1);
  const bool negative = digits[0] == '-';
  if (digits[0] == '+' || digits[0] == '-') digits.remove_prefix(1);
  if (digits.empty() || digits[0] < '0' || digits[0] > '9') return std::nullopt;
  uint64_t magnitude = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  if (magnitude > uint64_t{INT64_MAX} + (negative ? 1 : 0)) return std::nullopt;
  // Clamped: beyond these only "far out of bounds" matters.
  int exp = static_cast<int>(std::min<uint64_t>(magnitude, kExp10TooLarge - kExp10TooSmall));
  if (negative) exp = -exp;
  return Suffix{s, exp, 0};
}

// digits (decimal, most significant first) *= m, for a small m.
void MultiplySmall(std::string& digits, unsigned m) {
  unsigned carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    const unsigned v = static_cast<unsigned>(*it - '0') * m + carry;
    *it = static_cast<char>('0' + v % 10);
    carry = v / 10;
  }
  while (carry > 0) {
    digits.insert(digits.begin(), static_cast<char>('0' + carry % 10));
    carry /= 10;
  }
}

// What a quantity may be, and what is said when it is not.
struct Bounds {
  uint64_t min = 0;
  uint64_t max = 0;
  const char* below = "";  // "below the kubelet's minimum of 1k (1000) bit/s"
  const char* above = "";
};

// ceil(digits * 10^exp10) checked against the bounds; digits has no leading zero and is not "0".
Result<uint64_t> CeilInBounds(const std::string& digits, int exp10, const Bounds& bounds) {
  const auto too_large = [&] { return InvalidArgument(bounds.above); };
  const auto too_small = [&] { return InvalidArgument(bounds.below); };
  if (exp10 > kExp10TooLarge) return too_large();
  if (exp10 < kExp10TooSmall) return too_small();  // 0 < value < 1: rounds up to 1
  std::string integer = digits;
  bool fraction = false;
  if (exp10 >= 0) {
    integer.append(static_cast<size_t>(exp10), '0');
  } else {
    const auto shift = static_cast<size_t>(-exp10);
    const size_t keep = integer.size() > shift ? integer.size() - shift : 0;
    fraction = integer.find_first_not_of('0', keep) != std::string::npos;
    integer.resize(keep);
  }
  const size_t first = integer.find_first_not_of('0');
  integer = first == std::string::npos ? "0" : integer.substr(first);
  if (integer.size() > 19) return too_large();  // beyond uint64_t, far beyond 1P
  uint64_t value = 0;
  std::from_chars(integer.data(), integer.data() + integer.size(), value);
  if (fraction) ++value;
  if (value > bounds.max) return too_large();
  if (value < bounds.min) return too_small();
  return value;
}

Result<uint64_t> ParseQuantity(std::string_view text, const Bounds& bounds) {
  if (text.empty()) return InvalidArgument("empty");
  if (text.size() > kMaxQuantityLength) {
    return InvalidArgument("longer than " + std::to_string(kMaxQuantityLength) + " characters");
  }
  size_t pos = 0;
  bool negative = false;
  if (text[pos] == '+' || text[pos] == '-') negative = text[pos++] == '-';
  const auto digits_from = [&](size_t from) {
    size_t end = from;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    return end;
  };
  const size_t int_end = digits_from(pos);
  std::string digits(text.substr(pos, int_end - pos));
  size_t frac_len = 0;
  pos = int_end;
  if (pos < text.size() && text[pos] == '.') {
    const size_t frac_end = digits_from(pos + 1);
    frac_len = frac_end - pos - 1;
    digits.append(text.substr(pos + 1, frac_len));
    pos = frac_end;
  }
  if (digits.empty()) return NotAQuantity();
  const auto suffix = ScaleOf(text.substr(pos));
  if (!suffix) return NotAQuantity();

  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return CeilInBounds("0", 0, bounds);  // zero: too small
  if (negative) return InvalidArgument("negative");
  digits.erase(0, first);
  for (int i = 0; i < suffix->pow1024; ++i) MultiplySmall(digits, 1024);
  return CeilInBounds(digits, suffix->exp10 - static_cast<int>(frac_len), bounds);
}

}  // namespace

Result<uint64_t> ParseBandwidthQuantity(std::string_view text) {
  static constexpr Bounds kBandwidth{kMinAnnotatedBitsPerSecond, kMaxAnnotatedBitsPerSecond,
                                     "below the kubelet's minimum of 1k (1000) bit/s",
                                     "above the kubelet's maximum of 1P (10^15) bit/s"};
  return ParseQuantity(text, kBandwidth);
}

Result<uint64_t> ParseByteQuantity(std::string_view text, uint64_t min_bytes, uint64_t max_bytes) {
  const std::string below = "below the minimum of " + std::to_string(min_bytes) + " bytes";
  const std::string above = "above the maximum of " + std::to_string(max_bytes) + " bytes";
  return ParseQuantity(text, Bounds{min_bytes, max_bytes, below.c_str(), above.c_str()});
}

AnnotatedBandwidth ReadBandwidthAnnotations(const StringMap& annotations) {
  AnnotatedBandwidth out;
  const auto read = [&](const char* key, std::optional<uint64_t>& into, bool& refused) {
    const auto it = annotations.find(key);
    if (it == annotations.end()) return;
    auto bps = ParseBandwidthQuantity(it->second);
    if (bps.ok()) {
      into = *bps;
      return;
    }
    refused = true;
    const std::string shown = it->second.size() > kMaxQuantityLength
                                  ? "(" + std::to_string(it->second.size()) + " characters)"
                                  : LogValue(it->second);
    out.errors.push_back(std::string("annotation ") + key + "=" + shown + ": " +
                         bps.status().message());
  };
  read(kEgressBandwidthAnnotation, out.egress_bps, out.egress_refused);
  read(kIngressBandwidthAnnotation, out.ingress_bps, out.ingress_refused);
  return out;
}

}  // namespace netqos::core
