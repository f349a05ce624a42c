// PodListReader: the kubelet's pod list is parsed only when its bytes changed, or when forced;
// failures are returned and make the next good read a change. Pure (the fetch is a function).
#include "pods/pod_list_reader.h"

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace {

using netqos::Result;
using netqos::pods::PodListReader;

std::string PodList(const std::string& uid, const std::string& class_id) {
  return R"({"kind":"PodList","items":[{"metadata":{"uid":")" + uid +
         R"(","namespace":"ns","name":"p","annotations":{"katalyst.kubewharf.io/net_class_id":")" +
         class_id +
         R"("}},"status":{"containerStatuses":[{"name":"app","containerID":"containerd://abc"}]}}]})";
}

struct FakeKubelet {
  Result<std::string> body = std::string();
  int fetches = 0;
  PodListReader Reader() {
    return PodListReader(
        [this]() -> Result<std::string> {
          ++fetches;
          return body;
        },
        "file:///pods.json");
  }
};

}  // namespace

TEST_CASE("pod list reader: parses the first read and every change, not a repeat", "[enforce]") {
  FakeKubelet k;
  k.body = PodList("u1", "7");
  PodListReader r = k.Reader();

  auto first = r.Read(false);
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  REQUIRE((*first)->size() == 1);
  CHECK((**first)[0].uid == "u1");
  CHECK((**first)[0].annotations.at("katalyst.kubewharf.io/net_class_id") == "7");

  auto same = r.Read(false);
  REQUIRE(same.ok());
  CHECK_FALSE(same->has_value());

  // An annotation change of one character is a change.
  k.body = PodList("u1", "9");
  auto changed = r.Read(false);
  REQUIRE(changed.ok());
  REQUIRE(changed->has_value());
  CHECK((**changed)[0].annotations.at("katalyst.kubewharf.io/net_class_id") == "9");
  CHECK(k.fetches == 3);
}

TEST_CASE("pod list reader: a forced read parses an unchanged list", "[enforce]") {
  FakeKubelet k;
  k.body = PodList("u1", "7");
  PodListReader r = k.Reader();
  REQUIRE(r.Read(false)->has_value());
  auto forced = r.Read(true);
  REQUIRE(forced.ok());
  REQUIRE(forced->has_value());
  CHECK((*forced)->size() == 1);
}

TEST_CASE("pod list reader: a failed fetch or parse is returned and the next read is a change",
          "[enforce]") {
  FakeKubelet k;
  k.body = PodList("u1", "7");
  PodListReader r = k.Reader();
  REQUIRE(r.Read(false)->has_value());

  k.body = netqos::Unavailable("GET http://kubelet/pods: connection refused");
  auto down = r.Read(false);
  REQUIRE_FALSE(down.ok());
  CHECK(down.status().message() == "GET http://kubelet/pods: connection refused");
  k.body = PodList("u1", "7");
  auto back = r.Read(false);
  REQUIRE(back.ok());
  CHECK(back->has_value());  // the same bytes as before the failure, yet a change

  k.body = std::string("{not json");
  auto bad = r.Read(false);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("file:///pods.json"));
  k.body = PodList("u1", "7");
  auto again = r.Read(false);
  REQUIRE(again.ok());
  CHECK(again->has_value());
}

TEST_CASE("pod list reader: keeps only the annotation keys it was given", "[enforce]") {
  netqos::pods::PodListOptions options;
  options.annotation_keys = std::set<std::string, std::less<>>{"example.com/kept"};
  PodListReader r(
      [] {
        return Result<std::string>(std::string(
            R"({"items":[{"metadata":{"uid":"u1","annotations":{"example.com/kept":"1",
                "katalyst.kubewharf.io/net_class_id":"7"}}}]})"));
      },
      "file:///pods.json", options);
  auto pods = r.Read(false);
  REQUIRE(pods.ok());
  REQUIRE(pods->has_value());
  REQUIRE((*pods)->size() == 1);
  CHECK((**pods)[0].annotations == std::map<std::string, std::string>{{"example.com/kept", "1"}});
}
