// The CRI pod source against a fake runtime at its port (cri/cri_runtime.h): the kubelet's labels
// and the sandbox status become PodInfo, hostile values are left out with a reason, sandbox
// statuses are asked once, and unchanged answers are not a change.
#include "pods/cri/cri_pod_source.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pods/cri/cri_endpoint.h"
#include "pods/cri/cri_translate.h"
#include "support/temp_dir.h"

namespace {

using netqos::Result;
using netqos::Status;
using netqos::StatusCode;
using netqos::cri::CriPodSource;
using netqos::pods::PodInfo;
namespace v1 = runtime::v1;

const std::string kUid = "0b6c5d2e-1f3a-4c5b-9d8e-7f6a5b4c3d2e";
const std::string kSandbox(64, 'a');
const std::string kApp(64, 'b');
const std::string kSidecar(64, 'c');

struct FakeRuntime : netqos::cri::CriRuntime {
  v1::ListPodSandboxResponse sandboxes;
  std::map<std::string, v1::PodSandboxStatusResponse> statuses;
  v1::ListContainersResponse containers;
  Status list_error;
  int status_calls = 0;

  Result<v1::VersionResponse> Version() override {
    v1::VersionResponse r;
    r.set_runtime_name("containerd");
    return r;
  }
  Result<v1::ListPodSandboxResponse> ListPodSandbox() override {
    if (!list_error.ok()) return list_error;
    return sandboxes;
  }
  Result<v1::PodSandboxStatusResponse> PodSandboxStatus(const std::string& id) override {
    ++status_calls;
    auto it = statuses.find(id);
    if (it == statuses.end()) return netqos::NotFound("no sandbox " + id);
    return it->second;
  }
  Result<v1::ListContainersResponse> ListContainers() override { return containers; }
};

v1::PodSandbox* AddSandbox(FakeRuntime& rt, const std::string& id, const std::string& uid,
                           const std::string& ns, const std::string& name, int64_t created) {
  auto* sb = rt.sandboxes.add_items();
  sb->set_id(id);
  sb->mutable_metadata()->set_uid(uid);
  sb->mutable_metadata()->set_namespace_(ns);
  sb->mutable_metadata()->set_name(name);
  sb->set_created_at(created);
  (*sb->mutable_labels())[netqos::cri::kPodUidLabel] = uid;
  (*sb->mutable_labels())[netqos::cri::kPodNamespaceLabel] = ns;
  (*sb->mutable_labels())[netqos::cri::kPodNameLabel] = name;
  return sb;
}

v1::Container* AddContainer(FakeRuntime& rt, const std::string& id, const std::string& sandbox,
                            const std::string& uid, const std::string& name,
                            v1::ContainerState state) {
  auto* c = rt.containers.add_containers();
  c->set_id(id);
  c->set_pod_sandbox_id(sandbox);
  c->set_state(state);
  c->mutable_metadata()->set_name(name);
  (*c->mutable_labels())[netqos::cri::kPodUidLabel] = uid;
  (*c->mutable_labels())[netqos::cri::kContainerNameLabel] = name;
  return c;
}

v1::PodSandboxStatusResponse SandboxStatus(const std::string& ip, const std::string& extra_ip,
                                           const std::string& cgroup_parent) {
  v1::PodSandboxStatusResponse r;
  r.mutable_status()->mutable_network()->set_ip(ip);
  if (!extra_ip.empty())
    r.mutable_status()->mutable_network()->add_additional_ips()->set_ip(extra_ip);
  if (!cgroup_parent.empty()) {
    (*r.mutable_info())["info"] =
        R"({"pid":42,"config":{"linux":{"cgroup_parent":")" + cgroup_parent + R"("}}})";
  }
  return r;
}

// One pod with an app container and a sidecar, as the kubelet makes it on containerd.
FakeRuntime* OnePod() {
  auto* rt = new FakeRuntime;
  auto* sb = AddSandbox(*rt, kSandbox, kUid, "shop", "web-0", 100);
  (*sb->mutable_annotations())["katalyst.kubewharf.io/qos_level"] = "shared_cores";
  rt->statuses[kSandbox] = SandboxStatus("10.0.0.7", "fd00::7", "/kubepods/burstable/pod" + kUid);
  AddContainer(*rt, kApp, kSandbox, kUid, "app", v1::CONTAINER_RUNNING);
  AddContainer(*rt, kSidecar, kSandbox, kUid, "sidecar", v1::CONTAINER_CREATED);
  return rt;
}

std::vector<PodInfo> MustRead(CriPodSource& src, bool force = true) {
  auto r = src.Read(force);
  REQUIRE(r.ok());
  REQUIRE(r->has_value());
  return **r;
}

}  // namespace

