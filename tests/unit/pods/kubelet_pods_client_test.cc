#include "pods/kubelet/kubelet_pods_client.h"

#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "support/files.h"
#include "support/kubelet_pod_list.h"
#include "support/temp_dir.h"

namespace {

using netqos::StatusCode;
using netqos::pods::KubeletPodsClient;
using netqos::pods::KubeletPodsClientOptions;
using netqos::pods::ParseKubeletUrl;
using netqos::testing::FetchPods;
using netqos::testing::TempDir;
using netqos::testing::WriteFile;

// A fake kubelet on `host` (127.0.0.1 unless told) with a free port, serving /pods and a few
// failing endpoints.
class FakeKubelet {
 public:
  explicit FakeKubelet(std::string host = "127.0.0.1") : host_(std::move(host)) {
    server_.Get("/pods", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(
          R"({"items":[{"metadata":{"uid":"u1","name":"p","namespace":"n"},
             "status":{"qosClass":"Burstable",
                       "containerStatuses":[{"name":"c","containerID":"containerd://abc"}]}}]})",
          "application/json");
    });
    server_.Get("/broken", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{oops", "application/json");
    });
    server_.Get("/fail", [](const httplib::Request&, httplib::Response& res) { res.status = 500; });
    server_.Get("/denied",
                [](const httplib::Request&, httplib::Response& res) { res.status = 401; });
    port_ = server_.bind_to_any_port(host_);
    if (port_ <= 0) throw std::runtime_error("fake kubelet: cannot bind " + host_);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // The socket listens from bind on; wait for the accept loop so stop() can end it.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeKubelet() {
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) const {
    const bool v6 = host_.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + host_ + "]" : host_) + ":" + std::to_string(port_) + path;
  }

 private:
  std::string host_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

// The client takes the URL as netqosd's flag reader parses it.
KubeletPodsClientOptions Options(const std::string& url) {
  auto parsed = ParseKubeletUrl(url);
  REQUIRE(parsed.ok());
  KubeletPodsClientOptions o;
  o.url = std::move(*parsed);
  o.timeout = std::chrono::milliseconds(2000);
  return o;
}

TEST_CASE("ParseKubeletUrl") {
  auto u = ParseKubeletUrl("http://127.0.0.1:10255/pods");
  REQUIRE(u.ok());
  CHECK(u->scheme == "http");
  CHECK(u->host == "127.0.0.1");
  CHECK(u->port == 10255);
  CHECK(u->path == "/pods");
  CHECK(u->text == "http://127.0.0.1:10255/pods");
  auto s = ParseKubeletUrl("https://node-1");
  REQUIRE(s.ok());
  CHECK(s->port == 443);
  CHECK(s->path == "/");
  CHECK(s->text == "https://node-1");  // as given: what messages name
  auto v6 = ParseKubeletUrl("https://[::1]:10250/pods");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->port == 10250);
  auto f = ParseKubeletUrl("file:///var/lib/netqos/pods.json");
  REQUIRE(f.ok());
  CHECK(f->scheme == "file");
  CHECK(f->host.empty());
  CHECK(f->port == 0);
  CHECK(f->path == "/var/lib/netqos/pods.json");
  for (const char* bad : {"127.0.0.1:10255/pods", "ftp://h/pods", "http://:80/", "http://h:x/",
                          "http://h:70000/", "http://[::1/", "file://host/pods.json",
                          "file://pods.json", "file://", "file:///", "file:"}) {
    auto r = ParseKubeletUrl(bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains(bad));
  }
}

TEST_CASE("KubeletPodsClient: refuses options whose URL the parser did not give") {
  auto empty = KubeletPodsClient::Create(KubeletPodsClientOptions{});
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(empty.status().message(), Catch::Contains("scheme must be http, https or file"));
  KubeletPodsClientOptions gopher;
  gopher.url.scheme = "gopher";
  gopher.url.text = "gopher://h/pods";
  auto refused = KubeletPodsClient::Create(gopher);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(),
             Catch::Contains("gopher://h/pods") && Catch::Contains("\"gopher\""));
}

TEST_CASE("KubeletPodsClient: lists pods over plain http") {
  FakeKubelet kubelet;
  auto client = KubeletPodsClient::Create(Options(kubelet.Url("/pods")));
  REQUIRE(client.ok());
  auto pods = FetchPods(**client);
  REQUIRE(pods.ok());
  REQUIRE(pods->size() == 1);
  CHECK((*pods)[0].uid == "u1");
  REQUIRE((*pods)[0].containers.size() == 1);
  CHECK((*pods)[0].containers[0].id == "abc");
}

