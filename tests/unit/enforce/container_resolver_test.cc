// Recognising container cgroup paths of both drivers (the watcher reports every new directory), and
// resolving a hostile pod list's containers.
#include "enforce/container_resolver.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/plain_cgroup_tree.h"
#include "support/temp_dir.h"

namespace {

using netqos::enforce::ContainerCgroupName;
using netqos::enforce::ParseContainerCgroupPath;
using netqos::testing::TempDir;

const std::string kUid = "0f1e2d3c-aaaa-4bbb-8ccc-1234567890ab";
const std::string kUid_ = "0f1e2d3c_aaaa_4bbb_8ccc_1234567890ab";
const std::string kId = "3f4e5d6c7b8a99001122334455667788aabbccddeeff00112233445566778899";

uint64_t Inode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_ino;
}

}  // namespace

TEST_CASE("container cgroup paths of the cgroupfs driver", "[enforce]") {
  struct Row {
    std::string path;
    std::string uid;
    std::string id;
  };
  const std::vector<Row> rows = {
      {"/sys/fs/cgroup/kubepods/pod" + kUid + "/" + kId, kUid, kId},
      {"/sys/fs/cgroup/kubepods/burstable/pod" + kUid + "/" + kId, kUid, kId},
      {"/sys/fs/cgroup/kubepods/besteffort/pod" + kUid + "/" + kId, kUid, kId},
      {"/sys/fs/cgroup/kubepods/besteffort/pod" + kUid + "/" + kId + "/", kUid, kId},
      {"kubepods/pod" + kUid + "/abc", kUid, "abc"},
      {"/sys/fs/cgroup/kubepods/offline/pod" + kUid + "/" + kId, kUid, kId},  // extra root
      // Static pods: the uid is the manifest hash, no dashes.
      {"/sys/fs/cgroup/kubepods/pod0123456789abcdef0123456789abcdef/" + kId,
       "0123456789abcdef0123456789abcdef", kId},
  };
  for (const auto& row : rows) {
    INFO(row.path);
    const auto got = ParseContainerCgroupPath(row.path);
    REQUIRE(got.has_value());
    CHECK(got->pod_uid == row.uid);
    CHECK(got->container_id == row.id);
  }
}

TEST_CASE("container cgroup paths of the systemd driver", "[enforce]") {
  const std::string base = "/sys/fs/cgroup/kubepods.slice/";
  struct Row {
    std::string path;
    std::string id;
  };
  const std::vector<Row> rows = {
      {base + "kubepods-burstable.slice/kubepods-burstable-pod" + kUid_ + ".slice/cri-containerd-" +
           kId + ".scope",
       kId},
      {base + "kubepods-besteffort.slice/kubepods-besteffort-pod" + kUid_ + ".slice/crio-" + kId +
           ".scope",
       kId},
      {base + "kubepods-pod" + kUid_ + ".slice/docker-" + kId + ".scope", kId},
      {base + "kubepods-pod" + kUid_ + ".slice/docker-" + kId + ".scope/", kId},
      {"/sys/fs/cgroup/offline.slice/offline-pod" + kUid_ + ".slice/cri-containerd-abc.scope",
       "abc"},
  };
  for (const auto& row : rows) {
    INFO(row.path);
    const auto got = ParseContainerCgroupPath(row.path);
    REQUIRE(got.has_value());
    CHECK(got->pod_uid == kUid);  // underscores back to dashes
    CHECK(got->container_id == row.id);
  }
}

TEST_CASE("pod, QoS and slice directories and unrelated paths are not containers", "[enforce]") {
  const std::vector<std::string> paths = {
      "",
      "/",
      "kubepods",
      "/sys/fs/cgroup",
      "/sys/fs/cgroup/kubepods",
      "/sys/fs/cgroup/kubepods/burstable",
      "/sys/fs/cgroup/kubepods/besteffort/",
      "/sys/fs/cgroup/kubepods/pod" + kUid,
      "/sys/fs/cgroup/kubepods/burstable/pod" + kUid,
      "/sys/fs/cgroup/kubepods/burstable/pod" + kUid + "/",
      "/sys/fs/cgroup/kubepods/pod/" + kId,  // no uid
      "/sys/fs/cgroup/kubepods.slice",
      "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice",
      "/sys/fs/cgroup/kubepods.slice/kubepods-pod" + kUid_ + ".slice",
      "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUid_ +
          ".slice",
      "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUid_ +
          ".slice/",
      "/sys/fs/cgroup/kubepods.slice/kubepods-pod.slice/cri-containerd-" + kId + ".scope",
      "/sys/fs/cgroup/kubepods.slice/kubepods-pod" + kUid_ + ".slice/cri-containerd-.scope",
      "/sys/fs/cgroup/kubepods.slice/kubepods-pod" + kUid_ + ".slice/" + kId + ".scope",
      "/sys/fs/cgroup/system.slice/containerd.service",
      "/sys/fs/cgroup/system.slice/docker-" + kId + ".scope",
      "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope",
      "/sys/fs/cgroup/init.scope",
  };
  for (const auto& path : paths) {
    INFO("path \"" << path << "\"");
    const auto got = ParseContainerCgroupPath(path);
    CHECK_FALSE(got.has_value());
    if (got) INFO("parsed as pod " << got->pod_uid << " container " << got->container_id);
  }
}

