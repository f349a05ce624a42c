// `netqosctl status`: the daemon's own report (GetStatus) next to what is pinned on the node (read
// directly, so it shows while the daemon is down). Pure rendering.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "bpf/pinned_maps.h"
#include "common/format_stamp.h"
#include "netqos/admin/v1/admin.pb.h"

namespace netqos::ctl {

struct StatusInput {
  std::string socket;
  std::optional<::netqos::admin::v1::GetStatusResponse> daemon;  // nullopt: unreachable
  std::string daemon_error;                                      // why unreachable, with what to do
  bpf::PinDirState pins;
  // The pin directory's format stamp read here, shown when the daemon (which reports every stamp
  // it uses) cannot be asked.
  std::optional<FormatStampReading> pin_stamp;
  bool wide = false;  // -o wide: every column
};

// "3d4h", "2m05s", "12s".
std::string DurationText(double seconds);

nlohmann::json StatusJson(const StatusInput& in);
void PrintStatus(const StatusInput& in, std::ostream& out);

}  // namespace netqos::ctl
