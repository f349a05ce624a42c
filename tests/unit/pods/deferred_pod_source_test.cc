// DeferredPodSource: a pod source that cannot be made at start (no runtime socket yet) is made on
// a later read, and reads go through to it from then on.
#include "pods/deferred_pod_source.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

namespace netqos::pods {
namespace {

class ListedPods final : public PodSource {
 public:
  explicit ListedPods(int* reads) : reads_(reads) {}
  Result<std::optional<std::vector<PodInfo>>> Read(bool force) override {
    ++*reads_;
    PodInfo pod;
    pod.uid = force ? "forced" : "changed";
    return std::optional<std::vector<PodInfo>>(std::vector<PodInfo>{pod});
  }
  std::string Describe() const override { return "cri:unix:///run/x.sock"; }

 private:
  int* reads_;
};

TEST_CASE("deferred pod source: made on the first read that can make it, then read through") {
  int attempts = 0, reads = 0;
  bool socket_exists = false;
  DeferredPodSource source(
      [&]() -> Result<std::unique_ptr<PodSource>> {
        ++attempts;
        if (!socket_exists) return NotFound("no container runtime socket found");
        return std::unique_ptr<PodSource>(std::make_unique<ListedPods>(&reads));
      },
      "cri:auto (not available yet)");
  CHECK(source.Describe() == "cri:auto (not available yet)");

  auto first = source.Read(true);
  REQUIRE_FALSE(first.ok());
  CHECK(first.status().code() == StatusCode::kNotFound);
  CHECK_THAT(first.status().message(), Catch::Contains("pod source not available yet") &&
                                           Catch::Contains("no container runtime socket found"));
  CHECK_FALSE(source.Read(false).ok());
  CHECK(attempts == 2);  // every read tries again

  socket_exists = true;
  auto pods = source.Read(true);
  REQUIRE(pods.ok());
  REQUIRE(pods->has_value());
  CHECK((**pods)[0].uid == "forced");  // `force` is passed through
  CHECK(source.Describe() == "cri:unix:///run/x.sock");
  auto again = source.Read(false);
  REQUIRE(again.ok());
  CHECK((**again)[0].uid == "changed");
  CHECK(attempts == 3);  // made once
  CHECK(reads == 2);
}

}  // namespace
}  // namespace netqos::pods
