// The CRI pod source against a real containerd 1.6 + runc (a private instance, see
// support/private_containerd.h): pods made through CRI with the kubelet's labels come back as the
// PodInfo the kubelet's /pods gave, and their containers' cgroups are where the resolver's
// candidates look.
#include <catch2/catch.hpp>
#include <string>

#include "cgroup/cgroup_paths.h"
#include "cgroup/fs/cgroup_dirs.h"
#include "cgroup/fs/mount_detect.h"
#include "pods/cri/cri_pod_source.h"
#include "pods/cri/cri_runtime.h"
#include "support/private_containerd.h"

namespace {

using netqos::pods::PodInfo;
using netqos::testing::PrivateContainerd;

const PodInfo* Find(const std::vector<PodInfo>& pods, const std::string& uid) {
  for (const auto& p : pods) {
    if (p.uid == uid) return &p;
  }
  return nullptr;
}

std::vector<PodInfo> ReadPods(netqos::cri::CriPodSource& src) {
  auto r = src.Read(true);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  REQUIRE(r->has_value());
  return **r;
}

netqos::cri::CriPodSource SourceFor(const PrivateContainerd& ctrd) {
  return netqos::cri::CriPodSource(
      netqos::cri::NewGrpcCriRuntime({ctrd.endpoint(), std::chrono::seconds(30)}), ctrd.endpoint());
}

const std::string kWebUid = "5a1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d";
const std::string kHostUid = "6b2d3e4f-5061-4b7c-9d8e-0f1a2b3c4d5e";

}  // namespace

TEST_CASE(
    "cri pod source lists a real containerd's pods with names, annotations, containers and "
    "addresses",
    "[cri][containerd]") {
  PrivateContainerd ctrd;
  PrivateContainerd::Pod web{kWebUid,
                             "shop",
                             "web-0",
                             "burstable",
                             false,
                             {{"katalyst.kubewharf.io/qos_level", "shared_cores"},
                              {"katalyst.kubewharf.io/net_class_id", "7"}},
                             ""};
  PrivateContainerd::Pod host{kHostUid, "kube-system", "agent-x", "besteffort", true, {}, ""};
  const std::string web_sandbox = ctrd.RunSandbox(web);
  const std::string app = ctrd.StartContainer(web_sandbox, "app");
  const std::string sidecar = ctrd.StartContainer(web_sandbox, "sidecar");
  const std::string host_sandbox = ctrd.RunSandbox(host);
  const std::string agent = ctrd.StartContainer(host_sandbox, "agent");

  auto src = SourceFor(ctrd);
  auto pods = ReadPods(src);
  INFO(ctrd.Log());
  CHECK(src.last_rejected().empty());
  REQUIRE(pods.size() == 2);

  const PodInfo* w = Find(pods, kWebUid);
  REQUIRE(w != nullptr);
  CHECK(w->ns == "shop");
  CHECK(w->name == "web-0");
  CHECK(w->qos_class == "Burstable");  // from containerd's verbose sandbox info
  CHECK(w->annotations.at("katalyst.kubewharf.io/qos_level") == "shared_cores");
  CHECK(w->annotations.at("katalyst.kubewharf.io/net_class_id") == "7");
  CHECK_FALSE(w->host_network);
  CHECK(w->phase == "Running");
  REQUIRE(w->ips.size() == 1);
  CHECK(w->ips[0].rfind("10.213.0.", 0) == 0);  // from the CNI bridge's host-local range
  REQUIRE(w->containers.size() == 2);
  CHECK(w->containers[0].name == "app");
  CHECK(w->containers[0].id == app);
  CHECK(w->containers[0].runtime == "containerd");
  CHECK(w->containers[1].name == "sidecar");
  CHECK(w->containers[1].id == sidecar);

  const PodInfo* h = Find(pods, kHostUid);
  REQUIRE(h != nullptr);
  CHECK(h->ns == "kube-system");
  CHECK(h->host_network);
  CHECK(h->ips.empty());
  CHECK(h->qos_class == "BestEffort");
  REQUIRE(h->containers.size() == 1);
  CHECK(h->containers[0].id == agent);
}

TEST_CASE("cri pod source finds a real container's cgroup v2 directory through the path candidates",
          "[cri][containerd]") {
  auto mount = netqos::cgroup::DetectCgroup2Mount();
  REQUIRE(mount.ok());
  PrivateContainerd ctrd;
  PrivateContainerd::Pod web{kWebUid, "shop", "web-0", "burstable", true, {}, ""};
  const std::string sandbox = ctrd.RunSandbox(web);
  const std::string app = ctrd.StartContainer(sandbox, "app");

  auto src = SourceFor(ctrd);
  auto pods = ReadPods(src);
  const PodInfo* w = Find(pods, kWebUid);
  REQUIRE(w != nullptr);
  REQUIRE(w->containers.size() == 1);

  // The pods live under a test-only root instead of /kubepods: an additional root, as Katalyst's
  // --addition-cgroup-paths gives them.
  netqos::cgroup::CgroupLayout layout;
  layout.additional_roots = {ctrd.CgroupParentOf("burstable")};
  const auto dir = netqos::cgroup::ResolveCgroupDir(
      *mount, netqos::cgroup::ContainerCgroupCandidates(
                  layout, netqos::cgroup::ParsePodQosClass(w->qos_class), w->uid,
                  w->containers[0].runtime, w->containers[0].id));
  INFO((dir.ok() ? *dir : dir.status().message()));
  REQUIRE(dir.ok());
  CHECK(*dir == *mount + ctrd.CgroupParentOf("burstable") + "/pod" + kWebUid + "/" + app);
  // runc put the container's process there.
  std::ifstream procs(*dir + "/cgroup.procs");
  std::string pid;
  CHECK(static_cast<bool>(std::getline(procs, pid)));
  CHECK(netqos::cgroup::CgroupId(*dir).ok());
}

TEST_CASE("cri pod source drops a stopped container and reports the change", "[cri][containerd]") {
  PrivateContainerd ctrd;
  PrivateContainerd::Pod web{kWebUid, "shop", "web-0", "", true, {}, ""};
  const std::string sandbox = ctrd.RunSandbox(web);
  const std::string app = ctrd.StartContainer(sandbox, "app");
  auto src = SourceFor(ctrd);
  REQUIRE(ReadPods(src)[0].containers.size() == 1);
  CHECK(ReadPods(src)[0].qos_class == "Guaranteed");
  auto same = src.Read(false);
  REQUIRE(same.ok());
  CHECK_FALSE(same->has_value());

  ctrd.StopContainer(app);
  auto after = src.Read(false);
  REQUIRE(after.ok());
  REQUIRE(after->has_value());
  REQUIRE((*after)->size() == 1);
  CHECK((**after)[0].containers.empty());
  CHECK((**after)[0].phase == "Pending");
}