TEST_CASE("KubeletPodsClient: an IPv6 kubelet address in brackets is reached") {
  // An IPv6-only node's kubelet: https://[fd00::1]:10250/pods, here on ::1.
  FakeKubelet kubelet("::1");
  auto client = KubeletPodsClient::Create(Options(kubelet.Url("/pods")));
  REQUIRE(client.ok());
  auto pods = FetchPods(**client);
  INFO(kubelet.Url("/pods") << ": " << (pods.ok() ? "" : pods.status().message()));
  REQUIRE(pods.ok());
  CHECK(pods->size() == 1);
}

TEST_CASE("KubeletPodsClient: errors name the URL") {
  FakeKubelet kubelet;
  struct Case {
    std::string path;
    StatusCode code;
  };
  for (const auto& c :
       {Case{"/broken", StatusCode::kInvalidArgument}, Case{"/fail", StatusCode::kUnavailable},
        Case{"/denied", StatusCode::kPermissionDenied},
        Case{"/missing", StatusCode::kUnavailable}}) {
    const std::string url = kubelet.Url(c.path);
    auto client = KubeletPodsClient::Create(Options(url));
    REQUIRE(client.ok());
    auto pods = FetchPods(**client);
    INFO(url);
    REQUIRE_FALSE(pods.ok());
    CHECK(pods.status().code() == c.code);
    CHECK_THAT(pods.status().message(), Catch::Contains(url));
  }
}

TEST_CASE("KubeletPodsClient: connection refused is Unavailable naming the URL") {
  int port = 0;
  {
    httplib::Server s;  // take a free port, then release it
    port = s.bind_to_any_port("127.0.0.1");
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/pods";
  auto client = KubeletPodsClient::Create(Options(url));
  REQUIRE(client.ok());
  auto pods = FetchPods(**client);
  REQUIRE_FALSE(pods.ok());
  CHECK(pods.status().code() == StatusCode::kUnavailable);
  CHECK_THAT(pods.status().message(), Catch::Contains(url));
}

TEST_CASE("KubeletPodsClient: https needs a readable, non-empty token file") {
  TempDir tmp;
  auto opts = Options("https://127.0.0.1:1/pods");
  opts.token_file = tmp.file("absent");
  auto client = KubeletPodsClient::Create(opts);
  REQUIRE(client.ok());
  auto pods = FetchPods(**client);
  REQUIRE_FALSE(pods.ok());
  CHECK(pods.status().code() == StatusCode::kNotFound);
  CHECK_THAT(pods.status().message(), Catch::Contains(tmp.file("absent")));

  WriteFile(tmp.file("empty"), "\n");
  opts.token_file = tmp.file("empty");
  auto empty = FetchPods(**KubeletPodsClient::Create(opts));
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().code() == StatusCode::kFailedPrecondition);

  // With a token, the (closed) port gives a connection error naming the URL.
  WriteFile(tmp.file("token"), "secret\n");
  opts.token_file = tmp.file("token");
  opts.insecure_skip_tls_verify = true;
  auto refused = FetchPods(**KubeletPodsClient::Create(opts));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kUnavailable);
  CHECK_THAT(refused.status().message(), Catch::Contains("https://127.0.0.1:1/pods"));
}

