// The kubelet's registration as the daemon judges it: the pure assessment of GetInfo / verdict
// times, and, on a real served socket, that the server's own self-check is not taken for the
// kubelet's GetInfo while the kubelet's calls and verdicts are.
#include "grpc/registration_health.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "grpc/plugin_server.h"
#include "support/temp_dir.h"
#include "unit/grpc/grpc_test_util.h"

namespace netqos::grpcadapter {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const Clock::time_point t0 = Clock::time_point{} + 1000s;

TEST_CASE("registration: nothing heard from the kubelet is not_contacted", "[grpc][registration]") {
  RegistrationService::State s;
  const auto h = AssessRegistration(s, t0, 60s);
  CHECK(h.phase == RegistrationPhase::kNotContacted);
  CHECK(h.seconds_since_get_info == -1);
  CHECK(PhaseName(h.phase) == "not_contacted");
}

TEST_CASE("registration: a GetInfo waits for its verdict until the timeout, then is unconfirmed",
          "[grpc][registration]") {
  RegistrationService::State s;
  s.get_info_calls = 2;
  s.last_get_info = t0;
  CHECK(AssessRegistration(s, t0 + 59s, 60s).phase == RegistrationPhase::kAwaiting);
  const auto late = AssessRegistration(s, t0 + 60s, 60s);
  CHECK(late.phase == RegistrationPhase::kUnconfirmed);
  CHECK(late.seconds_since_get_info == Approx(60));
  CHECK(late.get_info_calls == 2);
}

TEST_CASE("registration: the verdict after the GetInfo decides, with the kubelet's error",
          "[grpc][registration]") {
  RegistrationService::State s;
  s.last_get_info = t0;
  s.notified = true;
  s.last_notify = t0 + 1ms;
  s.registered = true;
  CHECK(AssessRegistration(s, t0 + 1h, 60s).phase == RegistrationPhase::kRegistered);
  s.registered = false;
  s.error = "plugin name conflict";
  const auto h = AssessRegistration(s, t0 + 1h, 60s);
  CHECK(h.phase == RegistrationPhase::kRejected);
  CHECK(h.error == "plugin name conflict");
}

TEST_CASE("registration: a GetInfo after a verdict opens a new round (kubelet restarted)",
          "[grpc][registration]") {
  RegistrationService::State s;
  s.notified = true;
  s.registered = true;
  s.last_notify = t0;
  s.last_get_info = t0 + 10s;  // the restarted kubelet read us again and has not answered
  CHECK(AssessRegistration(s, t0 + 20s, 60s).phase == RegistrationPhase::kAwaiting);
  CHECK(AssessRegistration(s, t0 + 71s, 60s).phase == RegistrationPhase::kUnconfirmed);
}

TEST_CASE("registration: a verdict without any GetInfo still counts", "[grpc][registration]") {
  RegistrationService::State s;  // e.g. GetInfo arrived before a daemon restart
  s.notified = true;
  s.registered = true;
  s.last_notify = t0;
  CHECK(AssessRegistration(s, t0 + 1s, 60s).phase == RegistrationPhase::kRegistered);
}

TEST_CASE("registration: the server's own dial check is not the kubelet's GetInfo",
          "[grpc][registration]") {
  testing::TempDir dir;
  RegistrationService reg;
  auto server = PluginServer::Create({dir.path()}, {&reg});
  INFO(server.status().message());
  REQUIRE(server.ok());
  // Serving ran a GetInfo self-check; so does every re-serve after the socket is deleted.
  const std::string path = (*server)->SocketPaths().at(0);
  REQUIRE(std::filesystem::remove(path));
  REQUIRE(testing::WaitFor([&] { return (*server)->reserve_count() >= 1; }, 10000ms) <= 10000ms);
  CHECK(reg.state().get_info_calls == 0);
  CHECK(AssessRegistration(reg.state(), Clock::now(), 60s).phase ==
        RegistrationPhase::kNotContacted);

  // The kubelet's call counts, and opens a round awaiting its verdict.
  ::pluginregistration::PluginInfo info;
  REQUIRE(testing::CallGetInfo(path, &info).ok());
  CHECK(reg.state().get_info_calls == 1);
  CHECK(AssessRegistration(reg.state(), Clock::now(), 60s).phase == RegistrationPhase::kAwaiting);
  CHECK(AssessRegistration(reg.state(), Clock::now() + 61s, 60s).phase ==
        RegistrationPhase::kUnconfirmed);
  (*server)->Stop();
}

}  // namespace
}  // namespace netqos::grpcadapter
