#include "pods/pod_list.h"

#include <catch2/catch.hpp>

namespace {

using netqos::StatusCode;
using netqos::pods::ParsePodList;
using netqos::pods::SplitContainerId;

const char* kPodList = R"({
  "kind": "PodList", "apiVersion": "v1", "metadata": {},
  "items": [
    {
      "metadata": {"name": "web-0", "namespace": "prod", "uid": "11111111-2222-3333-4444-555555555555",
                   "annotations": {"katalyst.kubewharf.io/qos_level": "shared_cores", "n": "1"}},
      "spec": {"containers": [{"name": "app"}, {"name": "sidecar"}]},
      "status": {
        "qosClass": "Burstable",
        "initContainerStatuses": [{"name": "init-db", "containerID": "containerd://aaa111"}],
        "containerStatuses": [
          {"name": "app", "containerID": "containerd://bbb222", "ready": true},
          {"name": "sidecar"}
        ]
      }
    },
    {
      "metadata": {"name": "crio-pod", "namespace": "default", "uid": "u-2"},
      "status": {"qosClass": "Guaranteed",
                 "containerStatuses": [{"name": "c", "containerID": "cri-o://ccc333"}]}
    },
    {
      "metadata": {"name": "docker-pod", "uid": "u-3"},
      "status": {"qosClass": "BestEffort",
                 "containerStatuses": [{"name": "d", "containerID": "docker://ddd444"}]}
    },
    {"metadata": {"name": "pending", "uid": "u-4"}},
    {}
  ]
})";

TEST_CASE("ParsePodList: pods, QoS class, annotations and containers of every runtime") {
  auto pods = ParsePodList(kPodList, "test");
  REQUIRE(pods.ok());
  REQUIRE(pods->size() == 5);

  const auto& web = (*pods)[0];
  CHECK(web.uid == "11111111-2222-3333-4444-555555555555");
  CHECK(web.ns == "prod");
  CHECK(web.name == "web-0");
  CHECK(web.qos_class == "Burstable");
  CHECK(web.annotations.size() == 2);
  CHECK(web.annotations.at("katalyst.kubewharf.io/qos_level") == "shared_cores");
  REQUIRE(web.containers.size() == 3);
  CHECK(web.containers[0].name == "init-db");
  CHECK(web.containers[0].init);
  CHECK(web.containers[0].runtime == "containerd");
  CHECK(web.containers[0].id == "aaa111");
  CHECK(web.containers[1].name == "app");
  CHECK_FALSE(web.containers[1].init);
  CHECK(web.containers[1].runtime == "containerd");
  CHECK(web.containers[1].id == "bbb222");
  CHECK(web.containers[2].name == "sidecar");  // not started yet
  CHECK(web.containers[2].runtime.empty());
  CHECK(web.containers[2].id.empty());

  const auto& crio = (*pods)[1];
  CHECK(crio.qos_class == "Guaranteed");
  REQUIRE(crio.containers.size() == 1);
  CHECK(crio.containers[0].runtime == "cri-o");
  CHECK(crio.containers[0].id == "ccc333");

  const auto& docker = (*pods)[2];
  CHECK(docker.ns.empty());
  CHECK(docker.qos_class == "BestEffort");
  REQUIRE(docker.containers.size() == 1);
  CHECK(docker.containers[0].runtime == "docker");
  CHECK(docker.containers[0].id == "ddd444");

  CHECK((*pods)[3].name == "pending");
  CHECK((*pods)[3].qos_class.empty());
  CHECK((*pods)[3].containers.empty());
  CHECK((*pods)[4].uid.empty());
}

TEST_CASE("ParsePodList: wrongly typed fields are treated as missing") {
  auto pods = ParsePodList(
      R"({"items": [1, {"metadata": {"uid": 5, "name": "x", "annotations": {"a": 1, "b": "s"}},
                        "status": {"qosClass": null, "containerStatuses": {"not": "array"},
                                   "initContainerStatuses": [7, {"name": "i", "containerID": 3}]}}]})",
      "test");
  REQUIRE(pods.ok());
  REQUIRE(pods->size() == 1);
  const auto& p = (*pods)[0];
  CHECK(p.uid.empty());
  CHECK(p.name == "x");
  CHECK(p.annotations.size() == 1);
  CHECK(p.qos_class.empty());
  REQUIRE(p.containers.size() == 1);
  CHECK(p.containers[0].name == "i");
  CHECK(p.containers[0].init);
  CHECK(p.containers[0].id.empty());
}

