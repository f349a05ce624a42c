// netqosd with --nri-socket against a private containerd with NRI (support/private_containerd.h):
// when containerd's StartContainer returns, the container's class is in the pinned map already,
// and that still holds after containerd restarts and after netqosd restarts, and netqosd answers
// within the request timeout containerd 2 sends. Hidden ([.]): Debian 12's containerd (1.6) has no
// NRI; CTest runs it with Debian 13's 1.7 and unstable's 2.1
// (tests/cri_integration/nri_real_runtime.sh). A second case: a container that sends at full
// speed from its first instruction is held to its cap from its first packet.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "integration/fixture_pod.h"
#include "shaping/htb_plan.h"
#include "support/daemon_fixture.h"
#include "support/private_containerd.h"

using namespace netqos::testing;
using namespace std::chrono_literals;

namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::seconds bound = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// A TCP sink on ip:port in network namespace `ns`: it accepts one connection and counts the bytes
// that arrived within the first `window` after its first byte, and within `total` after it. A
// read's bytes count at the kernel's receive time of the last packet it read, so that how late
// the sink thread wakes does not move the window; where the kernel gives no time, at the time
// the read returns (a late first read then counts a little more, never less, in the window).
class FirstBytesSink {
 public:
  struct Counts {
    uint64_t first_window = 0;
    uint64_t total = 0;
    uint64_t kernel_stamped = 0, unstamped = 0;  // reads timed by the kernel, by the sink
  };

  FirstBytesSink(const std::string& ns, const std::string& ip, uint16_t port,
                 std::chrono::milliseconds window, std::chrono::milliseconds total)
      : window_(window), total_(total) {
    // A socket stays in the namespace it was made in: make it in a thread that entered `ns`.
    std::string error;
    std::thread([&] {
      const int nsfd = ::open(NetnsPath(ns).c_str(), O_RDONLY | O_CLOEXEC);
      if (nsfd < 0 || ::setns(nsfd, CLONE_NEWNET) != 0) {
        error = "cannot enter network namespace " + ns;
      } else {
        listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
        const int one = 1;
        ::setsockopt(listen_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        // Inherited by the accepted connection, so that its first packet is stamped too.
        ::setsockopt(listen_, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
        if (listen_ < 0 || ::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
            ::listen(listen_, 1) != 0) {
          error = "cannot listen on " + ip + ":" + std::to_string(port) + " in " + ns;
        }
      }
      if (nsfd >= 0) ::close(nsfd);
    }).join();
    if (!error.empty()) {
      if (listen_ >= 0) ::close(listen_);
      throw std::runtime_error(error);
    }
    reader_ = std::thread([this] { Run(); });
  }
  ~FirstBytesSink() {
    stop_ = true;
    if (reader_.joinable()) reader_.join();
    if (conn_ >= 0) ::close(conn_);
    ::close(listen_);
  }
  FirstBytesSink(const FirstBytesSink&) = delete;
  FirstBytesSink& operator=(const FirstBytesSink&) = delete;

  // Waits for the end of the count (at most 20 s for a connection); closes the connection, which
  // ends the sender.
  Counts Wait() {
    reader_.join();
    if (conn_ >= 0) ::close(conn_);
    conn_ = -1;
    return counts_;
  }

 private:
  // When a read's bytes arrived: the kernel's receive time of the last packet it read
  // (SO_TIMESTAMPNS), or the time the read returned when the kernel gives none.
  static int64_t ArrivalNs(msghdr& msg, int64_t returned_ns, bool& kernel) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts{};
        std::memcpy(&ts, CMSG_DATA(c), sizeof(ts));
        const int64_t ns = ts.tv_sec * 1000000000LL + ts.tv_nsec;
        // Sane only if on this clock and not after the read returned.
        if (ns > 0 && ns <= returned_ns && returned_ns - ns < 1000000000LL) {
          kernel = true;
          return ns;
        }
      }
    }
    kernel = false;
    return returned_ns;
  }

  static int64_t RealtimeNs() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
  }

  void Run() {
    using Clock = std::chrono::steady_clock;
    const auto give_up = Clock::now() + std::chrono::seconds(20);
    pollfd p{listen_, POLLIN, 0};
    while (!stop_ && Clock::now() < give_up && ::poll(&p, 1, 100) <= 0) {
    }
    if (stop_ || (p.revents & POLLIN) == 0) return;
    conn_ = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn_ < 0) return;
    // Small reads: the first read's time is its first packet's, not one that came much later.
    std::vector<char> buf(4096);
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
    std::optional<int64_t> first;
    const int64_t window_ns = window_.count() * 1000000LL;
    const int64_t total_ns = total_.count() * 1000000LL;
    while (!stop_ && (first ? RealtimeNs() < *first + total_ns : Clock::now() < give_up)) {
      pollfd c{conn_, POLLIN, 0};
      if (::poll(&c, 1, 100) <= 0) continue;
      iovec iov{buf.data(), buf.size()};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      const ssize_t n = ::recvmsg(conn_, &msg, 0);
      if (n <= 0) return;
      bool kernel = false;
      const int64_t at = ArrivalNs(msg, RealtimeNs(), kernel);
      (kernel ? counts_.kernel_stamped : counts_.unstamped) += 1;
      if (!first) first = at;
      if (at - *first <= window_ns) counts_.first_window += static_cast<uint64_t>(n);
      if (at - *first <= total_ns) counts_.total += static_cast<uint64_t>(n);
    }
  }

  std::chrono::milliseconds window_, total_;
  int listen_ = -1;
  int conn_ = -1;
  std::atomic<bool> stop_{false};
  Counts counts_;
  std::thread reader_;
};

}  // namespace

