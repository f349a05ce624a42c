#include "app/format_guard.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <vector>

#include "bpf/format_pin.h"
#include "bpf/pinned_maps.h"
#include "checkpoint/format_stamp_file.h"
#include "common/format_stamp.h"

namespace netqos::app {
namespace {

std::vector<std::string> StateDirs(const DaemonConfig& config) {
  std::vector<std::string> dirs;
  for (const std::string& dir : {config.qrm_state_dir, config.qrm_state_dir_in_memory}) {
    if (!dir.empty()) dirs.push_back(dir);
  }
  return dirs;
}

Status Check(const Result<std::optional<FormatStamp>>& found, const std::string& where) {
  if (!found.ok()) return found.status().Wrap("reading the format stamp");
  if (!found->has_value()) return Status::Ok();
  const FormatStamp& stamp = **found;
  NETQOS_RETURN_IF_ERROR(CheckFormatStamp(stamp, where));
  if (stamp.generation != kFormatGeneration) {
    spdlog::info(
        "format stamp of another generation, usable where={} release={} generation={} "
        "min_reader={} own_generation={}",
        where, stamp.release, stamp.generation, stamp.min_reader, kFormatGeneration);
  }
  return Status::Ok();
}

}  // namespace

Status CheckFormatStamps(const DaemonConfig& config, bool pins) {
  if (pins) {
    NETQOS_RETURN_IF_ERROR(
        Check(bpf::ReadFormatPin(config.bpf_pin_dir), "the pin directory " + config.bpf_pin_dir));
  }
  for (const std::string& dir : StateDirs(config)) {
    NETQOS_RETURN_IF_ERROR(
        Check(checkpoint::ReadFormatStampFile(dir), "the state directory " + dir));
  }
  return Status::Ok();
}

void StampStateDir(const DaemonConfig& config) {
  const std::string dir = config.EffectiveStateDir();
  if (Status st = checkpoint::WriteFormatStampFile(dir, OwnFormatStamp()); !st.ok()) {
    spdlog::warn(
        "state directory not stamped with this release's format; an older netqosd "
        "would not know to refuse it dir={} error={}",
        dir, st.message());
  }
}

void StampPinDir(const std::string& pin_dir) {
  if (Status st = bpf::WriteFormatPin(pin_dir, OwnFormatStamp()); !st.ok()) {
    spdlog::warn(
        "pin directory not stamped with this release's format; an older netqosd "
        "would not know to refuse it pin_dir={} error={}",
        pin_dir, st.message());
  }
}

std::vector<FormatStampReading> ReadFormatStamps(const DaemonConfig& config, bool pins) {
  std::vector<FormatStampReading> readings;
  auto add = [&](std::string kind, std::string path,
                 const Result<std::optional<FormatStamp>>& found) {
    FormatStampReading r{std::move(kind), std::move(path), std::nullopt, ""};
    if (found.ok()) {
      r.stamp = *found;
    } else {
      r.error = found.status().message();
    }
    readings.push_back(std::move(r));
  };
  if (pins) {
    add("pin_dir", config.bpf_pin_dir + "/" + bpf::kFormatPinName,
        bpf::ReadFormatPin(config.bpf_pin_dir));
  }
  for (const std::string& dir : StateDirs(config)) {
    add("state_dir", dir + "/" + checkpoint::kFormatStampFile,
        checkpoint::ReadFormatStampFile(dir));
  }
  return readings;
}

Status RemoveStateStamps(const DaemonConfig& config) {
  for (const std::string& dir : StateDirs(config)) {
    NETQOS_RETURN_IF_ERROR(checkpoint::RemoveFormatStampFile(dir));
  }
  return Status::Ok();
}

}  // namespace netqos::app
