// What the session accepts from the runtime before the port sees it, and the event mask.
#include "nri_plugin/nri_translate.h"

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

namespace api = ::nri::pkg::api::v1alpha1;
using netqos::nri_plugin::TranslateContainer;
using netqos::nri_plugin::TranslatePod;

api::PodSandbox GoodPod() {
  api::PodSandbox pod;
  pod.set_id("0123abcd");
  pod.set_uid("6f1c6c1e-4b0e-4f7e-9a47-1f0b7f7f6a10");
  pod.set_namespace_("kube-system");
  pod.set_name("coredns-5d78c9869d-abcde");
  pod.add_ips("10.244.0.7");
  pod.add_ips("fd00::7");
  (*pod.mutable_annotations())["netqos.io/class"] = "gold";
  pod.mutable_linux()->set_cgroup_parent("kubepods-burstable-pod6f1c6c1e.slice");
  return pod;
}

std::string Error(const netqos::Status& status) { return status.message(); }

using Keys = std::set<std::string, std::less<>>;

// The pod as the kubelet has it made: a few annotations netqos reads among many it does not.
api::PodSandbox PodWithUnreadAnnotations() {
  api::PodSandbox pod = GoodPod();
  auto& annotations = *pod.mutable_annotations();
  annotations["katalyst.kubewharf.io/qos_level"] = "shared_cores";
  annotations["kubernetes.io/egress-bandwidth"] = "10M";
  for (int i = 0; i < 100; ++i) {
    annotations["example.com/bookkeeping-" + std::to_string(i)] = std::string(512, 'u');
  }
  annotations["kubectl.kubernetes.io/last-applied-configuration"] = std::string(64 * 1024, 'l');
  return pod;
}

}  // namespace

TEST_CASE("nri translate: the event mask has bit event-1 for each subscribed event") {
  const int32_t mask = netqos::nri_plugin::NetqosEventMask();
  CHECK(mask == netqos::nri_plugin::EventBit(api::RUN_POD_SANDBOX) +
                    netqos::nri_plugin::EventBit(api::STOP_POD_SANDBOX) +
                    netqos::nri_plugin::EventBit(api::REMOVE_POD_SANDBOX) +
                    netqos::nri_plugin::EventBit(api::CREATE_CONTAINER) +
                    netqos::nri_plugin::EventBit(api::START_CONTAINER) +
                    netqos::nri_plugin::EventBit(api::STOP_CONTAINER) +
                    netqos::nri_plugin::EventBit(api::REMOVE_CONTAINER));
  CHECK(netqos::nri_plugin::EventBit(api::RUN_POD_SANDBOX) == 1);
  CHECK(netqos::nri_plugin::EventBit(api::CREATE_CONTAINER) == 8);
  CHECK((mask & netqos::nri_plugin::EventBit(api::UPDATE_CONTAINER)) == 0);
  CHECK((mask & netqos::nri_plugin::EventBit(api::VALIDATE_CONTAINER_ADJUSTMENT)) == 0);
}

TEST_CASE("nri translate: a well-formed pod keeps every field") {
  auto pod = TranslatePod(GoodPod());
  INFO(pod.status().message());
  REQUIRE(pod.ok());
  CHECK(pod->id == "0123abcd");
  CHECK(pod->uid == "6f1c6c1e-4b0e-4f7e-9a47-1f0b7f7f6a10");
  CHECK(pod->namespace_name == "kube-system");
  CHECK(pod->name == "coredns-5d78c9869d-abcde");
  CHECK(pod->ips == std::vector<std::string>{"10.244.0.7", "fd00::7"});
  CHECK(pod->annotations.at("netqos.io/class") == "gold");
  CHECK(pod->cgroup_parent == "kubepods-burstable-pod6f1c6c1e.slice");
}

