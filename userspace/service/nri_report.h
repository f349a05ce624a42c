// The NRI session's state as netqosctl status shows it (--nri-socket): built by the composition
// root from the session, rendered by the admin API.
#pragma once

#include <cstdint>
#include <string>

namespace netqos::service {

struct NriReport {
  std::string socket;
  bool connected = false;
  std::string runtime_name;  // "" = never registered
  std::string runtime_version;
  uint32_t runtime_timeout_ms = 0;  // 0: the runtime sent none
  uint32_t event_budget_ms = 0;
  bool fail_closed = false;
  uint64_t connects = 0;
  uint64_t events = 0;
  uint64_t late_replies = 0;
  uint64_t refused_starts = 0;
  uint64_t shed_events = 0;
  uint64_t invalid_events = 0;
  std::string last_error;
};

}  // namespace netqos::service
