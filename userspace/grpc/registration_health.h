// What the kubelet's plugin watcher has done with our registration, judged from the calls it
// made: it calls GetInfo on the socket it found, then NotifyRegistrationStatus with its verdict.
// A GetInfo that is never followed by a verdict means the kubelet read us but did not finish
// (a kubelet without the QRM feature, one stuck or restarting); the daemon keeps serving either
// way, but an operator must be able to see it (netqosctl status, a metric, one warning).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "grpc/registration_service.h"

namespace netqos::grpcadapter {

enum class RegistrationPhase {
  kNotContacted,  // no GetInfo from the kubelet yet
  kAwaiting,      // GetInfo answered, the verdict may still come (within the timeout)
  kUnconfirmed,   // GetInfo answered longer than the timeout ago, no verdict since
  kRegistered,
  kRejected,
};

struct RegistrationHealth {
  RegistrationPhase phase = RegistrationPhase::kNotContacted;
  std::string error;                   // the kubelet's error when rejected
  double seconds_since_get_info = -1;  // -1: never
  uint64_t get_info_calls = 0;
};

RegistrationHealth AssessRegistration(const RegistrationService::State& state,
                                      std::chrono::steady_clock::time_point now,
                                      std::chrono::steady_clock::duration timeout);

// "not_contacted", "awaiting", "unconfirmed", "registered", "rejected": the metric label and the
// status text.
std::string_view PhaseName(RegistrationPhase phase);

}  // namespace netqos::grpcadapter
