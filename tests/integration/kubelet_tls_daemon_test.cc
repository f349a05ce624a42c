// The real netqosd reading the kubelet's pod list over TLS, as the DaemonSet does
// (--kubelet-pods-url=https://..., --kubelet-token-file, --kubelet-ca-file): a kubelet stand-in
// (support/tls_kubelet.h) serves the fixture's pod list with a certificate of a CA made in the
// test. With that CA in --kubelet-ca-file the container is classified; with another CA the pod
// list is refused, the kubelet problem says why, and nothing is classified. The shared
// DaemonFixture without --enforce-nics (classify and count only). Root only.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "support/daemon_fixture.h"
#include "support/files.h"
#include "support/temp_dir.h"
#include "support/test_pki.h"
#include "support/tls_kubelet.h"

namespace {

using namespace std::chrono_literals;
using netqos::testing::CountLines;
using netqos::testing::DaemonFixture;
using netqos::testing::ReadFile;
using netqos::testing::TempDir;
using netqos::testing::TestCa;
using netqos::testing::TlsKubelet;
using netqos::testing::WaitFor;
using netqos::testing::WriteFile;

}  // namespace

TEST_CASE(
    "daemon: the kubelet's pod list over https is trusted only with its CA in --kubelet-ca-file",
    "[kubelet]") {
  TempDir pki;
  TestCa cluster_ca("cluster CA");
  TestCa other_ca("another CA");
  cluster_ca.WriteCert(pki.file("ca.crt"));
  other_ca.WriteCert(pki.file("other-ca.crt"));
  TestCa::Server kubelet_cert;
  kubelet_cert.subject_alt_names = "IP:127.0.0.1";
  cluster_ca.Issue(kubelet_cert, pki.file("kubelet.crt"), pki.file("kubelet.key"));
  WriteFile(pki.file("token"), "secret\n");

  DaemonFixture env({.tag = "k", .subnet = 244, .shape_nics = false});
  env.AddPod(1);
  const std::string cg = env.MakeCgroup(env.pods[0]);
  TlsKubelet kubelet(pki.file("kubelet.crt"), pki.file("kubelet.key"), "secret",
                     [&] { return ReadFile(env.PodsFile()); });
  auto start = [&](const std::string& ca) {
    env.StartDaemon({"--kubelet-pods-url=" + kubelet.Url("127.0.0.1"),
                     "--kubelet-token-file=" + pki.file("token"), "--kubelet-ca-file=" + ca});
  };
  auto refused = [&] {
    return CountLines(env.Log(),
                      {"enforcement problem object=kubelet ", "serving certificate is refused"});
  };

  SECTION("the cluster CA") {
    start(pki.file("ca.crt"));
    auto took = WaitFor([&] { return env.ClassOf(cg).has_value(); }, 10000ms);
    INFO(env.Log());
    REQUIRE(took.has_value());
    std::printf("pod list over TLS: container classified after %.0f ms\n", *took);
    CHECK(CountLines(env.Log(), {"enforcement problem object=kubelet "}) == 0);
  }
  SECTION("another CA") {
    start(pki.file("other-ca.crt"));
    auto took = WaitFor([&] { return refused() > 0; }, 10000ms);
    INFO(env.Log());
    REQUIRE(took.has_value());
    CHECK(CountLines(env.Log(), {"enforcement problem object=kubelet ",
                                 "unable to get local issuer certificate",
                                 "--kubelet-ca-file " + pki.file("other-ca.crt")}) == 1);
    std::this_thread::sleep_for(2500ms);  // a resync (every 2 s here) reads the list again
    CHECK_FALSE(env.ClassOf(cg).has_value());
    CHECK(env.DaemonRunning());  // an unreadable pod list is a problem, not a crash
  }
  std::string left = env.Uninstall();
  left += env.Leftovers();
  CHECK(left == "");
}