TEST_CASE("daemon with --nri-socket has a container's class in place when containerd starts it",
          "[.][nri][enforcement][cri]") {
  DaemonFixture env({.tag = "nri", .subnet = 243, .shape_nics = false});
  // A request timeout of containerd's own below its default (2 s): containerd 2 sends it in
  // Configure and netqosd answers within half of it; 1.7 sends none, and netqosd keeps 1 s.
  PrivateContainerd ctrd(/*with_nri=*/true, /*nri_request_timeout=*/1800ms);
  REQUIRE(WaitFor([&] { return std::filesystem::exists(ctrd.nri_socket()); }, 5s));
  const std::vector<std::string> flags = {"--pod-source=cri", "--cri-socket=" + ctrd.endpoint(),
                                          "--nri-socket=" + ctrd.nri_socket(), "--log-level=debug"};
  env.StartDaemon(flags);
  const std::string registered = "nri: registered with containerd";
  REQUIRE(WaitFor([&] { return Count(env.Log(), registered) == 1; }));
  {
    INFO(env.Log());
    if (ctrd.major_version() >= 2) {
      CHECK(
          env.Log().find("event budget lowered to 900 ms, half the runtime's request timeout\n") !=
          std::string::npos);
      CHECK(env.Log().find("runtime_request_timeout_ms=1800 event_budget_ms=900") !=
            std::string::npos);
    } else {
      CHECK(env.Log().find("runtime_request_timeout_ms=none event_budget_ms=1000") !=
            std::string::npos);
    }
  }

  const std::string uid = FakePodUid(1);
  const PrivateContainerd::Pod pod = FixtureHostPod(env, uid, "web-0");
  const std::string sandbox = ctrd.RunSandbox(pod);
  const FakePod p = FakePodOf(pod, "app");

  // As the kubelet: Allocate, then the runtime creates and starts the container. No wait after
  // StartContainer: the runtime waited for netqosd's reply, which came once the class was in.
  auto start = [&](const std::string& name) {
    env.Allocate(p, 100, name);
    const std::string id = ctrd.StartContainer(sandbox, name);
    const std::string cg = env.CgroupRoot() + "/pod" + uid + "/" + id;
    INFO(name << " " << id);
    REQUIRE(std::filesystem::is_directory(cg));
    CHECK(env.ClassOf(cg).has_value());
    CHECK(env.Log().find("nri: class in place before start container=" + id) != std::string::npos);
    CHECK(env.Log().find("nri: container starts before its class was confirmed container=" + id) ==
          std::string::npos);
    return cg;
  };
  const std::string app = start("app");
  INFO(env.Log());

  // containerd restarts: netqosd registers again, and the next container is held as well.
  ctrd.Restart();
  REQUIRE(WaitFor([&] { return Count(env.Log(), registered) == 2; }));
  start("sidecar");

  // netqosd restarts: its new session is told what runs, and holds the next container too.
  REQUIRE(env.StopDaemon(SIGTERM) == 0);
  env.StartDaemon(flags);
  REQUIRE(WaitFor([&] { return Count(env.Log(), registered) == 3; }));
  CHECK(WaitFor([&] {
    return env.Log().find("nri: the runtime has pods=1 containers=2") != std::string::npos;
  }));
  CHECK(env.ClassOf(app).has_value());
  start("late");
}

