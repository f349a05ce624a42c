#include "pods/pod_list.h"

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "support/kubelet_pod_json.h"
#include "support/pod_list_tree_parse.h"

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

namespace {

using netqos::testing::KubeletPodListJson;
using netqos::testing::KubeletPodListShape;
using netqos::testing::ParsePodListTree;
using netqos::testing::WithAnnotations;

using Keys = std::set<std::string, std::less<>>;

// Both parses of `text` agree: the same error, or the same pods.
void CheckSameAsTree(const std::string& text, const netqos::pods::PodListOptions& options = {}) {
  CAPTURE(text);
  auto streamed = ParsePodList(text, "test", options);
  auto tree = ParsePodListTree(text, "test");
  REQUIRE(streamed.ok() == tree.ok());
  if (!tree.ok()) {
    CHECK(streamed.status().code() == tree.status().code());
    CHECK(streamed.status().message() == tree.status().message());
    return;
  }
  const auto expected =
      options.annotation_keys ? WithAnnotations(*tree, *options.annotation_keys) : *tree;
  CHECK(*streamed == expected);
}

// A random document in the words of a pod list: mostly shaped like one (each key's usual
// children, with values of the usual type), but any key may turn up anywhere, twice, or with a
// value of another kind.
class RandomPodDocument {
 public:
  explicit RandomPodDocument(uint64_t seed) : rng_(seed) {}
  std::string Make() {
    std::string items = Array(1, "pod");
    if (rng_() % 8 == 0) items = Value(1, "");
    const std::string before = Object(1, "");
    const std::string after = Object(1, "");
    return before.substr(0, before.size() - 1) + (before.size() > 2 ? "," : "") +
           "\"items\":" + items + (after.size() > 2 ? "," : "") + after.substr(1);
  }

 private:
  // The usual children of an object, and the kind of the usual value under a key.
  static std::vector<std::string> Children(const std::string& at) {
    static const std::map<std::string, std::vector<std::string>> kChildren = {
        {"pod", {"metadata", "spec", "status"}},
        {"metadata", {"uid", "name", "namespace", "annotations"}},
        {"annotations", {"a", "b", "name"}},
        {"spec", {"hostNetwork"}},
        {"status",
         {"qosClass", "phase", "podIP", "podIPs", "initContainerStatuses", "containerStatuses"}},
        {"podIPs", {"ip"}},
        {"initContainerStatuses", {"name", "containerID"}},
        {"containerStatuses", {"name", "containerID"}}};
    auto it = kChildren.find(at);
    return it == kChildren.end() ? std::vector<std::string>{} : it->second;
  }
  std::string Value(int depth, const std::string& at) {
    const bool usual = rng_() % 4 != 0 && depth < 7;
    if (usual) {
      if (at == "podIPs" || at == "initContainerStatuses" || at == "containerStatuses") {
        return Array(depth, at);
      }
      if (!Children(at).empty()) return Object(depth, at);
      if (at == "hostNetwork") return rng_() % 2 ? "true" : "false";
      if (!at.empty()) return "\"" + Word() + "\"";
    }
    switch (rng_() % (depth >= 7 ? 4 : 7)) {
      case 0:
        return "null";
      case 1:
        return std::to_string(rng_() % 100);
      case 2:
        return rng_() % 2 ? "true" : "false";
      case 3:
        return "\"" + Word() + "\"";
      case 4:
        return Array(depth, "");
      default:
        return Object(depth, "");
    }
  }
  std::string Object(int depth, const std::string& at) {
    const std::vector<std::string> children = Children(at);
    std::string out = "{";
    const uint64_t n = rng_() % 6;
    for (uint64_t i = 0; i < n; ++i) {
      if (i != 0) out += ",";
      const std::string key =
          !children.empty() && rng_() % 4 != 0 ? children[rng_() % children.size()] : Word();
      out += "\"" + key + "\":" + Value(depth + 1, key);
    }
    return out + "}";
  }
  // An array under `at`: its elements are objects with the children of `at` ("pod" for items).
  std::string Array(int depth, const std::string& at) {
    std::string out = "[";
    const uint64_t n = rng_() % 4;
    for (uint64_t i = 0; i < n; ++i) {
      if (i != 0) out += ",";
      out += !at.empty() && rng_() % 4 != 0 ? Object(depth + 1, at) : Value(depth + 1, "");
    }
    return out + "]";
  }
  std::string Word() {
    static const char* kWords[] = {"items",
                                   "metadata",
                                   "uid",
                                   "name",
                                   "namespace",
                                   "annotations",
                                   "spec",
                                   "hostNetwork",
                                   "status",
                                   "qosClass",
                                   "phase",
                                   "podIP",
                                   "podIPs",
                                   "ip",
                                   "initContainerStatuses",
                                   "containerStatuses",
                                   "containerID",
                                   "containerd://a1",
                                   "a",
                                   "b",
                                   ""};
    return kWords[rng_() % (sizeof(kWords) / sizeof(kWords[0]))];
  }
  std::mt19937_64 rng_;
};

}  // namespace

TEST_CASE("ParsePodList: a kubelet's pods, whole specs and statuses, as the whole-tree parse") {
  KubeletPodListShape shape;
  shape.pods = 60;
  const std::string text = KubeletPodListJson(shape);
  auto pods = ParsePodList(text, "test");
  REQUIRE(pods.ok());
  REQUIRE(pods->size() == 60);
  // Not two empty lists agreeing: every pod has its identity, addresses and containers.
  for (const auto& pod : *pods) {
    CHECK(pod.uid.size() == 36);
    CHECK(pod.phase == "Running");
    CHECK(pod.ips.size() == 2);
    REQUIRE(pod.containers.size() == 3);
    CHECK(pod.containers[0].init);
    CHECK(pod.containers[2].id.size() == 64);
    CHECK(pod.annotations.size() >= 15);
  }
  CHECK((*pods)[0].host_network);
  CHECK_FALSE((*pods)[1].host_network);
  CheckSameAsTree(text);
}

