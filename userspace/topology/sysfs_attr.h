// Reading single sysfs attributes: small whole files, trimmed. sysfs attributes can vanish or
// refuse to be read at any moment (hotplug, CPU offlining; <dev>/speed of a down link fails with
// EINVAL; a link being removed gives ENOENT/ENODEV), so every failure is just "no value".
#pragma once

#include <optional>
#include <string>

namespace netqos::topology {

std::string TrimWhitespace(const std::string& s);

// The whole file, trimmed; nullopt on any error.
std::optional<std::string> ReadSysfsAttr(const std::string& path);

}  // namespace netqos::topology