// The kubelet lists a container's id only after its next status update: with the pod list as
// the pod source (here a file that never lists the pod), the class of a container it does not
// list yet comes from what containerd said through NRI (RunPodSandbox, CreateContainer), still
// before the container starts. Without NRI the enforcer would wait for the pod list.
TEST_CASE(
    "daemon with --nri-socket places the class of a pod the kubelet does not list yet, from what "
    "containerd said",
    "[.][nri][enforcement][cri]") {
  DaemonFixture env({.tag = "nrik", .subnet = 245});
  PrivateContainerd ctrd(/*with_nri=*/true);
  REQUIRE(WaitFor([&] { return std::filesystem::exists(ctrd.nri_socket()); }, 5s));
  env.StartDaemon({"--nri-socket=" + ctrd.nri_socket(), "--log-level=debug"});
  REQUIRE(WaitFor(
      [&] { return env.Log().find("nri: registered with containerd") != std::string::npos; }));

  const std::string uid = FakePodUid(7);
  const PrivateContainerd::Pod pod = FixtureHostPod(env, uid, "unlisted-0");
  const std::string sandbox = ctrd.RunSandbox(pod);
  const FakePod p = FakePodOf(pod, "app");
  env.Allocate(p, 100);
  REQUIRE(env.pods.empty());  // pods.json lists nothing

  const std::string id = ctrd.StartContainer(sandbox, "app");
  const std::string cg = env.CgroupRoot() + "/pod" + uid + "/" + id;
  INFO(env.Log());
  REQUIRE(std::filesystem::is_directory(cg));
  const auto entry = env.ClassOf(cg);
  REQUIRE(entry.has_value());
  CHECK(IsContainerLeaf(entry->priority));
  CHECK(env.Log().find("nri: class in place before start container=" + id) != std::string::npos);
  CHECK(env.Ctl({"classes"}).output.find("unlisted-0") != std::string::npos);
}

