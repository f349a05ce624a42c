#include "app/residual_sweeper.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "common/log_value.h"

namespace netqos::app {

ResidualSweeper::ResidualSweeper(Options options, Ports ports)
    : options_(options), ports_(std::move(ports)), residual_(options.after) {}

ResidualSweeper::~ResidualSweeper() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ResidualSweeper::Start() {
  thread_ = std::thread([this] {
    std::unique_lock lk(mu_);
    while (!stop_) {
      lk.unlock();
      SweepOnce(Clock::now());
      lk.lock();
      cv_.wait_for(lk, options_.interval, [this] { return stop_; });
    }
  });
}

std::vector<std::string> ResidualSweeper::SweepOnce(Clock::time_point now) {
  std::vector<std::string> removed;
  auto pods = ports_.read_pods(/*force=*/true);
  if (!pods.ok() || !pods->has_value()) {
    const std::string error =
        pods.ok() ? "the pod source returned no list" : pods.status().message();
    if (error != last_error_) {
      spdlog::warn("residual state cleanup skipped: cannot read the pod list error=\"{}\"", error);
      last_error_ = error;
    }
    return removed;
  }
  if (!last_error_.empty()) spdlog::info("residual state cleanup: the pod list is readable again");
  last_error_.clear();
  std::set<std::string> listed;
  for (const auto& p : **pods) listed.insert(p.uid);
  for (const auto& m : residual_.Pass(ports_.allocated(), listed, now)) {
    spdlog::info("pod has allocations but the pod source does not list it pod={} since_s={}",
                 LogValue(m.uid), m.missing_for.count());
    if (!m.due) continue;
    if (Status st = ports_.remove_pod(m.uid); st.ok()) {
      spdlog::info("cleared residual pod pod={} from the state", LogValue(m.uid));
      residual_.Forget(m.uid);
      removed.push_back(m.uid);
    } else {
      spdlog::error("clearing residual allocations failed pod={} error=\"{}\"", LogValue(m.uid),
                    st.message());
    }
  }
  return removed;
}

}  // namespace netqos::app
