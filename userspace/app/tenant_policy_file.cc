#include "app/tenant_policy_file.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/bounded_file.h"
#include "common/log_value.h"

namespace netqos::app {
namespace {

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// What tells one version of the file from another without reading it: a ConfigMap update
// replaces the file behind a symlink (another inode), an edit in place changes size or mtime.
std::string Identity(const struct stat& st) {
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

Result<enforce::TenantPolicy> ReadPolicy(const std::string& path) {
  auto text = ReadFileAtMost(path, enforce::kMaxTenantPolicyBytes);
  if (!text.ok()) return text.status();
  auto parsed = enforce::ParseTenantPolicy(*text);
  if (!parsed.ok()) return parsed.status().Wrap(path);
  return parsed;
}

}  // namespace

TenantPolicyFile::TenantPolicyFile(std::string path, std::chrono::milliseconds poll)
    : path_(std::move(path)), poll_(poll) {
  state_.policy = std::make_shared<const enforce::TenantPolicy>();
  state_.path = path_;
  state_.source = "built-in default";
  if (path_.empty()) {
    spdlog::info("tenant policy: built-in default (no --tenant-policy-file)");
    return;
  }
  if (!Check()) {
    spdlog::warn(
        "tenant policy: the built-in default is in force until the file can be used path={}",
        LogValue(path_));
  }
  thread_ = std::thread([this] { Loop(); });
}

TenantPolicyFile::~TenantPolicyFile() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const enforce::TenantPolicy> TenantPolicyFile::Policy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.policy;
}

TenantPolicyState TenantPolicyFile::State() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

bool TenantPolicyFile::Check() {
  if (path_.empty()) return false;
  std::string identity;
  std::string error;
  std::string text;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    error = "stat " + path_ + ": " + std::strerror(errno);
    identity = "error:" + error;
  } else {
    identity = Identity(st);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (identity == seen_) return false;
  }
  Result<enforce::TenantPolicy> parsed = error.empty() ? ReadPolicy(path_) : InvalidArgument(error);
  std::shared_ptr<const enforce::TenantPolicy> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seen_ = identity;
    if (!parsed.ok()) {
      const bool changed = state_.error != parsed.status().message();
      state_.error = parsed.status().message();
      ++state_.load_errors_total;
      if (changed) {
        spdlog::error("tenant policy not loaded, keeping the one in force ({}): {}", state_.source,
                      LogValue(state_.error));
      }
      return false;
    }
    state_.error.clear();
    if (*parsed == *state_.policy && state_.generation != 0) return false;
    taken = std::make_shared<const enforce::TenantPolicy>(std::move(*parsed));
    state_.policy = taken;
    ++state_.generation;
    state_.loaded_at = UtcNow();
    state_.source = path_ + " (read " + state_.loaded_at + ")";
    spdlog::info("tenant policy loaded path={} generation={} namespaces={}", LogValue(path_),
                 state_.generation, taken->namespaces.size());
  }
  std::lock_guard<std::mutex> lock(listener_mu_);
  if (listener_) listener_(*taken);
  return true;
}

void TenantPolicyFile::SetListener(Listener listener) {
  std::lock_guard<std::mutex> lock(listener_mu_);
  listener_ = std::move(listener);
}

void TenantPolicyFile::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, poll_, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    try {
      Check();
    } catch (const std::exception& ex) {
      spdlog::error("tenant policy check failed: {}", ex.what());
    }
    lock.lock();
  }
}

void TenantPolicyFile::AddMetrics(metrics::Registry& registry) const {
  registry.AddCollector([this](std::vector<metrics::Family>* out) {
    const TenantPolicyState s = State();
    auto one = [out](const char* name, const char* help, metrics::MetricType type, double v) {
      metrics::Family f;
      f.name = name;
      f.help = help;
      f.type = type;
      f.samples.push_back({{}, v});
      out->push_back(std::move(f));
    };
    one("netqos_tenant_policy_generation",
        "Tenant policies taken from --tenant-policy-file since start (0: the built-in default is "
        "in force).",
        metrics::MetricType::kGauge, static_cast<double>(s.generation));
    one("netqos_tenant_policy_load_errors_total",
        "Reads of --tenant-policy-file that failed or did not validate (the last good policy "
        "stayed in force).",
        metrics::MetricType::kCounter, static_cast<double>(s.load_errors_total));
    one("netqos_tenant_policy_ok",
        "1 when the file's current content is the policy in force (or there is no file); 0 when "
        "it could not be used.",
        metrics::MetricType::kGauge, s.error.empty() ? 1.0 : 0.0);
  });
}

int CheckTenantPolicyFile(const std::string& path, std::ostream& out, std::ostream& err) {
  auto policy = ReadPolicy(path);
  if (!policy.ok()) {
    err << "netqosd: tenant policy not valid: " << policy.status().message() << "\n";
    return 1;
  }
  out << enforce::TenantPolicyJson(*policy) << "\n";
  return 0;
}

service::TenantPolicyReport TenantPolicyReportOf(const TenantPolicyFile& file) {
  const TenantPolicyState s = file.State();
  return {s.path,
          s.source,
          s.generation,
          s.loaded_at,
          s.error,
          s.load_errors_total,
          enforce::TenantPolicyJson(*s.policy)};
}

}  // namespace netqos::app