// Issue 36: the container's command sends to a TCP sink behind the enforced veth from its first
// instruction, as fast as TCP goes (busybox nc from /dev/zero). With --nri-socket, containerd
// starts it only once its class and leaf are in place, so what reaches the sink in the first
// 100 ms is what the leaf lets through: its rate for 100 ms, plus its full bucket, plus one
// packet. Without it (the cgroup watcher) the first packets may leave before the class is in;
// that number is printed, not asserted: whether the watcher wins that race depends on the host.
TEST_CASE(
    "daemon with --nri-socket caps a container that sends at full speed from its first packet",
    "[.][nri][enforcement][cri]") {
  DaemonFixture env({.tag = "nrif", .subnet = 244});
  PrivateContainerd ctrd(/*with_nri=*/true);
  REQUIRE(WaitFor([&] { return std::filesystem::exists(ctrd.nri_socket()); }, 5s));
  constexpr int kMbps = 20;
  constexpr auto kFirst = 100ms;
  constexpr auto kTotal = 1000ms;
  const uint64_t rate =
      netqos::shaping::BitsToBytes(netqos::shaping::MbitToBits(kMbps));  // bytes per second
  const uint64_t cap_first = rate * kFirst.count() / 1000;
  const uint64_t bucket = netqos::shaping::DefaultBucketBytes(netqos::shaping::MbitToBits(kMbps));
  // HTB sends a packet while the class has tokens left and charges it afterwards, so the leaf
  // overshoots by one packet; on a veth (TSO) that is a GSO packet of up to 64 KiB of payload
  // and its headers. Plus 5 ms of the rate: the first read is timed by the last packet it read,
  // a little after the first byte (or, without kernel stamps, by when the sink thread woke).
  const uint64_t allowance = 65536 + 2 * 1024 + rate * 5 / 1000;
  const uint64_t bound = cap_first + bucket + allowance;

  struct Run {
    FirstBytesSink::Counts counts;
    std::string container;
  };
  auto run = [&](unsigned n, bool nri) {
    std::vector<std::string> flags = {"--pod-source=cri", "--cri-socket=" + ctrd.endpoint(),
                                      "--log-level=debug"};
    if (nri) flags.push_back("--nri-socket=" + ctrd.nri_socket());
    env.StartDaemon(flags);
    if (nri) {
      REQUIRE(WaitFor(
          [&] { return env.Log().find("nri: registered with containerd") != std::string::npos; }));
    }
    const std::string uid = FakePodUid(n);
    const PrivateContainerd::Pod pod = FixtureHostPod(env, uid, "sender-" + std::to_string(n));
    const std::string sandbox = ctrd.RunSandbox(pod);
    const FakePod p = FakePodOf(pod, "sender");
    env.Allocate(p, kMbps);
    const uint16_t port = static_cast<uint16_t>(5300 + n);
    FirstBytesSink sink(env.ns(), env.veth().peer_ip, port, kFirst, kTotal);
    const std::string target = env.veth().peer_ip + " " + std::to_string(port);
    Run r;
    r.container = ctrd.StartContainer(sandbox, "sender",
                                      {"/bin/sh", "-c", "exec nc " + target + " </dev/zero"});
    r.counts = sink.Wait();
    const std::string cg = env.CgroupRoot() + "/pod" + uid + "/" + r.container;
    INFO("container " << r.container);
    CHECK(env.ClassOf(cg).has_value());
    if (nri) {
      CHECK(env.Log().find("nri: class in place before start container=" + r.container) !=
            std::string::npos);
    }
    CHECK(env.StopDaemon(SIGTERM) == 0);
    return r;
  };

  const Run with_nri = run(1, true);
  const Run watcher = run(2, false);
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf(
      "first %lld ms of a full-speed sender capped at %d Mbit/s (bound %llu bytes: %llu of the "
      "rate, %llu bucket, %llu allowance): --nri-socket %llu bytes (%llu in %lld ms), cgroup "
      "watcher %llu bytes (%llu in %lld ms); reads timed by the kernel %llu of %llu\n",
      static_cast<long long>(kFirst.count()), kMbps, u(bound), u(cap_first), u(bucket),
      u(allowance), u(with_nri.counts.first_window), u(with_nri.counts.total),
      static_cast<long long>(kTotal.count()), u(watcher.counts.first_window),
      u(watcher.counts.total), static_cast<long long>(kTotal.count()),
      u(with_nri.counts.kernel_stamped + watcher.counts.kernel_stamped),
      u(with_nri.counts.kernel_stamped + watcher.counts.kernel_stamped + with_nri.counts.unstamped +
        watcher.counts.unstamped));
  // The sender really sends from its first packet and keeps the leaf full: the first window gets
  // at least half the cap's worth, the whole second at least 80 % of it (and, capped, not more
  // than it allows).
  CHECK(with_nri.counts.first_window >= cap_first / 2);
  CHECK(with_nri.counts.total >= rate * 8 / 10);
  CHECK(with_nri.counts.total <= rate + bucket + allowance);
  CHECK(watcher.counts.total >= rate * 8 / 10);
  // The claim: held to the cap from the first packet.
  CHECK(with_nri.counts.first_window <= bound);
}
