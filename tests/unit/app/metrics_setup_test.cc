// --metrics-bind-address and --log-format flags, and the /readyz verdict.
#include "app/metrics_setup.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app/daemon_config.h"
#include "support/temp_dir.h"

namespace {

netqos::app::ParsedFlags Parse(std::vector<std::string> args, std::string* err = nullptr) {
  args.insert(args.begin(), {"netqosd", "--topology-file=/dev/null"});
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream captured;
  std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
  auto r = netqos::app::ParseDaemonFlags(static_cast<int>(argv.size()), argv.data());
  std::cerr.rdbuf(old);
  if (err != nullptr) *err = captured.str();
  return r;
}

// A bound unix socket at `path` (what the plugin server leaves on disk).
int BindUnixSocket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  return fd;
}

}  // namespace

TEST_CASE("metrics are off and logs are text by default") {
  auto r = Parse({});
  REQUIRE(r.config);
  CHECK_FALSE(r.config->metrics_bind_address.has_value());
  CHECK(r.config->log_format == netqos::app::LogFormat::kText);
}

TEST_CASE("metrics bind address and log format flags are read and validated") {
  auto r = Parse({"--metrics-bind-address=127.0.0.1:9465", "--log-format=json"});
  REQUIRE(r.config);
  REQUIRE(r.config->metrics_bind_address.has_value());
  CHECK(r.config->metrics_bind_address->host == "127.0.0.1");
  CHECK(r.config->metrics_bind_address->port == 9465);
  CHECK(r.config->log_format == netqos::app::LogFormat::kJson);

  std::string err;
  auto bad = Parse({"--metrics-bind-address=127.0.0.1"}, &err);
  CHECK_FALSE(bad.config);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(err, Catch::Contains("--metrics-bind-address") && Catch::Contains("HOST:PORT"));

  bad = Parse({"--log-format=xml"}, &err);
  CHECK_FALSE(bad.config);
  CHECK_THAT(err, Catch::Contains("--log-format must be text or json"));
}

TEST_CASE("readiness needs every plugin socket and, with bpf, the first enforcement pass") {
  netqos::testing::TempDir dir;
  const std::string sock = dir.path() + "/qrm.sock";
  netqos::service::EnforcementReport none;
  netqos::service::EnforcementReport bpf;
  bpf.mode = "bpf";

  auto r = netqos::app::CheckReadiness({sock}, none);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.reason, Catch::Contains(sock));

  const int fd = BindUnixSocket(sock);
  r = netqos::app::CheckReadiness({sock}, none);
  CHECK(r.ok);
  CHECK_THAT(r.reason, Catch::Contains("enforcement=none"));

  // Enforcement starts after serving: not ready while the dataplane is being opened, then until
  // the first pass is done.
  bpf.starting = true;
  r = netqos::app::CheckReadiness({sock}, bpf);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.reason, Catch::Contains("enforcement is starting") &&
                           Catch::Contains("what was pinned keeps enforcing"));
  bpf.starting = false;
  r = netqos::app::CheckReadiness({sock}, bpf);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.reason, Catch::Contains("first enforcement pass"));
  bpf.passes = 1;
  CHECK(netqos::app::CheckReadiness({sock}, bpf).ok);

  netqos::service::EnforcementReport disabled;
  disabled.mode = "disabled";
  disabled.error = "no cgroup2 mount";
  r = netqos::app::CheckReadiness({sock}, disabled);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.reason, Catch::Contains("no cgroup2 mount"));
  ::close(fd);
}
