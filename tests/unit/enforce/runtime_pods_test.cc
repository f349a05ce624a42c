// What the container runtime said of its pods, merged into the pod source's list.
#include "enforce/runtime_pods.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "unit/enforce/runtime_pod_fixtures.h"

namespace {

using netqos::enforce::RuntimePods;
using netqos::pods::ContainerInfo;
using netqos::pods::PodInfo;

PodInfo Pod(const std::string& uid, std::vector<std::string> ips = {}) {
  return netqos::enforce::testing::RuntimePodOf(uid, std::move(ips));
}
ContainerInfo Container(const std::string& name, const std::string& id) {
  return netqos::enforce::testing::RuntimeContainerOf(name, id);
}

}  // namespace

TEST_CASE("runtime pods: a pod the list lacks is added whole, once") {
  RuntimePods runtime;
  REQUIRE(runtime.PutContainer(Pod("u1", {"10.0.0.1"}), Container("app", "c1")));
  CHECK(runtime.HasContainer("c1"));
  CHECK(runtime.dirty());
  std::vector<PodInfo> list = {Pod("u0")};
  CHECK(runtime.MergeInto(list, {}, true).changed);
  CHECK_FALSE(runtime.dirty());
  REQUIRE(list.size() == 2);
  CHECK(list[1].uid == "u1");
  CHECK(list[1].ips == std::vector<std::string>{"10.0.0.1"});
  CHECK(list[1].containers == std::vector<ContainerInfo>{Container("app", "c1")});
  // Again: nothing more.
  CHECK_FALSE(runtime.MergeInto(list, {}, true).changed);
  CHECK(list.size() == 2);
  // Not a pod the kubelet removed.
  std::vector<PodInfo> fresh;
  CHECK_FALSE(runtime.MergeInto(fresh, {"u1"}, true).changed);
  CHECK(fresh.empty());
}

TEST_CASE("runtime pods: the list is the authority for what it lists") {
  RuntimePods runtime;
  runtime.PutContainer(Pod("u1", {"10.0.0.1"}), Container("app", "c-new"));
  runtime.PutContainer(Pod("u1", {"10.0.0.1"}), Container("side", "c-side"));
  runtime.PutContainer(Pod("u1", {"10.0.0.1"}), Container("init", "c-init"));
  std::vector<PodInfo> list = {Pod("u1", {"10.9.9.9"})};
  list[0].containers = {Container("app", "c-old"), Container("side", ""),
                        Container("init", "c-init")};
  const RuntimePods::Merged merged = runtime.MergeInto(list, {}, true);
  CHECK(merged.changed);
  // Where the ids the list lacked now are.
  CHECK(merged.containers == std::vector<std::pair<size_t, size_t>>{{0, 3}, {0, 1}});
  // Its addresses stay; a listed id stays; an unstarted container takes the runtime's id; a
  // container whose id it lists nowhere is added next to the older one of its name.
  CHECK(list[0].ips == std::vector<std::string>{"10.9.9.9"});
  CHECK(list[0].containers ==
        std::vector<ContainerInfo>{Container("app", "c-old"), Container("side", "c-side"),
                                   Container("init", "c-init"), Container("app", "c-new")});

  // A listed pod without addresses takes the runtime's, a hostNetwork one never does.
  std::vector<PodInfo> bare = {Pod("u1")};
  runtime.MergeInto(bare, {}, true);
  CHECK(bare[0].ips == std::vector<std::string>{"10.0.0.1"});
  std::vector<PodInfo> host = {Pod("u1")};
  host[0].host_network = true;
  runtime.MergeInto(host, {}, true);
  CHECK(host[0].ips.empty());
}

