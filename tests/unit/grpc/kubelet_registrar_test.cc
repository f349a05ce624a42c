// KubeletRegistrar against a fake kubelet Registration server on a real unix socket.
#include "grpc/kubelet_registrar.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>
#include <vector>

#include "core/constants.h"
#include "resourceplugin/v1alpha1/api.grpc.pb.h"
#include "support/temp_dir.h"
#include "unit/grpc/grpc_test_util.h"

namespace netqos::grpcadapter {
namespace {

using namespace std::chrono_literals;
namespace rp = ::resourceplugin::v1alpha1;

class FakeKubelet final : public rp::Registration::Service {
 public:
  grpc::Status Register(grpc::ServerContext*, const rp::RegisterRequest* req, rp::Empty*) override {
    std::lock_guard lk(mu_);
    requests_.push_back(*req);
    if (reject_) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "rejected");
    return grpc::Status::OK;
  }
  std::vector<rp::RegisterRequest> requests() {
    std::lock_guard lk(mu_);
    return requests_;
  }
  void set_reject(bool r) {
    std::lock_guard lk(mu_);
    reject_ = r;
  }

 private:
  std::mutex mu_;
  std::vector<rp::RegisterRequest> requests_;
  bool reject_ = false;
};

std::unique_ptr<grpc::Server> ServeKubelet(const std::string& path, FakeKubelet& svc) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(&svc);
  auto server = builder.BuildAndStart();
  REQUIRE(server);
  return server;
}

KubeletRegistrar::Options FastOptions(const std::string& socket) {
  KubeletRegistrar::Options o;
  o.kubelet_socket = socket;
  o.initial_backoff = 20ms;
  o.max_backoff = 100ms;
  o.poll_interval = 20ms;
  o.rpc_timeout = 2000ms;
  return o;
}

}  // namespace

TEST_CASE("registers with the kubelet, retrying until it is up", "[grpc][registrar]") {
  netqos::testing::TempDir tmp;
  const std::string sock = tmp.path() + "/kubelet.sock";
  auto registrar = KubeletRegistrar::Start(FastOptions(sock));
  REQUIRE(registrar.ok());
  std::this_thread::sleep_for(100ms);  // several failed attempts: nobody listens yet
  CHECK_FALSE((*registrar)->registered());

  FakeKubelet kubelet;
  auto server = ServeKubelet(sock, kubelet);
  CHECK(netqos::testing::WaitFor([&] { return (*registrar)->registered(); }, 2000ms) <= 2000ms);
  auto reqs = kubelet.requests();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].version() == "v1alpha1");
  CHECK(reqs[0].endpoint() == core::kSocketFileName);
  CHECK(reqs[0].resource_name() == core::kResourceName);
  CHECK(reqs[0].options().with_topology_alignment());
  CHECK_FALSE(reqs[0].options().pre_start_required());
  CHECK_FALSE(reqs[0].options().need_reconcile());

  // Registered: no further calls while the socket stays the same.
  std::this_thread::sleep_for(100ms);
  CHECK(kubelet.requests().size() == 1);
  (*registrar)->Stop();
  server->Shutdown();
}

TEST_CASE("a rejected registration is retried", "[grpc][registrar]") {
  netqos::testing::TempDir tmp;
  const std::string sock = tmp.path() + "/kubelet.sock";
  FakeKubelet kubelet;
  kubelet.set_reject(true);
  auto server = ServeKubelet(sock, kubelet);
  auto registrar = KubeletRegistrar::Start(FastOptions(sock));
  REQUIRE(registrar.ok());
  CHECK(netqos::testing::WaitFor([&] { return kubelet.requests().size() >= 2; }, 2000ms) <= 2000ms);
  CHECK_FALSE((*registrar)->registered());
  kubelet.set_reject(false);
  CHECK(netqos::testing::WaitFor([&] { return (*registrar)->registered(); }, 2000ms) <= 2000ms);
  (*registrar)->Stop();
  server->Shutdown();
}

TEST_CASE("registers again after the kubelet restarts on a new socket", "[grpc][registrar]") {
  netqos::testing::TempDir tmp;
  const std::string sock = tmp.path() + "/kubelet.sock";
  FakeKubelet first;
  auto server = ServeKubelet(sock, first);
  auto registrar = KubeletRegistrar::Start(FastOptions(sock));
  REQUIRE(registrar.ok());
  REQUIRE(netqos::testing::WaitFor([&] { return (*registrar)->registered(); }, 2000ms) <= 2000ms);
  CHECK((*registrar)->registrations() == 1);

  // Kubelet restart: the old server goes away, a new one creates a new socket inode.
  server->Shutdown();
  server.reset();
  std::filesystem::remove(sock);
  FakeKubelet second;
  auto restarted = ServeKubelet(sock, second);
  CHECK(netqos::testing::WaitFor([&] { return second.requests().size() == 1; }, 3000ms) <= 3000ms);
  CHECK(netqos::testing::WaitFor([&] { return (*registrar)->registrations() == 2; }, 1000ms) <=
        1000ms);
  CHECK((*registrar)->registered());
  CHECK(first.requests().size() == 1);
  (*registrar)->Stop();
  restarted->Shutdown();
}

}  // namespace netqos::grpcadapter