TEST_CASE(
    "cri pod source: a kubelet pod becomes its uid, names, annotations, containers and addresses",
    "[cri]") {
  FakeRuntime* rt = OnePod();
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  auto pods = MustRead(src);
  REQUIRE(pods.size() == 1);
  const PodInfo& p = pods[0];
  CHECK(p.uid == kUid);
  CHECK(p.ns == "shop");
  CHECK(p.name == "web-0");
  CHECK(p.qos_class == "Burstable");
  CHECK(p.annotations.at("katalyst.kubewharf.io/qos_level") == "shared_cores");
  CHECK_FALSE(p.host_network);
  CHECK(p.phase == "Running");
  CHECK(p.ips == std::vector<std::string>{"10.0.0.7", "fd00::7"});
  REQUIRE(p.containers.size() == 2);
  CHECK(p.containers[0].name == "app");
  CHECK(p.containers[0].id == kApp);
  CHECK(p.containers[0].runtime == "containerd");
  CHECK_FALSE(p.containers[0].init);
  CHECK(p.containers[1].name == "sidecar");
  CHECK(src.Describe() == "cri:unix:///x.sock");
}

TEST_CASE(
    "cri pod source: a sandbox in the node's network namespace is host network without addresses",
    "[cri]") {
  FakeRuntime* rt = OnePod();
  auto& st = rt->statuses[kSandbox];
  st.mutable_status()->mutable_linux()->mutable_namespaces()->mutable_options()->set_network(
      v1::NODE);
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  auto pods = MustRead(src);
  REQUIRE(pods.size() == 1);
  CHECK(pods[0].host_network);
  CHECK(pods[0].ips.empty());
}

TEST_CASE("cri pod source: exited containers and containers of unlisted sandboxes are not listed",
          "[cri]") {
  FakeRuntime* rt = OnePod();
  AddContainer(*rt, std::string(64, 'd'), kSandbox, kUid, "old", v1::CONTAINER_EXITED);
  AddContainer(*rt, std::string(64, 'e'), std::string(64, 'f'), kUid, "stray",
               v1::CONTAINER_RUNNING);
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  auto pods = MustRead(src);
  REQUIRE(pods.size() == 1);
  CHECK(pods[0].containers.size() == 2);
}

TEST_CASE("cri pod source: a pod's newest ready sandbox wins over an older stopped one", "[cri]") {
  FakeRuntime* rt = OnePod();
  const std::string old_sandbox(64, '1');
  auto* old = AddSandbox(*rt, old_sandbox, kUid, "shop", "web-0", 50);
  old->set_state(v1::SANDBOX_NOTREADY);
  (*old->mutable_annotations())["katalyst.kubewharf.io/qos_level"] = "reclaimed_cores";
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  auto pods = MustRead(src);
  REQUIRE(pods.size() == 1);
  CHECK(pods[0].annotations.at("katalyst.kubewharf.io/qos_level") == "shared_cores");
  CHECK(pods[0].ips.size() == 2);
  CHECK(rt->status_calls == 1);  // the stopped sandbox is not asked about
}

TEST_CASE("cri pod source: a pod whose only sandbox is stopped has no addresses and phase Unknown",
          "[cri]") {
  FakeRuntime* rt = OnePod();
  rt->sandboxes.mutable_items(0)->set_state(v1::SANDBOX_NOTREADY);
  rt->containers.Clear();
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  auto pods = MustRead(src);
  REQUIRE(pods.size() == 1);
  CHECK(pods[0].phase == "Unknown");
  CHECK(pods[0].ips.empty());
}