TEST_CASE("ParsePodList: an empty list, missing or null items") {
  for (const char* text :
       {R"({"kind":"PodList","items":[]})", R"({"kind":"PodList"})", R"({"items":null})"}) {
    auto pods = ParsePodList(text, "test");
    REQUIRE(pods.ok());
    CHECK(pods->empty());
  }
}

TEST_CASE("ParsePodList: bad JSON is InvalidArgument naming the source") {
  for (const char* text : {"{not json", "", "[1,2]", R"({"items": {}})", "\"str\""}) {
    auto pods = ParsePodList(text, "http://127.0.0.1:10255/pods");
    REQUIRE_FALSE(pods.ok());
    CHECK(pods.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(pods.status().message(), Catch::Contains("http://127.0.0.1:10255/pods"));
  }
}

TEST_CASE("SplitContainerId") {
  std::string runtime, id;
  SplitContainerId("containerd://abc", &runtime, &id);
  CHECK(runtime == "containerd");
  CHECK(id == "abc");
  SplitContainerId("bare", &runtime, &id);
  CHECK(runtime.empty());
  CHECK(id == "bare");
  SplitContainerId("", &runtime, &id);
  CHECK(runtime.empty());
  CHECK(id.empty());
}

}  // namespace

TEST_CASE("pod list: addresses, hostNetwork and phase", "[cgroup][pods]") {
  auto pods = ParsePodList(R"({"items": [
    {"metadata": {"uid": "cni"}, "spec": {"hostNetwork": false},
     "status": {"phase": "Running", "podIP": "10.1.0.5",
                "podIPs": [{"ip": "10.1.0.5"}, {"ip": "fd00::5"}, {"ip": 7}, {}]}},
    {"metadata": {"uid": "old-kubelet"}, "status": {"podIP": "10.1.0.6"}},
    {"metadata": {"uid": "host"}, "spec": {"hostNetwork": true},
     "status": {"podIPs": [{"ip": "192.168.1.10"}]}},
    {"metadata": {"uid": "odd"}, "spec": {"hostNetwork": "yes"}, "status": {"podIPs": {}}}
  ]})",
                           "test");
  REQUIRE(pods.ok());
  REQUIRE(pods->size() == 4);
  const auto& cni = (*pods)[0];
  CHECK_FALSE(cni.host_network);
  CHECK(cni.phase == "Running");
  CHECK(cni.ips == std::vector<std::string>{"10.1.0.5", "fd00::5"});  // non-strings skipped
  CHECK((*pods)[1].ips == std::vector<std::string>{"10.1.0.6"});      // podIP when no podIPs
  CHECK((*pods)[2].host_network);
  CHECK((*pods)[2].ips == std::vector<std::string>{"192.168.1.10"});
  CHECK_FALSE((*pods)[3].host_network);  // not a boolean: not host network
  CHECK((*pods)[3].ips.empty());
}

TEST_CASE("pod list: a document nested far too deep is refused before it is parsed",
          "[cgroup][pods]") {
  const std::string deep =
      "{\"items\": [{\"metadata\": {\"annotations\": {\"a\": " + std::string(100000, '[') +
      std::string(100000, ']') + "}}}]}";
  auto pods = ParsePodList(deep, "https://node:10250/pods");
  REQUIRE_FALSE(pods.ok());
  CHECK(pods.status().code() == StatusCode::kInvalidArgument);
  CHECK(pods.status().message() ==
        "pod list from https://node:10250/pods: nested deeper than 64 levels");
  // Brackets inside strings are text, not nesting.
  auto ok = ParsePodList(
      "{\"items\": [{\"metadata\": {\"name\": \"" + std::string(1000, '[') + "\"}}]}", "file");
  REQUIRE(ok.ok());
  CHECK((*ok)[0].name == std::string(1000, '['));
}
