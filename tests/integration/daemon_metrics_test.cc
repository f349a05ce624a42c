// The metrics endpoint of the real netqosd with --enforcement=bpf: a container (a cgroup under an
// extra kubepods root, listed in a file:// pod list, allocated through gRPC) sends a known amount
// of UDP and TCP over a veth into a namespace, and netqos_container_bytes_total{direction="egress"}
// for it moves by what it sent (IP bytes), within a few percent. /metrics is parsed with the strict
// text-format parser; /healthz and /readyz answer 200 once the first enforcement pass is done.
// The shared DaemonFixture, without --enforce-nics (classify and count only): private bpffs,
// temp dirs, `netqosd --uninstall` at the end. Root only.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/daemon_fixture.h"

namespace {

using namespace std::chrono_literals;
using netqos::testing::DaemonFixture;
using netqos::testing::InodeOf;
using netqos::testing::PromDocument;
using netqos::testing::PromLabels;

constexpr uint16_t kUdpPort = 15471;
constexpr uint16_t kTcpPort = 15472;
constexpr size_t kUdpPayload = 1000;
constexpr int kUdpDatagrams = 4000;
constexpr size_t kTcpBytes = 16u << 20;
constexpr size_t kIpUdpHeaders = 20 + 8;

// Receivers for the sender's traffic inside the peer namespace, so nothing is refused: a UDP
// socket and a TCP listener drained by threads that entered the namespace (setns is per thread).
class Sink {
 public:
  Sink(const std::string& netns, const std::string& ip) {
    std::atomic<int> ready{0};
    std::mutex error_mu;
    std::string error;
    for (int kind : {SOCK_DGRAM, SOCK_STREAM}) {
      threads_.emplace_back([this, netns, ip, kind, &ready, &error, &error_mu] {
        const int nsfd = ::open(("/var/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
        int fd = -1;
        if (nsfd >= 0 && ::setns(nsfd, CLONE_NEWNET) == 0) {
          fd = ::socket(AF_INET, kind | SOCK_CLOEXEC, 0);
          sockaddr_in a{};
          a.sin_family = AF_INET;
          a.sin_port = htons(kind == SOCK_DGRAM ? kUdpPort : kTcpPort);
          ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
          const int one = 1;
          ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
          if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
              (kind == SOCK_STREAM && ::listen(fd, 4) != 0)) {
            ::close(fd);
            fd = -1;
          }
        }
        if (nsfd >= 0) ::close(nsfd);
        if (fd < 0) {
          std::lock_guard lk(error_mu);
          error = std::string("sink in ") + netns + ": " + std::strerror(errno);
          ++ready;
          return;
        }
        ++ready;
        Drain(fd, kind);
        ::close(fd);
      });
    }
    while (ready < 2) std::this_thread::sleep_for(1ms);
    if (!error.empty()) {
      Stop();
      throw std::runtime_error(error);
    }
  }
  ~Sink() { Stop(); }
  uint64_t tcp_bytes() const { return tcp_bytes_; }

 private:
  // Reads until Stop(); a TCP connection is closed when its sender shuts down (so the sender's
  // final recv sees the end).
  void Drain(int fd, int kind) {
    static thread_local char buf[1 << 16];
    std::vector<int> conns;
    while (!stop_) {
      std::vector<pollfd> fds = {{fd, POLLIN, 0}};
      for (int c : conns) fds.push_back({c, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        if (kind == SOCK_DGRAM) {
          while (::recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
          }
        } else if (int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC); c >= 0) {
          conns.push_back(c);
        }
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n;
        while ((n = ::recv(fds[i].fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
          tcp_bytes_ += static_cast<uint64_t>(n);
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
          ::close(fds[i].fd);
          conns.erase(std::find(conns.begin(), conns.end(), fds[i].fd));
        }
      }
    }
    for (int c : conns) ::close(c);
  }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> tcp_bytes_{0};
  std::vector<std::thread> threads_;
};

// Forks a child that joins `cgroup`, sends, and exits 0 when every byte was accepted by the
// kernel. Only async-signal-safe calls after fork (the test process has threads).
// Sends from a child process in `cgroup`; its exit status (0: all sent). For TCP, `*retrans`
// gets the bytes the sender retransmitted (tcp_info): sent again, so counted again.
int SendFromCgroup(const std::string& cgroup, const std::string& ip, bool tcp,
                   uint64_t* retrans = nullptr) {
  const std::string procs = cgroup + "/cgroup.procs";
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  static char payload[1 << 16];
  std::memset(payload, 'x', sizeof(payload));
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(tcp ? kTcpPort : kUdpPort);
  ::inet_pton(AF_INET, ip.c_str(), &to.sin_addr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int cg = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (cg < 0 || ::write(cg, "0", 1) != 1) ::_exit(10);
    ::close(cg);
    const int fd = ::socket(AF_INET, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
    if (fd < 0) ::_exit(11);
    if (tcp) {
      if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) ::_exit(12);
      size_t left = kTcpBytes;
      while (left > 0) {
        const size_t chunk = left < sizeof(payload) ? left : sizeof(payload);
        const ssize_t n = ::send(fd, payload, chunk, MSG_NOSIGNAL);
        if (n <= 0) ::_exit(13);
        left -= static_cast<size_t>(n);
      }
      ::shutdown(fd, SHUT_WR);
      char b;
      while (::recv(fd, &b, 1, 0) > 0) {
      }
      tcp_info info{};
      socklen_t len = sizeof(info);
      uint64_t bytes = 0;
      if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0)
        bytes = info.tcpi_bytes_retrans;
      if (::write(report[1], &bytes, sizeof(bytes)) != sizeof(bytes)) ::_exit(15);
    } else {
      for (int i = 0; i < kUdpDatagrams; ++i) {
        // A full socket buffer (ENOBUFS/EAGAIN) is retried: only accepted datagrams count.
        int tries = 0;
        while (::sendto(fd, payload, kUdpPayload, 0, reinterpret_cast<sockaddr*>(&to),
                        sizeof(to)) != static_cast<ssize_t>(kUdpPayload)) {
          if (++tries > 1000) ::_exit(14);
          const timespec ts{0, 1000000};
          ::nanosleep(&ts, nullptr);
        }
        if (i % 200 == 199) {  // pace a little so the sink keeps up
          const timespec ts{0, 2000000};
          ::nanosleep(&ts, nullptr);
        }
      }
    }
    ::close(fd);
    ::_exit(0);
  }
  ::close(report[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  uint64_t bytes = 0;
  if (::read(report[0], &bytes, sizeof(bytes)) == sizeof(bytes) && retrans != nullptr) {
    *retrans = bytes;
  }
  ::close(report[0]);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE(
    "daemon metrics: a container's egress bytes are counted within a few percent of what it sent",
    "[metrics]") {
  DaemonFixture env({.tag = "m",
                     .subnet = 246,
                     .pod_namespace = "netqos-mtest",
                     .pod_qos_level = "",
                     .shape_nics = false,
                     .metrics = true,
                     .wait_serving = false});
  const auto& pod = env.AddPod(0xaaaaaaaa, "sender");
  const std::string container_cgroup = env.MakeCgroup(pod);
  env.StartDaemon();
  const int port = env.MetricsPort();
  INFO(env.Log());
  REQUIRE(port > 0);

  // Ready once the first enforcement pass is done (it runs beside serving).
  std::optional<int> ready_code;
  for (int i = 0; i < 100 && ready_code != 200; ++i) {
    if (auto code = env.MetricsStatus("/readyz")) ready_code = code;
    if (ready_code != 200) std::this_thread::sleep_for(50ms);
  }
  CHECK(ready_code == 200);
  auto health = env.MetricsStatus("/healthz");
  REQUIRE(health);
  CHECK(*health == 200);

  REQUIRE_NOTHROW(env.Allocate(pod, 100));

  const std::string cgroup_id = std::to_string(InodeOf(container_cgroup));
  const PromLabels egress = {{"cgroup_id", cgroup_id}, {"direction", "egress"}};
  // The enforcer classifies the container (the pod list, the cgroup) and then applies the
  // allocation (the Allocate event): wait for the allocated series.
  std::optional<PromDocument> doc;
  for (int i = 0; i < 100; ++i) {
    doc = env.Scrape();
    if (doc->Find("netqos_container_allocated_bytes_per_second", egress)) break;
    std::this_thread::sleep_for(100ms);
  }
  REQUIRE(doc->Find("netqos_container_bytes_total", egress));
  const PromLabels container = {{"cgroup_id", cgroup_id}};
  const auto series = doc->Samples("netqos_container_bytes_total", egress).front();
  CHECK(series.labels.at("namespace") == "netqos-mtest");
  CHECK(series.labels.at("pod") == "sender");
  CHECK(series.labels.at("container") == "app");
  const std::string class_id = series.labels.at("class_id");
  CHECK(doc->Value("netqos_enforcement_mode", {{"mode", "bpf"}}) == 1);
  CHECK(doc->Value("netqos_enforcement_passes_total") > 0);
  CHECK(doc->Value("netqos_enforcement_pods_known") == 1);
  CHECK(doc->Value("netqos_container_allocated_bytes_per_second", egress) == 100e6 / 8);
  CHECK(doc->Value("netqos_nic_allocated_bytes_per_second",
                   {{"nic", env.host()}, {"direction", "egress"}}) == 100e6 / 8);

  Sink sink(env.ns(), env.veth().peer_ip);
  const double bytes0 = doc->Value("netqos_container_bytes_total", egress);
  const double packets0 = doc->Value("netqos_container_packets_total", egress);
  const double class0 =
      doc->Value("netqos_class_bytes_total", {{"class_id", class_id}, {"direction", "egress"}});

  SECTION("UDP") {
    REQUIRE(SendFromCgroup(container_cgroup, env.veth().peer_ip, false) == 0);
    const double sent_ip = static_cast<double>(kUdpDatagrams) * (kUdpPayload + kIpUdpHeaders);
    const PromDocument after = env.Scrape();
    const double counted = after.Value("netqos_container_bytes_total", egress) - bytes0;
    const double packets = after.Value("netqos_container_packets_total", egress) - packets0;
    std::printf(
        "metrics: UDP sent %.0f IP bytes in %d datagrams; counted %.0f bytes, %.0f "
        "packets (%.3f%%)\n",
        sent_ip, kUdpDatagrams, counted, packets, 100.0 * (counted - sent_ip) / sent_ip);
    CHECK(counted == Approx(sent_ip).epsilon(0.02));
    CHECK(packets == Approx(kUdpDatagrams).epsilon(0.02));
    CHECK(
        after.Value("netqos_class_bytes_total", {{"class_id", class_id}, {"direction", "egress"}}) -
            class0 >=
        counted);
  }
  SECTION("TCP") {
    uint64_t retrans = 0;
    REQUIRE(SendFromCgroup(container_cgroup, env.veth().peer_ip, true, &retrans) == 0);
    // What left the socket: the payload, and again what was retransmitted (on a loaded machine
    // the veth's backlog drops a few segments).
    const double sent = static_cast<double>(kTcpBytes + retrans);
    const PromDocument after = env.Scrape();
    const double counted = after.Value("netqos_container_bytes_total", egress) - bytes0;
    std::printf(
        "metrics: TCP sent %llu payload bytes and retransmitted %llu (sink read %llu); counted "
        "%.0f IP bytes (%.3f%% over)\n",
        static_cast<unsigned long long>(kTcpBytes), static_cast<unsigned long long>(retrans),
        static_cast<unsigned long long>(sink.tcp_bytes()), counted,
        100.0 * (counted - sent) / sent);
    // IP and TCP headers (once per GSO packet) and the handshake come on top of the payload.
    CHECK(counted >= sent);
    // At most 52 header bytes per 1448-byte segment (3.6 %) when GSO cannot merge any.
    CHECK(counted == Approx(sent).epsilon(0.04));
  }
  auto again = env.MetricsStatus("/healthz");
  REQUIRE(again);
  CHECK(*again == 200);
}