TEST_CASE("cri pod source: hostile ids, uids and names are left out with a reason", "[cri]") {
  FakeRuntime* rt = OnePod();
  AddSandbox(*rt, "../../escape", "1111", "ns", "p", 1);
  AddSandbox(*rt, std::string(64, '2'), "../etc", "ns", "p", 1);
  AddSandbox(*rt, std::string(64, '3'), "2222", "ns/x", "p", 1);
  auto* mismatch = AddSandbox(*rt, std::string(64, '4'), "3333", "ns", "p", 1);
  mismatch->mutable_metadata()->set_uid("4444");
  AddContainer(*rt, "../x", kSandbox, kUid, "evil", v1::CONTAINER_RUNNING);
  AddContainer(*rt, std::string(64, '5'), kSandbox, "9999", "other", v1::CONTAINER_RUNNING);
  AddContainer(*rt, std::string(64, '6'), kSandbox, kUid, "Bad/Name", v1::CONTAINER_RUNNING);
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  auto pods = MustRead(src);
  REQUIRE(pods.size() == 1);
  CHECK(pods[0].containers.size() == 2);
  const auto& why = src.last_rejected();
  REQUIRE(why.size() == 7);
  CHECK(why[0].find("sandbox id is not a runtime id") != std::string::npos);
  CHECK(why[1].find("pod uid label \"../etc\" is not a pod uid") != std::string::npos);
  CHECK(why[2].find("pod namespace label \"ns/x\"") != std::string::npos);
  CHECK(why[3].find("metadata uid \"4444\" differs") != std::string::npos);
  CHECK(why[4].find("container id is not a runtime id") != std::string::npos);
  CHECK(why[5].find("differs from its sandbox's pod") != std::string::npos);
  CHECK(why[6].find("container name label \"Bad/Name\"") != std::string::npos);
}

TEST_CASE("cri pod source: sandboxes without the kubelet's labels are not pods", "[cri]") {
  FakeRuntime* rt = OnePod();
  auto* other = rt->sandboxes.add_items();
  other->set_id(std::string(64, '7'));
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  auto pods = MustRead(src);
  CHECK(pods.size() == 1);
  CHECK(src.last_rejected().empty());
}

TEST_CASE("cri pod source: oversized annotations leave the sandbox out", "[cri]") {
  FakeRuntime* rt = OnePod();
  (*rt->sandboxes.mutable_items(0)->mutable_annotations())["big"] =
      std::string(netqos::cri::kMaxAnnotationBytes, 'x');
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  auto pods = MustRead(src);
  CHECK(pods.empty());
  REQUIRE(src.last_rejected().size() == 1);
  CHECK(src.last_rejected()[0].find("annotations exceed") != std::string::npos);
}

namespace {

using Keys = std::set<std::string, std::less<>>;

// A kubelet-made sandbox carries every annotation of its pod: a few netqos reads, many it does
// not (bookkeeping of controllers, a last applied configuration of tens of KiB).
void AddUnreadAnnotations(v1::PodSandbox* sb) {
  auto& annotations = *sb->mutable_annotations();
  for (int i = 0; i < 100; ++i) {
    annotations["example.com/bookkeeping-" + std::to_string(i)] = std::string(512, 'u');
  }
  annotations["kubectl.kubernetes.io/last-applied-configuration"] = std::string(64 * 1024, 'l');
  annotations["kubernetes.io/egress-bandwidth"] = "10M";
}

}  // namespace

TEST_CASE("cri pod source: only the annotation keys asked for are kept", "[cri]") {
  FakeRuntime* rt = OnePod();
  AddUnreadAnnotations(rt->sandboxes.mutable_items(0));
  netqos::pods::PodListOptions options;
  options.annotation_keys =
      Keys{"katalyst.kubewharf.io/qos_level", "kubernetes.io/egress-bandwidth", "netqos.io/burst"};
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock", options);
  auto pods = MustRead(src);
  REQUIRE(pods.size() == 1);
  CHECK(src.last_rejected().empty());
  CHECK(pods[0].annotations ==
        std::map<std::string, std::string>{{"katalyst.kubewharf.io/qos_level", "shared_cores"},
                                           {"kubernetes.io/egress-bandwidth", "10M"}});
  // Every other field as without a filter.
  CHECK(pods[0].containers.size() == 2);
  CHECK(pods[0].ips == std::vector<std::string>{"10.0.0.7", "fd00::7"});
}

