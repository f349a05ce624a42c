#include "app/kernel_features.h"

#include <sys/utsname.h>

#include <cctype>

namespace netqos::app {
namespace {

// The number at s[*pos], advancing *pos past it; nullopt when there is none.
std::optional<int> Number(std::string_view s, size_t* pos) {
  const size_t start = *pos;
  int v = 0;
  while (*pos < s.size() && std::isdigit(static_cast<unsigned char>(s[*pos])) && *pos - start < 6) {
    v = v * 10 + (s[*pos] - '0');
    ++*pos;
  }
  if (*pos == start) return std::nullopt;
  return v;
}

}  // namespace

std::optional<KernelVersion> ParseKernelRelease(std::string_view release) {
  size_t pos = 0;
  const auto major = Number(release, &pos);
  if (!major || pos >= release.size() || release[pos] != '.') return std::nullopt;
  ++pos;
  const auto minor = Number(release, &pos);
  if (!minor) return std::nullopt;
  return KernelVersion{*major, *minor};
}

bool IfbTakesBpfRedirects(const KernelVersion& v) {
  return v.major > 6 || (v.major == 6 && v.minor >= 12);
}

std::string RunningKernelRelease() {
  utsname u{};
  if (::uname(&u) != 0) return "";
  return u.release;
}

}  // namespace netqos::app