TEST_CASE("KubeletPodsClient: file:// reads the PodList file on every call") {
  TempDir tmp;
  const std::string path = tmp.file("pods.json");
  const std::string url = "file://" + path;
  auto opts = Options(url);
  opts.token_file = tmp.file("no-token");  // never read for file://
  auto client = KubeletPodsClient::Create(opts);
  REQUIRE(client.ok());
  CHECK((*client)->url() == url);

  auto missing = FetchPods(**client);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains(path));

  WriteFile(path, R"({"items":[{"metadata":{"uid":"u1","name":"p","namespace":"n"},
      "status":{"qosClass":"Guaranteed",
                "containerStatuses":[{"name":"c","containerID":"cri-o://abc"}]}}]})");
  auto one = FetchPods(**client);
  REQUIRE(one.ok());
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].uid == "u1");
  REQUIRE((*one)[0].containers.size() == 1);
  CHECK((*one)[0].containers[0].id == "abc");

  // Re-read on every call: a rewritten file is seen without a new client.
  WriteFile(path, R"({"items":[{"metadata":{"uid":"u1","name":"p","namespace":"n"},"status":{}},
                               {"metadata":{"uid":"u2","name":"q","namespace":"n"},"status":{}}]})");
  auto two = FetchPods(**client);
  REQUIRE(two.ok());
  REQUIRE(two->size() == 2);
  CHECK((*two)[1].uid == "u2");

  WriteFile(path, "{oops");
  auto broken = FetchPods(**client);
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(broken.status().message(), Catch::Contains(path));

  // A directory is not a pod list.
  auto dir = FetchPods(**KubeletPodsClient::Create(Options("file://" + tmp.path())));
  REQUIRE_FALSE(dir.ok());
  CHECK_THAT(dir.status().message(), Catch::Contains(tmp.path()));
}

}  // namespace

// A kubelet whose /pods answer is `total` bytes, streamed in 64 KiB chunks; counts what it sent.
class HugeKubelet {
 public:
  explicit HugeKubelet(size_t total) {
    server_.Get("/pods", [this, total](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("application/json",
                                       [this, total](size_t, httplib::DataSink& sink) {
                                         if (sent_ >= total) {
                                           sink.done();
                                           return true;
                                         }
                                         const std::string chunk(64 << 10, ' ');
                                         if (!sink.write(chunk.data(), chunk.size())) return false;
                                         sent_ += chunk.size();
                                         return true;
                                       });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("huge kubelet: cannot bind");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~HugeKubelet() {
    server_.stop();
    thread_.join();
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/pods"; }
  size_t sent() const { return sent_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<size_t> sent_{0};
};

TEST_CASE("KubeletPodsClient: a pod list body over the limit is cut off while it streams") {
  // 1 GiB offered, 1 MiB allowed: the client stops reading at the limit, so the server gets no
  // further than what the socket buffers hold beyond it.
  HugeKubelet kubelet(size_t{1} << 30);
  auto opts = Options(kubelet.Url());
  opts.max_body_bytes = size_t{1} << 20;
  auto client = KubeletPodsClient::Create(opts);
  REQUIRE(client.ok());
  auto pods = (*client)->FetchPodList();
  REQUIRE_FALSE(pods.ok());
  INFO(pods.status().message());
  CHECK(pods.status().code() == StatusCode::kResourceExhausted);
  CHECK_THAT(pods.status().message(), Catch::Contains(kubelet.Url()));
  CHECK_THAT(pods.status().message(), Catch::Contains("limit of 1048576 bytes (1 MiB)"));
  CHECK(kubelet.sent() < (size_t{64} << 20));
}

TEST_CASE("KubeletPodsClient: a pod list file over the limit is refused before it is read") {
  TempDir tmp;
  const std::string path = tmp.file("pods.json");
  WriteFile(path, "");
  // Sparse: 1 GiB that takes no disk, and would take 1 GiB of memory to read whole.
  REQUIRE(::truncate(path.c_str(), off_t{1} << 30) == 0);
  auto client = KubeletPodsClient::Create(Options("file://" + path));
  REQUIRE(client.ok());
  auto pods = (*client)->FetchPodList();
  REQUIRE_FALSE(pods.ok());
  INFO(pods.status().message());
  CHECK(pods.status().code() == StatusCode::kResourceExhausted);
  CHECK_THAT(pods.status().message(), Catch::Contains(path));
  CHECK_THAT(pods.status().message(), Catch::Contains("limit of 134217728 bytes (128 MiB)"));
}

TEST_CASE("KubeletPodsClient: a token file over the limit is refused before it is read") {
  TempDir tmp;
  const std::string token = tmp.file("token");
  WriteFile(token, "");
  REQUIRE(::truncate(token.c_str(), off_t{1} << 30) == 0);
  auto opts = Options("https://127.0.0.1:1/pods");
  opts.token_file = token;
  auto pods = (*KubeletPodsClient::Create(opts))->FetchPodList();
  REQUIRE_FALSE(pods.ok());
  INFO(pods.status().message());
  CHECK(pods.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(pods.status().message(), Catch::Contains(token));
  CHECK_THAT(pods.status().message(), Catch::Contains("limit of 65536 bytes (64 KiB)"));
}