TEST_CASE("cri translate: no annotation keys given keeps them all, an empty set none", "[cri]") {
  std::unique_ptr<FakeRuntime> rt(OnePod());
  AddUnreadAnnotations(rt->sandboxes.mutable_items(0));
  std::map<std::string, netqos::cri::SandboxDetails> details;
  const auto all = netqos::cri::TranslatePods(rt->sandboxes, details, rt->containers, "containerd");
  REQUIRE(all.pods.size() == 1);
  CHECK(all.pods[0].annotations.size() == 103);
  CHECK(all.pods[0].annotations.at("kubectl.kubernetes.io/last-applied-configuration").size() ==
        64 * 1024);

  netqos::pods::PodListOptions none;
  none.annotation_keys.emplace();
  const auto kept =
      netqos::cri::TranslatePods(rt->sandboxes, details, rt->containers, "containerd", none);
  REQUIRE(kept.pods.size() == 1);
  CHECK(kept.pods[0].annotations.empty());
  CHECK(kept.pods[0].containers == all.pods[0].containers);
}

TEST_CASE("cri pod source: the annotation bound counts the annotations that are not kept",
          "[cri]") {
  // Past the API server's limit with unread annotations alone: not a pod the cluster admitted,
  // whatever netqos would have kept of it.
  FakeRuntime* rt = OnePod();
  (*rt->sandboxes.mutable_items(0)->mutable_annotations())["example.com/unread"] =
      std::string(netqos::cri::kMaxAnnotationBytes, 'x');
  netqos::pods::PodListOptions options;
  options.annotation_keys = Keys{"katalyst.kubewharf.io/qos_level"};
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock", options);
  auto pods = MustRead(src);
  CHECK(pods.empty());
  REQUIRE(src.last_rejected().size() == 1);
  CHECK(src.last_rejected()[0].find("annotations exceed 262144 bytes") != std::string::npos);
}

TEST_CASE("cri pod source: addresses that are not IP text are dropped", "[cri]") {
  FakeRuntime* rt = OnePod();
  rt->statuses[kSandbox] = SandboxStatus("10.0.0.7; rm -rf /", "10.0.0.8", "");
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  auto pods = MustRead(src);
  REQUIRE(pods.size() == 1);
  CHECK(pods[0].ips == std::vector<std::string>{"10.0.0.8"});
  CHECK(pods[0].qos_class.empty());  // no verbose info: every class is tried
}

TEST_CASE("cri pod source: a sandbox's status is asked once, and again while it has no address",
          "[cri]") {
  FakeRuntime* rt = OnePod();
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  MustRead(src);
  MustRead(src);
  CHECK(rt->status_calls == 1);

  FakeRuntime* bare = OnePod();
  bare->statuses[kSandbox] = SandboxStatus("", "", "");
  CriPodSource src2(std::unique_ptr<netqos::cri::CriRuntime>(bare), "unix:///x.sock");
  MustRead(src2);
  MustRead(src2);
  CHECK(bare->status_calls == 2);
}

TEST_CASE("cri pod source: the same answer is no change unless forced, a new container is one",
          "[cri]") {
  FakeRuntime* rt = OnePod();
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  MustRead(src, false);
  auto again = src.Read(false);
  REQUIRE(again.ok());
  CHECK_FALSE(again->has_value());
  CHECK(MustRead(src, true).size() == 1);
  AddContainer(*rt, std::string(64, '8'), kSandbox, kUid, "late", v1::CONTAINER_RUNNING);
  CHECK(MustRead(src, false)[0].containers.size() == 3);
}

