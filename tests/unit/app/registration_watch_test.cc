// RegistrationWatch: one warning per registration round the kubelet leaves open, a note when the
// verdict comes later, and the netqos_kubelet_registration gauge at scrape time.
#include "app/registration_watch.h"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <thread>

namespace netqos::app {
namespace {

using namespace std::chrono_literals;

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

// Captures the default logger for its lifetime.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
    logger->set_pattern("level=%l %v");
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

void KubeletGetInfo(grpcadapter::RegistrationService& reg) {
  ::pluginregistration::PluginInfo info;
  REQUIRE(reg.GetInfo(nullptr, nullptr, &info).ok());
}

void KubeletVerdict(grpcadapter::RegistrationService& reg, bool registered) {
  ::pluginregistration::RegistrationStatus st;
  st.set_plugin_registered(registered);
  ::pluginregistration::RegistrationStatusResponse resp;
  REQUIRE(reg.NotifyRegistrationStatus(nullptr, &st, &resp).ok());
}

TEST_CASE("registration watch: one warning per unconfirmed round, a note when the verdict comes") {
  grpcadapter::RegistrationService reg;
  RegistrationWatch watch(reg, 1ms);
  CapturedLog log;

  watch.Poll();  // not contacted: nothing to say
  KubeletGetInfo(reg);
  std::this_thread::sleep_for(5ms);
  watch.Poll();
  watch.Poll();
  CHECK(Count(log.text(), "kubelet registration unconfirmed") == 1);
  CHECK(Count(log.text(), "level=warn") == 1);

  KubeletVerdict(reg, true);
  watch.Poll();
  CHECK(Count(log.text(), "verdict arrived after the warning") == 1);
  CHECK(Count(log.text(), "state=registered") == 1);

  // The kubelet restarts, reads us again and goes quiet: a new round, a new warning.
  KubeletGetInfo(reg);
  std::this_thread::sleep_for(5ms);
  watch.Poll();
  watch.Poll();
  CHECK(Count(log.text(), "kubelet registration unconfirmed") == 2);
}

TEST_CASE("registration watch: no warning while the verdict is within the timeout") {
  grpcadapter::RegistrationService reg;
  RegistrationWatch watch(reg, 1h);
  CapturedLog log;
  KubeletGetInfo(reg);
  watch.Poll();
  CHECK(watch.Health().phase == grpcadapter::RegistrationPhase::kAwaiting);
  KubeletVerdict(reg, true);
  watch.Poll();
  CHECK(Count(log.text(), "level=warn") == 0);
  CHECK(Count(log.text(), "registered with kubelet") == 1);  // the service's own line only
}

TEST_CASE("registration watch: the gauge marks the current state only") {
  grpcadapter::RegistrationService reg;
  RegistrationWatch watch(reg, 1ms);
  CapturedLog quiet;
  metrics::Registry registry;
  watch.AddMetrics(registry);
  auto text = registry.RenderText();
  CHECK(Count(text, "netqos_kubelet_registration{state=\"not_contacted\"} 1") == 1);
  CHECK(Count(text, "} 1") == 1);
  CHECK(Count(text, "netqos_kubelet_registration{state=\"registered\"} 0") == 1);

  KubeletGetInfo(reg);
  std::this_thread::sleep_for(5ms);
  text = registry.RenderText();
  CHECK(Count(text, "netqos_kubelet_registration{state=\"unconfirmed\"} 1") == 1);
  CHECK(Count(text, "} 1") == 1);

  KubeletVerdict(reg, false);
  text = registry.RenderText();
  CHECK(Count(text, "netqos_kubelet_registration{state=\"rejected\"} 1") == 1);
  CHECK(Count(text, "} 1") == 1);
}

}  // namespace
}  // namespace netqos::app