TEST_CASE("ParsePodList: only the annotation keys asked for are kept") {
  KubeletPodListShape shape;
  shape.pods = 30;
  shape.extra_annotations = 300;
  const std::string text = KubeletPodListJson(shape);
  netqos::pods::PodListOptions options;
  options.annotation_keys = Keys{"katalyst.kubewharf.io/qos_level",
                                 "kubernetes.io/egress-bandwidth", "netqos.io/burst", "absent"};
  auto pods = ParsePodList(text, "test", options);
  REQUIRE(pods.ok());
  REQUIRE(pods->size() == 30);
  // Pod 0 has all three (it is every n-th pod of each); pod 1 none of them.
  CHECK((*pods)[0].annotations ==
        std::map<std::string, std::string>{{"katalyst.kubewharf.io/qos_level", "shared_cores"},
                                           {"kubernetes.io/egress-bandwidth", "100M"},
                                           {"netqos.io/burst", "64Ki"}});
  CHECK((*pods)[1].annotations.empty());
  CheckSameAsTree(text, options);
  // No keys: no annotations; every other field as without a filter.
  options.annotation_keys = Keys{};
  CheckSameAsTree(text, options);
}

TEST_CASE("ParsePodList: odd documents give the whole-tree parse's pods or error") {
  for (
      const char* text :
      {// A key given twice: the last counts, at every level, even when it has the wrong type.
       R"({"items":[{"metadata":{"uid":"a","uid":"b","name":"n","name":7}}]})",
       R"({"items":[{"metadata":{"uid":"a"},"metadata":{"name":"n"}}]})",
       R"({"items":[{"metadata":{"uid":"a"},"metadata":[1]}]})",
       R"({"items":[{"metadata":{"annotations":{"a":"1","b":"2"},"annotations":{"c":"3"}}}]})",
       R"({"items":[{"metadata":{"annotations":{"a":"1","a":2,"b":"x","b":"y"}}}]})",
       R"({"items":[{"metadata":{"annotations":{"a":"1"},"annotations":null}}]})",
       R"({"items":[{"spec":{"hostNetwork":true,"hostNetwork":"x"}}]})",
       R"({"items":[{"spec":{"hostNetwork":true},"spec":{}}]})",
       R"({"items":[{"spec":{"hostNetwork":false,"hostNetwork":true}}]})",
       R"({"items":[{"status":{"podIPs":[{"ip":"a"}],"podIPs":[]," podIP":"x","podIP":"b"}}]})",
       R"({"items":[{"status":{"podIPs":[{"ip":"a","ip":""},{"ip":"c"},"d",[{"ip":"e"}]]}}]})",
       R"({"items":[{"status":{"containerStatuses":[{"name":"a","containerID":"x://1"}],
                                  "initContainerStatuses":[{"name":"i"}],
                                  "containerStatuses":[{"name":"b","name":"c"}]}}]})",
       R"({"items":[{"status":{"phase":"Running","qosClass":"Burstable"},"status":5}]})",
       R"({"items":[{"status":{"containerStatuses":[{"containerID":"docker://1","containerID":null}]}}]})",
       R"({"items":[{"metadata":{"uid":"1"}}],"items":[{"metadata":{"uid":"2"}}]})",
       R"({"items":[{"metadata":{"uid":"1"}}],"items":null})", R"({"items":5,"items":[{}]})",
       // Kept names where nothing is kept.
       R"({"metadata":{"uid":"x"},"items":[{"spec":{"containers":[{"name":"c"}],
               "metadata":{"uid":"y"}},"status":{"metadata":{"name":"z"},
               "conditions":[{"status":{"phase":"p"}}]},"items":[{"metadata":{"uid":"w"}}]}]})",
       R"({"items":[[{"metadata":{"uid":"nested"}}],{"metadata":{"uid":"u\u00e9\n"}}]})",
       R"({"items":[{"metadata":{"annotations":{"k":{"nested":"v"},"l":["v"],"m":""}}}]})",
       // Errors, in the same order and words.
       "", "{", "[]", "\"items\"", "null", R"({"items":[1,2]} trailing)", R"({"items":{}})",
       R"({"items":"x"})", R"({"items":true})", R"({"items":1.5})", R"({"items":[],"items":{}})",
       R"({"items":[{"metadata":{"uid":"\ud800"}}]})", R"({"items":[{"a":1e999}]})",
       R"({"items":[{"metadata":{"uid":"a"}]})",
       "{\"items\":[{\"metadata\":{\"uid\":\"\x01\"}}]}"}) {
    CheckSameAsTree(text);
    netqos::pods::PodListOptions options;
    options.annotation_keys = Keys{"a", "k", "m"};
    CheckSameAsTree(text, options);
  }
}

TEST_CASE("ParsePodList: random documents in a pod list's words give the whole-tree parse's pods") {
  RandomPodDocument random(7);
  netqos::pods::PodListOptions some;
  some.annotation_keys = Keys{"a", "name"};
  size_t filled = 0;  // pods with a field read: the documents do reach what is kept
  size_t containers = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string text = random.Make();
    CheckSameAsTree(text);
    CheckSameAsTree(text, some);
    if (auto pods = ParsePodListTree(text, "test"); pods.ok()) {
      for (const auto& pod : *pods) {
        filled += pod == netqos::pods::PodInfo{} ? 0 : 1;
        containers += pod.containers.size();
      }
    }
  }
  CHECK(filled > 1000);
  CHECK(containers > 400);
}