TEST_CASE(
    "cri pod source: a failed list is returned naming the call, and the next read is a change",
    "[cri]") {
  FakeRuntime* rt = OnePod();
  CriPodSource src(std::unique_ptr<netqos::cri::CriRuntime>(rt), "unix:///x.sock");
  MustRead(src, false);
  rt->list_error = netqos::Unavailable("CRI ListPodSandbox on unix:///x.sock: connection refused");
  auto failed = src.Read(false);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == StatusCode::kUnavailable);
  CHECK(failed.status().message().find("ListPodSandbox") != std::string::npos);
  rt->list_error = Status();
  CHECK(MustRead(src, false).size() == 1);
}

TEST_CASE("cri translate: the QoS class follows from the cgroup parent of either driver", "[cri]") {
  using netqos::cri::QosClassFromCgroupParent;
  const std::string u = "ab-cd";
  CHECK(QosClassFromCgroupParent("/kubepods/podab-cd", u) == "Guaranteed");
  CHECK(QosClassFromCgroupParent("/kubepods/burstable/podab-cd", u) == "Burstable");
  CHECK(QosClassFromCgroupParent("/kubepods/besteffort/podab-cd/", u) == "BestEffort");
  CHECK(QosClassFromCgroupParent("kubepods-podab_cd.slice", u) == "Guaranteed");
  CHECK(QosClassFromCgroupParent("kubepods-burstable-podab_cd.slice", u) == "Burstable");
  CHECK(QosClassFromCgroupParent("kubepods-besteffort-podab_cd.slice", u) == "BestEffort");
  CHECK(QosClassFromCgroupParent("/kubepods/burstable/podother", u).empty());
  CHECK(QosClassFromCgroupParent("/elsewhere/podab-cd", u).empty());
  CHECK(QosClassFromCgroupParent("", u).empty());
}

TEST_CASE("cri endpoint: --cri-socket is auto, or an absolute path as a unix URL", "[cri]") {
  using netqos::cri::CriSocket;
  using netqos::cri::ParseCriSocket;
  struct Good {
    std::string flag;
    std::string endpoint;  // "" = auto
  };
  for (const auto& c : std::vector<Good>{
           {"auto", ""},
           {"/run/x.sock", "unix:///run/x.sock"},
           {"unix:///run/x.sock", "unix:///run/x.sock"},
           {"//run/x.sock", "unix:////run/x.sock"},
       }) {
    INFO(c.flag);
    auto r = ParseCriSocket(c.flag);
    REQUIRE(r.ok());
    CHECK(r->endpoint == c.endpoint);
    CHECK(r->Auto() == c.endpoint.empty());
  }
  for (const std::string bad :
       {"tcp://1.2.3.4:1", "run/x.sock", "unix://run/x.sock", "unix://", "", "AUTO"}) {
    INFO(bad);
    auto r = ParseCriSocket(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == netqos::StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::StartsWith("--cri-socket \"" + bad + "\": want auto"));
  }
}

TEST_CASE("cri endpoint: auto picks the first existing socket, a given one is dialled as is",
          "[cri]") {
  using netqos::cri::CriSocket;
  using netqos::cri::ResolveCriEndpoint;
  auto missing = ResolveCriEndpoint(CriSocket{}, {"/nonexistent/a.sock", "/nonexistent/b.sock"});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == netqos::StatusCode::kNotFound);
  CHECK(missing.status().message().find("/nonexistent/a.sock, /nonexistent/b.sock") !=
        std::string::npos);
  CHECK(*ResolveCriEndpoint(CriSocket{"unix:///run/x.sock"}, {"/nonexistent/a.sock"}) ==
        "unix:///run/x.sock");

  // A socket is taken; a regular file at an earlier candidate is not.
  netqos::testing::TempDir dir;
  const std::string file = dir.file("file.sock");
  std::FILE* f = std::fopen(file.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fclose(f);
  const std::string sock = dir.file("runtime.sock");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(sock.size() < sizeof(addr.sun_path));
  std::copy(sock.begin(), sock.end(), addr.sun_path);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0);
  auto found = ResolveCriEndpoint(CriSocket{}, {"/nonexistent/a.sock", file, sock});
  ::close(fd);
  REQUIRE(found.ok());
  CHECK(*found == "unix://" + sock);
}
