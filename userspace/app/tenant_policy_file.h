// The tenant policy in force (--tenant-policy-file, enforce/tenant_policy.h): read at start and
// again whenever the file changes (polled: a ConfigMap volume swaps a symlink, which an inotify
// watch on the file would miss), validated whole before it replaces anything. A file that cannot
// be read or does not validate is reported (log, netqosctl status and tenant-policy, metrics) and
// the last good policy stays in force; at start, with no good policy yet, the built-in default
// (the strictest: annotations only ever make a pod's treatment stricter) is.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

#include "enforce/tenant_policy.h"
#include "metrics/registry.h"
#include "service/enforcement_view.h"

namespace netqos::app {

struct TenantPolicyState {
  std::shared_ptr<const enforce::TenantPolicy> policy;  // in force; never null
  std::string path;         // --tenant-policy-file; "" = none (the built-in default)
  std::string source;       // "built-in default", or the file and when it was loaded
  uint64_t generation = 0;  // policies taken from the file since start
  std::string loaded_at;    // UTC time the policy in force was read ("" = built-in)
  std::string error;        // why the file's current content is not in force ("" = it is)
  uint64_t load_errors_total = 0;
};

class TenantPolicyFile {
 public:
  using Listener = std::function<void(const enforce::TenantPolicy&)>;
  // Reads `path` now ("" = no file: the built-in default for good) and, with a path, starts a
  // thread that looks at it every `poll`.
  TenantPolicyFile(std::string path, std::chrono::milliseconds poll);
  ~TenantPolicyFile();
  TenantPolicyFile(const TenantPolicyFile&) = delete;
  TenantPolicyFile& operator=(const TenantPolicyFile&) = delete;

  std::shared_ptr<const enforce::TenantPolicy> Policy() const;
  TenantPolicyState State() const;
  // Reads the file now if it changed (the poll thread calls it; tests may too). True when a new
  // policy took effect.
  bool Check();
  // Called (on the poll thread) after a new policy took effect, not at start. Setting another
  // (or none) waits for a call in flight to the old one.
  void SetListener(Listener listener);

  // netqos_tenant_policy_generation, netqos_tenant_policy_load_errors_total and
  // netqos_tenant_policy_ok (scrape time).
  void AddMetrics(metrics::Registry& registry) const;

 private:
  void Loop();

  const std::string path_;
  const std::chrono::milliseconds poll_;
  std::mutex listener_mu_;  // held while the listener runs
  Listener listener_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  TenantPolicyState state_;
  std::string seen_;  // the file's identity and content at the last read: nothing new, no parse
  std::thread thread_;
};

// netqosd --check-tenant-policy=FILE: reads and validates it as the daemon would; prints the
// policy (every rule explicit) to `out` and returns 0, or the error to `err` and returns 1.
int CheckTenantPolicyFile(const std::string& path, std::ostream& out, std::ostream& err);

// What GetTenantPolicy and the status report of it.
service::TenantPolicyReport TenantPolicyReportOf(const TenantPolicyFile& file);

}  // namespace netqos::app