TEST_CASE("runtime pods: addresses are checked as the pod list's are") {
  RuntimePods runtime;
  REQUIRE(
      runtime.PutPod(Pod("u1", {"10.0.0.1", "10.0.0.999", "not-an-ip", "10.0.0.1", "FD00::1"})));
  std::vector<PodInfo> list;
  runtime.MergeInto(list, {}, true);
  REQUIRE(list.size() == 1);
  CHECK(list[0].ips == std::vector<std::string>{"10.0.0.1", "fd00::1"});

  std::vector<std::string> many;
  for (int i = 0; i < 40; ++i) many.push_back("10.1.0." + std::to_string(i));
  PodInfo host = Pod("u2", many);
  host.host_network = true;
  runtime.PutPod(host);
  runtime.PutPod(Pod("u3", many));
  list.clear();
  runtime.MergeInto(list, {}, true);
  REQUIRE(list.size() == 3);
  CHECK(list[1].ips.empty());
  CHECK(list[2].ips.size() == RuntimePods::kMaxAddresses);
  CHECK_FALSE(runtime.PutPod(Pod("")));
}

TEST_CASE("runtime pods: a container's next instance replaces it, removals forget") {
  RuntimePods runtime;
  runtime.PutContainer(Pod("u1"), Container("app", "c1"));
  runtime.PutContainer(Pod("u1"), Container("app", "c2"));  // restarted
  CHECK_FALSE(runtime.HasContainer("c1"));
  CHECK(runtime.HasContainer("c2"));
  std::vector<PodInfo> list;
  runtime.MergeInto(list, {}, true);
  REQUIRE(list.size() == 1);
  CHECK(list[0].containers == std::vector<ContainerInfo>{Container("app", "c2")});

  // Re-telling the same pod (Synchronize after a reconnect) keeps its containers and changes
  // nothing.
  runtime.PutPod(Pod("u1"));
  CHECK_FALSE(runtime.dirty());
  CHECK(runtime.HasContainer("c2"));

  runtime.ForgetContainer("u1", "c2");
  CHECK_FALSE(runtime.HasContainer("c2"));
  CHECK(runtime.dirty());
  runtime.PutContainer(Pod("u1"), Container("app", "c3"));
  runtime.ForgetPod("u1");
  CHECK_FALSE(runtime.HasContainer("c3"));
  CHECK(runtime.pods() == 0);
  CHECK_FALSE(runtime.PutContainer(Pod("u1"), Container("app", "")));
}

TEST_CASE("runtime pods: a runtime that never removes cannot grow it without end") {
  RuntimePods runtime;
  for (size_t i = 0; i < RuntimePods::kMaxContainersPerPod; ++i) {
    REQUIRE(runtime.PutContainer(Pod("u1"), Container("c" + std::to_string(i), std::to_string(i))));
  }
  CHECK_FALSE(runtime.PutContainer(Pod("u1"), Container("one-more", "x")));
  CHECK_FALSE(runtime.HasContainer("x"));
  // A known name still takes its next instance.
  CHECK(runtime.PutContainer(Pod("u1"), Container("c0", "y")));
}

TEST_CASE("runtime pods: between pod-list reads only the pods that changed are merged") {
  RuntimePods runtime;
  runtime.PutContainer(Pod("u1"), Container("app", "c1"));
  runtime.PutContainer(Pod("u2"), Container("app", "c2"));
  std::vector<PodInfo> list = {Pod("u0")};
  CHECK(runtime.MergeInto(list, {}, false).containers ==
        std::vector<std::pair<size_t, size_t>>{{1, 0}, {2, 0}});
  // A new pod list without them (read again): a partial merge does not bring back the pods that
  // did not change; a whole one does.
  list = {Pod("u0")};
  runtime.PutContainer(Pod("u2"), Container("side", "c3"));
  const RuntimePods::Merged partial = runtime.MergeInto(list, {}, false);
  REQUIRE(list.size() == 2);
  CHECK(list[1].uid == "u2");
  CHECK(partial.containers == std::vector<std::pair<size_t, size_t>>{{1, 0}, {1, 1}});
  list = {Pod("u0")};
  CHECK(runtime.MergeInto(list, {}, true).containers.size() == 3);
  CHECK(list.size() == 3);
}
