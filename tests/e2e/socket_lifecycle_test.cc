// The plugin socket's life: stale files replaced, deletion and directory wipes (what a kubelet
// restart does) healed within a second, several socket directories served at once.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "e2e/kubelet_harness.h"

using namespace netqos::e2e;

TEST_CASE("e2e: a stale socket file is replaced at start") {
  Harness h;
  std::filesystem::create_directories(h.sock_dir());
  {
    // A socket nobody listens on, as a crashed daemon leaves behind.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", h.socket_path().c_str());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    ::close(fd);
  }
  REQUIRE(std::filesystem::exists(h.socket_path()));
  h.Start();
  reg::PluginInfo info;
  CHECK(h.GetInfo(&info).ok());
}

TEST_CASE("e2e: deleting the socket or wiping the directory is healed within a second") {
  Harness h;
  h.Start();
  for (int round = 0; round < 2; ++round) {
    if (round == 0) {
      std::filesystem::remove(h.socket_path());
    } else {
      std::filesystem::remove_all(h.sock_dir());
    }
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE(h.WaitServing(std::chrono::milliseconds(3000)));
    auto took = std::chrono::steady_clock::now() - t0;
    INFO("re-served after " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                            << " ms");
    CHECK(took < std::chrono::milliseconds(1000));
  }
}

TEST_CASE("e2e: every --qrm-socket-dirs directory gets a socket") {
  Harness h;
  const std::string second = h.root() + "/second";
  auto flags = FixtureFlags();
  flags.push_back("--qrm-socket-dirs=" + h.sock_dir() + "," + second);
  h.Start(flags);
  // Start returns once the first directory's socket answers; the others are bound right after
  // it, so give them a moment rather than racing the daemon.
  const std::string second_sock = second + "/qrm_network_plugin_static.sock";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!std::filesystem::exists(second_sock) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(std::filesystem::exists(second_sock));
  auto ch = grpc::CreateChannel("unix://" + second + "/qrm_network_plugin_static.sock",
                                grpc::InsecureChannelCredentials());
  auto stub = reg::Registration::NewStub(ch);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  reg::PluginInfo info;
  CHECK(stub->GetInfo(&ctx, reg::InfoRequest(), &info).ok());
}

TEST_CASE("e2e: what netqosd creates is root's alone, whatever its umask") {
  Harness h;
  const mode_t before = ::umask(0);  // the daemon inherits a permissive umask
  h.Start();
  ::umask(before);
  reg::PluginInfo info;
  REQUIRE(h.GetInfo(&info).ok());
  auto mode = [](const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
  };
  CHECK(mode(h.sock_dir()) == 0700);
  CHECK(mode(h.socket_path()) == 0600);
  CHECK(mode(h.state_dir()) == 0700);
  // The journal and snapshot it wrote at start: the state names every pod.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(h.state_dir())) {
    if (!e.is_regular_file()) continue;
    INFO(e.path());
    CHECK(mode(e.path().string()) == 0600);
    ++files;
  }
  CHECK(files > 0);
}
