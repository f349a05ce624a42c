// The kubelet pod-list client over real TLS (--kubelet-ca-file): a local HTTPS kubelet stand-in
// (support/tls_kubelet.h: httplib's SSLServer on 127.0.0.1) with certificates made in the test
// (support/test_pki.h).
// The CA of the file is trusted, and only it: another CA, a certificate for another host (even
// with the host as its common name) and an expired one are each refused, saying why.
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "pods/kubelet/kubelet_pods_client.h"
#include "support/files.h"
#include "support/kubelet_pod_list.h"
#include "support/temp_dir.h"
#include "support/test_pki.h"
#include "support/tls_kubelet.h"

namespace {

using netqos::StatusCode;
using netqos::pods::KubeletPodsClient;
using netqos::pods::KubeletPodsClientOptions;
using netqos::testing::FetchPods;
using netqos::testing::TempDir;
using netqos::testing::TestCa;
using netqos::testing::TlsKubelet;
using netqos::testing::WriteFile;

constexpr char kPods[] = R"({"items":[{"metadata":{"uid":"u1","name":"p","namespace":"n"},
    "status":{"containerStatuses":[{"name":"c","containerID":"containerd://abc"}]}}]})";

// An HTTPS kubelet serving kPods with the certificate <name>.crt of the test's PKI.
struct Kubelet : TlsKubelet {
  Kubelet(const TempDir& dir, const std::string& name)
      : TlsKubelet(dir.file(name + ".crt"), dir.file(name + ".key"), "secret",
                   [] { return std::string(kPods); }) {}
};

// Two CAs and the server certificates of the cases, in one temp dir.
struct Pki {
  TempDir dir;
  TestCa cluster_ca{"cluster CA"};
  TestCa other_ca{"another CA"};
  Pki() {
    cluster_ca.WriteCert(dir.file("ca.crt"));
    other_ca.WriteCert(dir.file("other-ca.crt"));
    TestCa::Server good;
    good.subject_alt_names = "IP:127.0.0.1,DNS:localhost";
    cluster_ca.Issue(good, dir.file("good.crt"), dir.file("good.key"));
    TestCa::Server elsewhere;
    // Another node's certificate; its common name is this host, which must not count.
    elsewhere.common_name = "127.0.0.1";
    elsewhere.subject_alt_names = "IP:192.0.2.1,DNS:kubelet.example";
    cluster_ca.Issue(elsewhere, dir.file("elsewhere.crt"), dir.file("elsewhere.key"));
    TestCa::Server expired = good;
    expired.valid_from_days = -30;
    expired.valid_until_days = -1;
    cluster_ca.Issue(expired, dir.file("expired.crt"), dir.file("expired.key"));
    WriteFile(dir.file("token"), "secret\n");
  }
  KubeletPodsClientOptions Options(const std::string& url, const std::string& ca) const {
    auto parsed = netqos::pods::ParseKubeletUrl(url);
    REQUIRE(parsed.ok());
    KubeletPodsClientOptions o;
    o.url = std::move(*parsed);
    o.token_file = dir.file("token");
    o.ca_file = ca.empty() ? "" : dir.file(ca);
    o.timeout = std::chrono::milliseconds(5000);
    return o;
  }
};

netqos::Result<std::vector<netqos::pods::PodInfo>> List(const KubeletPodsClientOptions& o) {
  auto client = KubeletPodsClient::Create(o);
  if (!client.ok()) return client.status();
  return FetchPods(**client);
}

}  // namespace

TEST_CASE("kubelet TLS: the CA of --kubelet-ca-file is trusted, for the host's IP and name") {
  Pki pki;
  Kubelet kubelet(pki.dir, "good");
  for (const char* host : {"127.0.0.1", "localhost"}) {
    INFO(host);
    auto pods = List(pki.Options(kubelet.Url(host), "ca.crt"));
    REQUIRE(pods.ok());
    REQUIRE(pods->size() == 1);
    CHECK((*pods)[0].uid == "u1");
  }
}

