#include "grpc/registration_health.h"

namespace netqos::grpcadapter {

RegistrationHealth AssessRegistration(const RegistrationService::State& state,
                                      std::chrono::steady_clock::time_point now,
                                      std::chrono::steady_clock::duration timeout) {
  RegistrationHealth h;
  h.get_info_calls = state.get_info_calls;
  if (state.last_get_info) {
    h.seconds_since_get_info = std::chrono::duration<double>(now - *state.last_get_info).count();
  }
  // A verdict answers the GetInfo before it; a GetInfo after the last verdict (the kubelet
  // restarted and registers again) opens a new round that needs a verdict of its own.
  const bool verdict_pending =
      state.last_get_info && (!state.last_notify || *state.last_notify < *state.last_get_info);
  if (verdict_pending) {
    h.phase = now - *state.last_get_info < timeout ? RegistrationPhase::kAwaiting
                                                   : RegistrationPhase::kUnconfirmed;
  } else if (state.notified) {
    h.phase = state.registered ? RegistrationPhase::kRegistered : RegistrationPhase::kRejected;
    if (!state.registered) h.error = state.error;
  }
  return h;
}

std::string_view PhaseName(RegistrationPhase phase) {
  switch (phase) {
    case RegistrationPhase::kNotContacted:
      return "not_contacted";
    case RegistrationPhase::kAwaiting:
      return "awaiting";
    case RegistrationPhase::kUnconfirmed:
      return "unconfirmed";
    case RegistrationPhase::kRegistered:
      return "registered";
    case RegistrationPhase::kRejected:
      return "rejected";
  }
  return "unknown";
}

}  // namespace netqos::grpcadapter
