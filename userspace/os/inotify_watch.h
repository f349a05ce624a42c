// InotifyWatch: an inotify instance, an eventfd that interrupts its wait, and the one wait every
// watcher of netqos runs on (the kubelet's socket directory, the cgroup tree, the topology file,
// the network-namespace directories and their netlink sockets). Owns both fds.
#pragma once

#include <sys/inotify.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/status.h"

namespace netqos::os {

class InotifyWatch {
 public:
  // kOptional: a failed inotify_init1 still gives a watch that can wait for Wake(), the extra
  // fds and timeouts (its Add fails), for a caller that can live on polling.
  enum class Inotify { kRequired, kOptional };

  // Too many inotify instances (EMFILE) is ResourceExhausted naming
  // fs.inotify.max_user_instances.
  static Result<std::unique_ptr<InotifyWatch>> Create(Inotify inotify = Inotify::kRequired);

  InotifyWatch(const InotifyWatch&) = delete;
  InotifyWatch& operator=(const InotifyWatch&) = delete;

  bool has_inotify() const { return static_cast<bool>(inotify_); }

  // inotify_add_watch: the watch descriptor. Adding a watched inode again returns its descriptor
  // (with the new mask). Out of watches (ENOSPC) is ResourceExhausted naming
  // fs.inotify.max_user_watches and its value.
  Result<int> Add(const std::string& path, uint32_t mask);
  void Remove(int wd);

  // Thread-safe; ends a concurrent Wait, or the next one.
  void Wake();

  enum class Outcome { kReady, kWoken, kTimeout };
  using EventHandler = std::function<void(const inotify_event&)>;
  // Sleeps until inotify events, Wake(), a readable `extra` fd or the timeout (negative: none).
  // Wake() wins over everything else (kWoken; the wake is consumed). Otherwise every queued
  // event is read and passed to on_event (null: discarded), extra_ready (if given) tells which
  // extra fds are readable, and the outcome is kReady. A signal ends the wait as kTimeout.
  Result<Outcome> Wait(std::chrono::milliseconds timeout, const EventHandler& on_event,
                       const std::vector<int>& extra = {},
                       std::vector<bool>* extra_ready = nullptr);

 private:
  InotifyWatch(Fd inotify, Fd wake) : inotify_(std::move(inotify)), wake_(std::move(wake)) {}
  Status ReadEvents(const EventHandler& on_event);

  Fd inotify_;
  Fd wake_;
};

}  // namespace netqos::os