TEST_CASE("kubelet TLS: a certificate from another CA is refused, naming the CA file") {
  Pki pki;
  Kubelet kubelet(pki.dir, "good");
  const std::string url = kubelet.Url("127.0.0.1");
  auto pods = List(pki.Options(url, "other-ca.crt"));
  REQUIRE_FALSE(pods.ok());
  CHECK(pods.status().code() == StatusCode::kUnavailable);
  CHECK_THAT(pods.status().message(), Catch::Contains(url));
  CHECK_THAT(pods.status().message(),
             Catch::Contains("serving certificate is refused: unable to get local issuer "
                             "certificate"));
  CHECK_THAT(pods.status().message(),
             Catch::Contains("--kubelet-ca-file " + pki.dir.file("other-ca.crt")));
  // Without a CA file, OpenSSL's default CAs do not include the test's CA either.
  auto defaults = List(pki.Options(url, ""));
  REQUIRE_FALSE(defaults.ok());
  CHECK_THAT(defaults.status().message(), Catch::Contains("serving certificate is refused"));
  CHECK_THAT(defaults.status().message(), Catch::Contains("OpenSSL's default CAs"));
}

TEST_CASE("kubelet TLS: a certificate for another host is refused, whatever its common name") {
  Pki pki;
  Kubelet kubelet(pki.dir, "elsewhere");
  auto by_ip = List(pki.Options(kubelet.Url("127.0.0.1"), "ca.crt"));
  REQUIRE_FALSE(by_ip.ok());
  CHECK(by_ip.status().code() == StatusCode::kUnavailable);
  CHECK_THAT(by_ip.status().message(),
             Catch::Contains("IP address mismatch (the certificate does not name 127.0.0.1)"));
  auto by_name = List(pki.Options(kubelet.Url("localhost"), "ca.crt"));
  REQUIRE_FALSE(by_name.ok());
  CHECK_THAT(by_name.status().message(),
             Catch::Contains("hostname mismatch (the certificate does not name localhost)"));
}

TEST_CASE("kubelet TLS: an expired certificate is refused, and accepted only unverified") {
  Pki pki;
  Kubelet kubelet(pki.dir, "expired");
  const std::string url = kubelet.Url("127.0.0.1");
  auto pods = List(pki.Options(url, "ca.crt"));
  REQUIRE_FALSE(pods.ok());
  CHECK(pods.status().code() == StatusCode::kUnavailable);
  CHECK_THAT(pods.status().message(),
             Catch::Contains("serving certificate is refused: certificate has expired"));
  // --kubelet-insecure-skip-tls-verify (which the flags do not combine with a CA file).
  auto o = pki.Options(url, "");
  o.insecure_skip_tls_verify = true;
  auto unverified = List(o);
  REQUIRE(unverified.ok());
  CHECK(unverified->size() == 1);
}

TEST_CASE("kubelet TLS: a CA file that is missing or holds no certificate is named") {
  Pki pki;
  Kubelet kubelet(pki.dir, "good");
  const std::string url = kubelet.Url("127.0.0.1");
  auto missing = List(pki.Options(url, "absent.crt"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK_THAT(missing.status().message(),
             Catch::Contains("kubelet CA file " + pki.dir.file("absent.crt") +
                             " (--kubelet-ca-file): No such file or directory"));
  WriteFile(pki.dir.file("junk.crt"), "not a certificate\n");
  auto junk = List(pki.Options(url, "junk.crt"));
  REQUIRE_FALSE(junk.ok());
  CHECK(junk.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(junk.status().message(), Catch::Contains("holds no PEM certificate"));
  // The file is read on every request: a fixed file works without a new client.
  auto client = KubeletPodsClient::Create(pki.Options(url, "junk.crt"));
  REQUIRE(client.ok());
  REQUIRE_FALSE(FetchPods(**client).ok());
  WriteFile(pki.dir.file("junk.crt"), netqos::testing::ReadFile(pki.dir.file("ca.crt")));
  CHECK(FetchPods(**client).ok());
}
