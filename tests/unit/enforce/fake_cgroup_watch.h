// A fake of the enforcer's cgroup-events port (enforce/cgroup_events.h): records the roots the
// enforcer watches and lets a test report directories created and removed under them, on the
// test's thread, as the inotify watcher would from its own.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "enforce/cgroup_events.h"

namespace netqos::enforce::testing {

class FakeCgroupWatches {
 public:
  // The port: a WatchCgroups that registers `root` with this fake. Roots in `fail_roots` fail to
  // start, as a watch out of inotify watches would.
  WatchCgroups Port() {
    return [this](const std::string& root,
                  CgroupEventHandlers handlers) -> Result<std::unique_ptr<CgroupWatch>> {
      std::lock_guard<std::mutex> l(mu_);
      for (const auto& bad : fail_roots) {
        if (bad == root) return Status(StatusCode::kResourceExhausted, "inotify watches: " + root);
      }
      auto state = std::make_shared<Watch>();
      state->root = root;
      state->handlers = std::move(handlers);
      watches_.push_back(state);
      return std::unique_ptr<CgroupWatch>(std::make_unique<Handle>(state, mu_));
    };
  }
  // Reports `path` created (removed) to the running watches whose root holds it; how many.
  int Created(const std::string& path) { return Report(path, true); }
  int Removed(const std::string& path) { return Report(path, false); }
  // Reports `error` from every running watch (one that lost watches); how many.
  int Error(const Status& error) {
    std::vector<std::function<void(const Status&)>> calls;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (const auto& w : watches_) {
        if (!w->stopped && w->handlers.on_error) calls.push_back(w->handlers.on_error);
      }
    }
    for (const auto& call : calls) call(error);
    return static_cast<int>(calls.size());
  }
  // The roots watched so far, and how many of those watches are still running.
  std::vector<std::string> Roots() const {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<std::string> out;
    for (const auto& w : watches_) out.push_back(w->root);
    return out;
  }
  size_t Running() const {
    std::lock_guard<std::mutex> l(mu_);
    size_t n = 0;
    for (const auto& w : watches_) n += w->stopped ? 0 : 1;
    return n;
  }

  std::vector<std::string> fail_roots;  // set before the enforcer starts

 private:
  struct Watch {
    std::string root;
    CgroupEventHandlers handlers;
    bool stopped = false;
  };
  class Handle : public CgroupWatch {
   public:
    Handle(std::shared_ptr<Watch> watch, std::mutex& mu) : watch_(std::move(watch)), mu_(mu) {}
    void Stop() override {
      std::lock_guard<std::mutex> l(mu_);
      watch_->stopped = true;
    }

   private:
    std::shared_ptr<Watch> watch_;
    std::mutex& mu_;
  };

  int Report(const std::string& path, bool created) {
    // The handlers are called without the lock, as the watcher calls them from its thread.
    std::vector<std::function<void(const std::string&)>> calls;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (const auto& w : watches_) {
        if (w->stopped || path.rfind(w->root + "/", 0) != 0) continue;
        calls.push_back(created ? w->handlers.on_created : w->handlers.on_removed);
      }
    }
    for (const auto& call : calls) call(path);
    return static_cast<int>(calls.size());
  }

  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Watch>> watches_;
};

}  // namespace netqos::enforce::testing