TEST_CASE("a hostile pod list cannot point resolution at a cgroup outside its pod", "[enforce]") {
  // The kubelet's answer is input like any other: a uid or container id with '/' or '..' would
  // otherwise be joined into a path that names a host cgroup (here a directory that exists).
  TempDir dir;
  std::filesystem::create_directories(dir.file("kubepods/pod" + kUid + "/" + kId));
  // Each escape below names a directory that exists, so without the checks it would resolve.
  std::filesystem::create_directories(dir.file("system.slice/victim/ab"));
  std::filesystem::create_directories(dir.file("kubepods/podx"));
  std::filesystem::create_directories(dir.file("kubepods/pod" + kUid + "/victim"));
  netqos::enforce::ContainerResolver resolver(dir.path(), netqos::cgroup::CgroupLayout{},
                                              netqos::testing::PlainCgroupTree());
  auto pod = [](const std::string& uid, const std::string& id) {
    netqos::pods::PodInfo p;
    p.uid = uid;
    p.ns = "ns";
    p.name = "p";
    p.qos_class = "Guaranteed";
    p.containers.push_back({"app", "containerd", id, false});
    return p;
  };
  const std::vector<netqos::pods::PodInfo> pods = {
      pod(kUid, kId),                            // fine
      pod("x/../../system.slice/victim", "ab"),  // uid escapes
      pod(kUid, "../../system.slice/victim"),    // container id escapes
      pod(kUid, "victim/../" + kId),             // a slash at all
      pod(kUid, ".."),                           // the parent itself
      pod("static-web-node1", "abc123"),         // not a UUID, but harmless: looked up
  };
  const auto resolved = resolver.Resolve(pods, {});
  REQUIRE(resolved.containers.size() == 1);
  CHECK(resolved.containers[0].cgroup_id == Inode(dir.file("kubepods/pod" + kUid + "/" + kId)));
  REQUIRE(resolved.rejected.size() == 4);
  CHECK(resolved.missing.size() == 1);  // the harmless one: its cgroup does not exist
  CHECK(resolved.rejected[0].find("pod uid \"x/../../system.slice/victim\"") != std::string::npos);
  CHECK(resolved.rejected[1].find("container id \"../../system.slice/victim\"") !=
        std::string::npos);
  CHECK_FALSE(resolver.ResolveOne(pods[2], pods[2].containers[0]).has_value());
}

TEST_CASE("containers of one pod share one copy of its metadata and annotations", "[enforce]") {
  // At 10,000 containers a copy per container of the pod's names and annotations was most of a
  // pass's result; a pod's containers point at one object, made once per pod per resolve.
  TempDir dir;
  const std::string other_uid = "9a8b7c6d-1111-4222-8333-444455556666";
  const std::string id2 = std::string(63, 'a') + "2";
  const std::string id3 = std::string(63, 'b') + "3";
  std::filesystem::create_directories(dir.file("kubepods/pod" + kUid + "/" + kId));
  std::filesystem::create_directories(dir.file("kubepods/pod" + kUid + "/" + id2));
  std::filesystem::create_directories(dir.file("kubepods/pod" + other_uid + "/" + id3));
  netqos::enforce::ContainerResolver resolver(dir.path(), netqos::cgroup::CgroupLayout{},
                                              netqos::testing::PlainCgroupTree());
  netqos::pods::PodInfo web;
  web.uid = kUid;
  web.ns = "shop";
  web.name = "web-7d9f8b6c5d-x2k4p";
  web.qos_class = "Guaranteed";
  web.annotations = {{"kubernetes.io/egress-bandwidth", "20M"},
                     {"kubernetes.io/config.source", "api"}};
  web.containers.push_back({"app", "containerd", kId, false});
  web.containers.push_back({"sidecar", "containerd", id2, false});
  netqos::pods::PodInfo db = web;
  db.uid = other_uid;
  db.name = "db-0";
  db.annotations = {{"kubernetes.io/config.source", "api"}};
  db.containers = {{"db", "containerd", id3, false}};

  const auto resolved = resolver.Resolve({web, db}, {});
  REQUIRE(resolved.containers.size() == 3);
  const auto& app = resolved.containers[0];
  const auto& sidecar = resolved.containers[1];
  const auto& other = resolved.containers[2];
  CHECK(app.container_name == "app");
  CHECK(sidecar.container_name == "sidecar");
  CHECK(app.pod.get() == sidecar.pod.get());
  CHECK(app.annotations.get() == sidecar.annotations.get());
  CHECK(app.pod.use_count() == 2);  // the two containers, no copy kept elsewhere
  CHECK(app.pod.get() != other.pod.get());
  CHECK(app.annotations.get() != other.annotations.get());
  CHECK(app.pod_uid() == kUid);
  CHECK(app.pod_namespace() == "shop");
  CHECK(sidecar.pod_name() == "web-7d9f8b6c5d-x2k4p");
  CHECK(sidecar.pod_annotations() == web.annotations);
  CHECK(other.pod_uid() == other_uid);
  CHECK(other.pod_name() == "db-0");
  CHECK(other.pod_annotations() == db.annotations);

  const auto one = resolver.ResolveOne(web, web.containers[1]);
  REQUIRE(one.has_value());
  CHECK(one->container_name == "sidecar");
  CHECK(one->pod_uid() == kUid);
  CHECK(one->pod_name() == "web-7d9f8b6c5d-x2k4p");
  CHECK(one->pod_annotations() == web.annotations);
}