TEST_CASE("nri translate: pods with hostile fields are refused with the field named") {
  api::PodSandbox pod = GoodPod();
  SECTION("empty uid") {
    pod.clear_uid();
    CHECK_THAT(Error(TranslatePod(pod).status()), Catch::Contains("uid is empty"));
  }
  SECTION("a uid with a slash") {
    pod.set_uid("../x");
    CHECK_THAT(Error(TranslatePod(pod).status()), Catch::Contains("uid has a byte 0x2f"));
  }
  SECTION("a name with a newline") {
    pod.set_name("web\n0");
    CHECK_THAT(Error(TranslatePod(pod).status()), Catch::Contains("name has a byte 0x0a"));
  }
  SECTION("an over-long id") {
    pod.set_id(std::string(257, 'a'));
    CHECK_THAT(Error(TranslatePod(pod).status()), Catch::Contains("257 bytes exceeds 256"));
  }
  SECTION("an address that is not one") {
    pod.add_ips("10.0.0.300");
    CHECK_THAT(Error(TranslatePod(pod).status()), Catch::Contains("'10.0.0.300' is not an IPv4"));
  }
  SECTION("too many addresses") {
    for (int i = 0; i < 20; ++i) pod.add_ips("10.0.0.1");
    CHECK_THAT(Error(TranslatePod(pod).status()), Catch::Contains("22 ips exceed 16"));
  }
  SECTION("a cgroup parent climbing out") {
    pod.mutable_linux()->set_cgroup_parent("/kubepods/..");
    CHECK_THAT(Error(TranslatePod(pod).status()), Catch::Contains("has a '..'"));
  }
  SECTION("annotations past 256 KiB") {
    (*pod.mutable_annotations())["big"] = std::string(300 * 1024, 'x');
    CHECK_THAT(Error(TranslatePod(pod).status()), Catch::Contains("annotations exceed"));
  }
}

TEST_CASE("nri translate: only the annotation keys asked for are kept") {
  const api::PodSandbox wire = PodWithUnreadAnnotations();
  auto pod = TranslatePod(wire, Keys{"katalyst.kubewharf.io/qos_level",
                                     "kubernetes.io/egress-bandwidth", "netqos.io/burst"});
  INFO(pod.status().message());
  REQUIRE(pod.ok());
  CHECK(pod->annotations ==
        std::map<std::string, std::string>{{"katalyst.kubewharf.io/qos_level", "shared_cores"},
                                           {"kubernetes.io/egress-bandwidth", "10M"}});
  CHECK(pod->uid == wire.uid());
  CHECK(pod->ips == std::vector<std::string>{"10.244.0.7", "fd00::7"});

  // No keys given: all of them, as the pod list's parser does; an empty set: none.
  auto all = TranslatePod(wire);
  REQUIRE(all.ok());
  CHECK(all->annotations.size() == static_cast<size_t>(wire.annotations_size()));
  auto none = TranslatePod(wire, Keys{});
  REQUIRE(none.ok());
  CHECK(none->annotations.empty());
}

TEST_CASE("nri translate: the annotation bound counts the annotations that are not kept") {
  // Past the API server's limit with unread annotations alone: not a pod it admitted.
  api::PodSandbox wire = GoodPod();
  (*wire.mutable_annotations())["example.com/unread"] =
      std::string(netqos::nri_plugin::kMaxAnnotationBytes, 'x');
  CHECK_THAT(Error(TranslatePod(wire, Keys{"netqos.io/class"}).status()),
             Catch::Contains("pod sandbox 0123abcd: annotations exceed 262144 bytes"));
}

TEST_CASE("nri translate: container cgroup paths of both cgroup drivers are accepted") {
  api::Container container;
  container.set_id("ctr1");
  container.set_pod_sandbox_id("0123abcd");
  for (const std::string path :
       {"/kubepods/burstable/pod6f1c/ctr1", "kubepods-pod6f1c.slice:cri-containerd:ctr1", ""}) {
    container.mutable_linux()->set_cgroups_path(path);
    auto out = TranslateContainer(container);
    INFO(path << ": " << out.status().message());
    REQUIRE(out.ok());
    CHECK(out->cgroups_path == path);
  }
  container.mutable_linux()->set_cgroups_path("/kubepods/a b");
  CHECK_THAT(Error(TranslateContainer(container).status()),
             Catch::Contains("container ctr1: cgroups path has a non-printable byte or a space"));
  container.mutable_linux()->set_cgroups_path("/kubepods/pod/ctr1");
  container.clear_pod_sandbox_id();
  CHECK_THAT(Error(TranslateContainer(container).status()),
             Catch::Contains("pod sandbox id is empty"));
}

TEST_CASE("nri translate: a pod's network is its own, the host's or unknown, by its namespaces") {
  using netqos::nri_plugin::PodNetwork;
  api::PodSandbox pod = GoodPod();
  auto unknown = TranslatePod(pod);
  REQUIRE(unknown.ok());
  CHECK(unknown->network == PodNetwork::kUnknown);

  auto* ipc = pod.mutable_linux()->add_namespaces();
  ipc->set_type("ipc");
  auto host = TranslatePod(pod);
  REQUIRE(host.ok());
  CHECK(host->network == PodNetwork::kHost);

  auto* net = pod.mutable_linux()->add_namespaces();
  net->set_type("network");
  net->set_path("/var/run/netns/cni-1234");
  auto own = TranslatePod(pod);
  REQUIRE(own.ok());
  CHECK(own->network == PodNetwork::kOwn);
}
