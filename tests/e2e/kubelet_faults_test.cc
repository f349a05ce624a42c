// Kubelet-side faults: a registration the kubelet never confirms (or refuses), calls cut by
// deadlines and cancellation, client processes killed mid-call, connections closed inside an
// HTTP/2 frame, and the socket deleted or its directory wiped while clients are calling. In each
// case the daemon keeps serving, a call is applied entirely or not at all, a request that never
// arrived whole is never applied, and afterwards the books equal the acknowledged operations.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/daemon_books.h"
#include "e2e/kubelet_harness.h"
#include "e2e/raw_http2.h"

using namespace netqos::e2e;
using namespace std::chrono_literals;

namespace {

constexpr char kAllocateMethod[] = "/resourceplugin.v1alpha1.ResourcePlugin/Allocate";

uint64_t Seed() {
  const uint64_t seed = std::random_device{}();
  std::printf("kubelet faults: seed=%llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

// Reads the daemon's books and compares them with the client's, after giving handlers of calls
// the client gave up on time to finish (a cancelled call may still be running in the daemon).
void RequireBooksExact(Harness& h, AckedBooks& books, const std::string& when,
                       AckedBooks::Outcome* out = nullptr) {
  std::this_thread::sleep_for(500ms);
  const DaemonState state = ReadDaemonState(h);
  std::vector<std::string> violations = CheckNicInvariants(state);
  auto outcome = books.Reconcile(state.books);
  violations.insert(violations.end(), outcome.violations.begin(), outcome.violations.end());
  INFO(when << ":\n" << JoinLines(violations));
  REQUIRE(violations.empty());
  if (out != nullptr) *out = outcome;
}

// Presence of one container, through the kubelet's own read.
bool Holds(Harness& h, const std::string& uid, const std::string& container) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  rp::GetTopologyAwareResourcesRequest q;
  q.set_pod_uid(uid);
  q.set_container_name(container);
  rp::GetTopologyAwareResourcesResponse tr;
  return h.Plugin()->GetTopologyAwareResources(&ctx, q, &tr).ok() &&
         tr.has_container_topology_aware_resources();
}

// A plain, answered Allocate: the daemon still serves and still allocates.
void RequireServes(Harness& h, AckedBooks& books, const std::string& uid) {
  reg::PluginInfo info;
  REQUIRE(h.GetInfo(&info).ok());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  rp::ResourceAllocationResponse resp;
  auto st = h.Plugin()->Allocate(&ctx, StormRequest(uid, "c0", 10, 0), &resp);
  INFO(st.error_message());
  REQUIRE(st.ok());
  books.Allocated(
      uid, "c0",
      Held{resp.allocation_result().resource_allocation().at(kResource).annotations().at(
               kNicNameAnnotation),
           10});
}

size_t CountLines(const std::string& log, const std::vector<std::string>& needles) {
  std::istringstream in(log);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    bool all = true;
    for (const auto& w : needles) all = all && line.find(w) != std::string::npos;
    n += all ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_CASE("e2e: kubelet faults: a registration never confirmed or refused does not stop serving") {
  Harness h;
  h.Start();
  AckedBooks books;
  // The kubelet called GetInfo (the harness did, to see the daemon serving) and never confirms.
  for (int i = 0; i < 3; ++i) {
    reg::PluginInfo info;
    REQUIRE(h.GetInfo(&info).ok());
  }
  RequireServes(h, books, "unconfirmed");

  // The kubelet refuses the registration: logged as a warning with its error, still serving.
  auto notify = [&](bool registered, const std::string& error) {
    auto stub = reg::Registration::NewStub(h.Channel());
    grpc::ClientContext ctx;
    reg::RegistrationStatus status;
    status.set_plugin_registered(registered);
    status.set_error(error);
    reg::RegistrationStatusResponse resp;
    return stub->NotifyRegistrationStatus(&ctx, status, &resp);
  };
  REQUIRE(notify(false, "RegisterPlugin error -- plugin name conflict").ok());
  RequireServes(h, books, "refused-1");
  REQUIRE(notify(false, "RegisterPlugin error -- plugin name conflict").ok());
  RequireServes(h, books, "refused-2");
  CHECK(std::filesystem::exists(h.socket_path()));
  // Then accepted (the kubelet retried).
  REQUIRE(notify(true, "").ok());
  RequireServes(h, books, "accepted");

  const std::string log = h.daemon().Log();
  CHECK(CountLines(log, {"kubelet rejected registration", "plugin name conflict"}) == 2);
  CHECK(CountLines(log, {"registered with kubelet"}) == 1);
  CHECK(h.daemon().Running());
  RequireBooksExact(h, books, "after the registration faults");
}

TEST_CASE("e2e: kubelet faults: a registration left unconfirmed is reported, once per round") {
  Harness h;
  std::vector<std::string> flags = FixtureFlags();
  flags.push_back("--kubelet-registration-timeout=1");
  h.Start(flags);  // its GetInfo stands for the kubelet's: a round opens and is never answered
  auto status = [&] {
    auto r = h.Ctl({"status", "--json", "--bpf-pin-dir=" + h.root() + "/no-pins"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.output)["daemon"]["kubelet_registration"];
  };
  auto warnings = [&] {
    return CountLines(h.daemon().Log(), {"level=warn", "kubelet registration unconfirmed"});
  };
  // Polled every half timeout: reported within a few seconds, and only once however long.
  const auto t0 = std::chrono::steady_clock::now();
  while (warnings() == 0 && std::chrono::steady_clock::now() - t0 < 10s) {
    std::this_thread::sleep_for(100ms);
  }
  std::this_thread::sleep_for(2s);
  CHECK(warnings() == 1);
  auto k = status();
  CHECK(k["state"] == "unconfirmed");
  CHECK(k["get_info_calls"].get<int>() >= 1);
  CHECK(k["seconds_since_get_info"].get<double>() >= 1);
  auto text = h.Ctl({"status", "--bpf-pin-dir=" + h.root() + "/no-pins"});
  CHECK_THAT(text.output,
             Catch::Contains("UNCONFIRMED: GetInfo answered, no NotifyRegistrationStatus"));

  // Deleting the socket makes the daemon re-serve it and dial-check it with its own GetInfo:
  // that is not the kubelet's, so the round stays as it was.
  const uint64_t calls = k["get_info_calls"].get<uint64_t>();
  REQUIRE(std::filesystem::remove(h.socket_path()));
  const auto t1 = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(h.socket_path()) && std::chrono::steady_clock::now() - t1 < 10s) {
    std::this_thread::sleep_for(50ms);
  }
  REQUIRE(std::filesystem::exists(h.socket_path()));
  k = status();
  CHECK(k["get_info_calls"].get<uint64_t>() == calls);
  CHECK(k["state"] == "unconfirmed");

  // The verdict arrives late: registered, and said so in the log.
  auto stub = reg::Registration::NewStub(h.Channel());
  grpc::ClientContext ctx;
  reg::RegistrationStatus verdict;
  verdict.set_plugin_registered(true);
  reg::RegistrationStatusResponse resp;
  REQUIRE(stub->NotifyRegistrationStatus(&ctx, verdict, &resp).ok());
  CHECK(status()["state"] == "registered");
  const auto t2 = std::chrono::steady_clock::now();
  while (CountLines(h.daemon().Log(), {"verdict arrived after the warning"}) == 0 &&
         std::chrono::steady_clock::now() - t2 < 5s) {
    std::this_thread::sleep_for(100ms);
  }
  CHECK(CountLines(h.daemon().Log(), {"verdict arrived after the warning", "state=registered"}) ==
        1);
  CHECK(warnings() == 1);
}

TEST_CASE(
    "e2e: kubelet faults: calls cut by deadlines or cancelled are applied whole or not at all") {
  Harness h;
  h.Start();
  AckedBooks books;
  std::mt19937_64 rng(Seed());
  auto plugin = h.Plugin();
  int answered = 0, cut = 0;
  AckedBooks::Outcome total;
  for (int round = 0; round < 4; ++round) {
    std::vector<std::string> acked_pods;
    for (const auto& [uid, cs] : books.Acked()) acked_pods.push_back(uid);
    for (int i = 0; i < 50; ++i) {
      const bool remove = !acked_pods.empty() && rng() % 3 == 0;
      const std::string uid =
          remove ? acked_pods.back() : "cut-" + std::to_string(round) + "-" + std::to_string(i);
      if (remove) acked_pods.pop_back();  // one call per pod until the books are reconciled
      const auto mbps = static_cast<uint32_t>(10 + rng() % 200);
      const bool cancel = rng() % 2 == 0;
      // Deadlines from 1 µs (expired before the request leaves) to 2 ms (mid-handler).
      const auto delay = std::chrono::microseconds(rng() % 3 == 0 ? 1 : rng() % 2000);
      grpc::ClientContext ctx;
      if (!cancel) ctx.set_deadline(std::chrono::system_clock::now() + delay);
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      grpc::Status status;
      auto on_done = [&](grpc::Status s) {
        std::lock_guard lk(mu);
        status = std::move(s);
        done = true;
        cv.notify_all();
      };
      rp::RemovePodRequest rm;
      rp::RemovePodResponse rm_resp;
      rp::ResourceRequest req = StormRequest(uid, "c0", mbps, static_cast<uint32_t>(rng()));
      rp::ResourceAllocationResponse resp;
      if (remove) {
        rm.set_pod_uid(uid);
        plugin->async()->RemovePod(&ctx, &rm, &rm_resp, on_done);
      } else {
        plugin->async()->Allocate(&ctx, &req, &resp, on_done);
      }
      if (cancel) {
        std::this_thread::sleep_for(delay);
        ctx.TryCancel();
      }
      std::unique_lock lk(mu);
      cv.wait(lk, [&] { return done; });
      if (status.ok()) {
        ++answered;
        if (remove) {
          books.Removed(uid);
        } else {
          books.Allocated(
              uid, "c0",
              Held{resp.allocation_result().resource_allocation().at(kResource).annotations().at(
                       kNicNameAnnotation),
                   mbps});
        }
        continue;
      }
      INFO(status.error_code() << " " << status.error_message());
      REQUIRE((status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
               status.error_code() == grpc::StatusCode::CANCELLED ||
               status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED));
      if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) continue;
      ++cut;
      if (remove) {
        books.RemoveUnknown(uid);
      } else {
        books.AllocateUnknown(uid, "c0", mbps);
      }
    }
    AckedBooks::Outcome o;
    RequireBooksExact(h, books, "round " + std::to_string(round), &o);
    total.unknown_applied += o.unknown_applied;
    total.unknown_not_applied += o.unknown_not_applied;
  }
  std::printf("cut calls: %d answered, %d cut (%d applied, %d not)\n", answered, cut,
              total.unknown_applied, total.unknown_not_applied);
  CHECK(cut > 0);
  RequireServes(h, books, "after-cuts");
  // Nothing applied late: the books still hold a second later.
  std::this_thread::sleep_for(700ms);
  RequireBooksExact(h, books, "a second later");
  CHECK(h.daemon().Running());
}

// Turns LeakSanitizer off for the processes spawned while it lives (a no-op in builds without
// ASan). For clients SIGKILLed at random points on purpose: a kill that lands while LeakSanitizer
// scans an exiting client makes it report that it could not read the dying threads' registers,
// which is no finding. netqosctl's leaks are checked where it exits normally (the other tests).
class NoLeakCheckForChildren {
 public:
  NoLeakCheckForChildren() {
    if (const char* v = std::getenv("ASAN_OPTIONS")) saved_ = v;
    const std::string opts =
        saved_ && !saved_->empty() ? *saved_ + ":detect_leaks=0" : "detect_leaks=0";
    ::setenv("ASAN_OPTIONS", opts.c_str(), 1);
  }
  ~NoLeakCheckForChildren() {
    if (saved_) {
      ::setenv("ASAN_OPTIONS", saved_->c_str(), 1);
    } else {
      ::unsetenv("ASAN_OPTIONS");
    }
  }
  NoLeakCheckForChildren(const NoLeakCheckForChildren&) = delete;
  NoLeakCheckForChildren& operator=(const NoLeakCheckForChildren&) = delete;

 private:
  std::optional<std::string> saved_;
};

TEST_CASE("e2e: kubelet faults: client processes killed mid-call leave the books exact") {
  Harness h;
  h.Start();
  const NoLeakCheckForChildren no_leak_check;  // after the daemon's start: it keeps its check
  AckedBooks books;
  std::mt19937_64 rng(Seed());
  int completed = 0, killed = 0, applied = 0;
  for (int round = 0; round < 6; ++round) {
    struct Running {
      pid_t pid;
      std::string uid, out;
      uint32_t mbps;
      bool remove;
    };
    std::vector<Running> procs;
    std::vector<std::string> acked_pods;
    for (const auto& [uid, cs] : books.Acked()) acked_pods.push_back(uid);
    for (int i = 0; i < 8; ++i) {
      Running r;
      r.remove = !acked_pods.empty() && rng() % 3 == 0;
      r.mbps = static_cast<uint32_t>(10 + rng() % 200);
      r.out = h.root() + "/client-" + std::to_string(i) + ".out";
      std::vector<std::string> argv = {NETQOSCTL_PATH, "--socket=" + h.socket_path(), "--json"};
      if (r.remove) {
        r.uid = acked_pods.back();
        acked_pods.pop_back();
        argv.insert(argv.end(), {"remove", "--pod-uid=" + r.uid});
      } else {
        r.uid = "proc-" + std::to_string(round) + "-" + std::to_string(i);
        argv.insert(argv.end(),
                    {"allocate", "--pod-uid=" + r.uid, "--pod-name=test", "--container=c0",
                     "--qos=shared_cores", "--mbps=" + std::to_string(r.mbps)});
      }
      ::unlink(r.out.c_str());
      r.pid = netqos::testing::Spawn(argv, r.out);
      procs.push_back(r);
    }
    // Kill each at a random point of its life (it needs ~20-100 ms here): before it connects,
    // mid-call, or after it is done.
    std::vector<std::pair<std::chrono::microseconds, pid_t>> kills;
    for (const auto& r : procs) kills.emplace_back(rng() % 150000, r.pid);
    std::sort(kills.begin(), kills.end());
    const auto spawned = std::chrono::steady_clock::now();
    for (const auto& [at, pid] : kills) {
      std::this_thread::sleep_until(spawned + at);
      ::kill(pid, SIGKILL);
    }
    for (auto& r : procs) {
      int status = 0;
      ::waitpid(r.pid, &status, 0);
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok) {
        ++killed;
        r.remove ? books.RemoveUnknown(r.uid) : books.AllocateUnknown(r.uid, "c0", r.mbps);
        continue;
      }
      ++completed;
      if (r.remove) {
        books.Removed(r.uid);
        continue;
      }
      auto doc = nlohmann::json::parse(netqos::testing::ReadFile(r.out));
      books.Allocated(r.uid, "c0",
                      Held{doc["allocation_result"][kResource]["annotations"][kNicNameAnnotation]
                               .get<std::string>(),
                           r.mbps});
    }
    AckedBooks::Outcome o;
    RequireBooksExact(h, books, "round " + std::to_string(round), &o);
    applied += o.unknown_applied;
  }
  std::printf("client processes: %d completed, %d killed (%d of them applied)\n", completed, killed,
              applied);
  CHECK(killed > 0);
  RequireServes(h, books, "after-kills");
  CHECK(h.daemon().Running());
}

TEST_CASE("e2e: kubelet faults: connections cut inside an HTTP/2 frame change nothing") {
  Harness h;
  h.Start();
  AckedBooks books;
  auto message = [](const std::string& uid) {
    return RawH2::GrpcMessage(StormRequest(uid, "c0", 100, 0).SerializeAsString());
  };
  const std::string opening = RawH2::Preface() + RawH2::Settings();

  // Control: the hand-built call, sent whole, is an Allocate the daemon applies; so the cut
  // variants below fail because they are cut, not because the framing is wrong.
  {
    RawH2Connection c(h.socket_path());
    c.Send(opening + RawH2::Headers(1, kAllocateMethod) + RawH2::Data(1, message("raw-whole")));
    const std::string answer = c.Receive(2000);
    INFO("answer bytes: " << answer.size());
    REQUIRE(Holds(h, "raw-whole", "c0"));
    books.AllocateUnknown("raw-whole", "c0", 100);  // its answer is not decoded here
  }
  RequireBooksExact(h, books, "after the hand-built call");

  // Requests that never arrived whole: must never be applied.
  const std::string headers = RawH2::Headers(1, kAllocateMethod);
  const std::string msg = message("raw-cut-data");
  const std::string data_frame = RawH2::Data(1, msg);
  const std::vector<std::pair<std::string, std::string>> cut = {
      {"connect and close", ""},
      {"half a preface", opening.substr(0, 10)},
      {"half a HEADERS frame", opening + headers.substr(0, headers.size() / 2)},
      {"HEADERS only", opening + headers},
      {"half a DATA frame", opening + headers + data_frame.substr(0, 9 + msg.size() / 2)},
      {"DATA frame header only", opening + headers + data_frame.substr(0, 9)},
      {"gRPC length prefix promising more",
       opening + headers +
           RawH2::Data(
               1, RawH2::GrpcMessage(StormRequest("raw-cut-len", "c0", 100, 0).SerializeAsString(),
                                     4096))},
      {"not HTTP/2 at all", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"garbage after the preface", opening + std::string(64, '\xff')},
  };
  for (const auto& [what, bytes] : cut) {
    INFO(what);
    RawH2Connection c(h.socket_path());
    c.Send(bytes);
    c.Close();
  }
  // A whole request whose sender vanishes before the answer: applied or not, as a whole.
  {
    RawH2Connection c(h.socket_path());
    c.Send(opening + headers + RawH2::Data(1, message("raw-vanished")));
    c.Close();
    books.AllocateUnknown("raw-vanished", "c0", 100);
  }
  // A connection stalled inside a DATA frame does not hold anyone else up.
  RawH2Connection stalled(h.socket_path());
  stalled.Send(opening + RawH2::Headers(1, kAllocateMethod) +
               RawH2::Data(1, message("raw-stalled")).substr(0, 20));
  const auto t0 = std::chrono::steady_clock::now();
  RequireServes(h, books, "next-to-stalled");
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took < 2s);

  std::this_thread::sleep_for(500ms);
  for (const char* uid : {"raw-cut-data", "raw-cut-len", "raw-stalled"}) {
    INFO(uid);
    CHECK_FALSE(Holds(h, uid, "c0"));
  }
  stalled.Close();
  RequireBooksExact(h, books, "after the cut connections");
  RequireServes(h, books, "after-cut-connections");
  CHECK(h.daemon().Running());
}

TEST_CASE("e2e: kubelet faults: socket deleted and directory wiped under load lose no call") {
  Harness h;
  h.Start();
  AckedBooks books;
  std::atomic<bool> stop{false};
  std::atomic<int> acked_after_fault{0}, unanswered{0};
  std::atomic<int> faults_done{0};
  std::vector<std::thread> workers;
  for (int k = 0; k < 4; ++k) {
    workers.emplace_back([&, k] {
      std::mt19937_64 rng(static_cast<uint64_t>(k) + 77);
      std::vector<std::string> live;
      auto plugin = h.Plugin();
      for (int i = 0; !stop.load(); ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + 3s);
        if (!live.empty() && (live.size() > 8 || rng() % 3 == 0)) {
          const std::string uid = live.back();
          live.pop_back();
          rp::RemovePodRequest rm;
          rm.set_pod_uid(uid);
          rp::RemovePodResponse rr;
          if (plugin->RemovePod(&ctx, rm, &rr).ok()) {
            books.Removed(uid);
            if (faults_done.load() > 0) acked_after_fault++;
          } else {
            books.RemoveUnknown(uid);  // and never touched again
            unanswered++;
            plugin = h.Plugin();
            std::this_thread::sleep_for(20ms);
          }
          continue;
        }
        const std::string uid = "s" + std::to_string(k) + "-" + std::to_string(i);
        const auto mbps = static_cast<uint32_t>(10 + rng() % 100);
        rp::ResourceAllocationResponse resp;
        auto st = plugin->Allocate(
            &ctx, StormRequest(uid, "c0", mbps, static_cast<uint32_t>(rng())), &resp);
        if (st.ok()) {
          books.Allocated(
              uid, "c0",
              Held{resp.allocation_result().resource_allocation().at(kResource).annotations().at(
                       kNicNameAnnotation),
                   mbps});
          live.push_back(uid);
          if (faults_done.load() > 0) acked_after_fault++;
        } else if (st.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
          books.AllocateUnknown(uid, "c0", mbps);
          unanswered++;
          plugin = h.Plugin();  // a fresh channel, as a kubelet re-dialing the new socket
          std::this_thread::sleep_for(20ms);
        }
      }
    });
  }
  for (int round = 0; round < 6; ++round) {
    std::this_thread::sleep_for(300ms);
    if (round % 2 == 0) {
      std::filesystem::remove(h.socket_path());
    } else {
      std::filesystem::remove_all(h.sock_dir());
    }
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(h.WaitServing(3000ms));
    const auto took = std::chrono::steady_clock::now() - t0;
    INFO("round " << round);
    CHECK(took < 1500ms);
    faults_done++;
  }
  std::this_thread::sleep_for(300ms);
  stop = true;
  for (auto& t : workers) t.join();
  std::printf("socket faults under load: %d calls acknowledged after the first fault, %d cut\n",
              acked_after_fault.load(), unanswered.load());
  CHECK(acked_after_fault.load() > 0);
  RequireBooksExact(h, books, "after the socket faults");
  RequireServes(h, books, "after-socket-faults");
  CHECK(h.daemon().Running());
}
