#include "cgroup/cgroup_paths.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cgroup/fs/cgroup_dirs.h"
#include "support/temp_dir.h"

namespace {

using netqos::StatusCode;
using netqos::cgroup::CgroupDriver;
using netqos::cgroup::CgroupId;
using netqos::cgroup::CgroupLayout;
using netqos::cgroup::ContainerCgroupCandidates;
using netqos::cgroup::ParsePodQosClass;
using netqos::cgroup::PodCgroupCandidates;
using netqos::cgroup::PodQosClass;
using netqos::cgroup::ResolveCgroupDir;
using netqos::testing::TempDir;
using V = std::vector<std::string>;

const std::string kUid = "1a2b-3c4d-5e6f";
const std::string kUid_ = "1a2b_3c4d_5e6f";

TEST_CASE("ParsePodQosClass, and the cgroup driver's spellings") {
  CHECK(ParsePodQosClass("Guaranteed") == PodQosClass::kGuaranteed);
  CHECK(ParsePodQosClass("Burstable") == PodQosClass::kBurstable);
  CHECK(ParsePodQosClass("BestEffort") == PodQosClass::kBestEffort);
  CHECK(ParsePodQosClass("") == PodQosClass::kUnknown);
  CHECK(ParsePodQosClass("burstable") == PodQosClass::kUnknown);
  CHECK(netqos::FindChoice("cgroupfs", netqos::cgroup::kCgroupDriverNames) ==
        CgroupDriver::kCgroupfs);
  CHECK(netqos::FindChoice("systemd", netqos::cgroup::kCgroupDriverNames) ==
        CgroupDriver::kSystemd);
  CHECK_FALSE(netqos::FindChoice("Systemd", netqos::cgroup::kCgroupDriverNames).has_value());
}

TEST_CASE("Pod candidates: cgroupfs driver, each QoS class") {
  const CgroupLayout fs{CgroupDriver::kCgroupfs, {}};
  CHECK(PodCgroupCandidates(fs, PodQosClass::kGuaranteed, kUid) == V{"kubepods/pod" + kUid});
  CHECK(PodCgroupCandidates(fs, PodQosClass::kBurstable, kUid) ==
        V{"kubepods/burstable/pod" + kUid});
  CHECK(PodCgroupCandidates(fs, PodQosClass::kBestEffort, kUid) ==
        V{"kubepods/besteffort/pod" + kUid});
  CHECK(
      PodCgroupCandidates(fs, PodQosClass::kUnknown, kUid) ==
      V{"kubepods/pod" + kUid, "kubepods/burstable/pod" + kUid, "kubepods/besteffort/pod" + kUid});
}

TEST_CASE("Pod candidates: systemd driver, each QoS class") {
  const CgroupLayout sd{CgroupDriver::kSystemd, {}};
  CHECK(PodCgroupCandidates(sd, PodQosClass::kGuaranteed, kUid) ==
        V{"kubepods.slice/kubepods-pod" + kUid_ + ".slice"});
  CHECK(PodCgroupCandidates(sd, PodQosClass::kBurstable, kUid) ==
        V{"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUid_ + ".slice"});
  CHECK(PodCgroupCandidates(sd, PodQosClass::kBestEffort, kUid) ==
        V{"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kUid_ + ".slice"});
  CHECK(PodCgroupCandidates(sd, PodQosClass::kUnknown, kUid).size() == 3);
}

// Every driver x QoS x runtime combination, as exact strings.
TEST_CASE("Container candidates: cgroupfs driver, every QoS class and runtime") {
  const CgroupLayout fs{CgroupDriver::kCgroupfs, {}};
  // containerd and docker use the bare id, CRI-O prefixes "crio-", unknown runtimes try both.
  const std::map<std::string, std::vector<std::string>> names = {
      {"containerd", {"c1"}}, {"docker", {"c1"}}, {"cri-o", {"crio-c1"}}, {"", {"c1", "crio-c1"}}};
  for (const auto& [runtime, leaves] : names) {
    INFO("runtime=" << runtime);
    const auto& leaf = leaves;  // clang 14 (the sanitizer builds) cannot capture a binding
    auto under = [&](const std::vector<std::string>& pods) {
      V out;
      for (const auto& pod : pods) {
        for (const auto& l : leaf) out.push_back(pod + "/" + l);
      }
      return out;
    };
    CHECK(ContainerCgroupCandidates(fs, PodQosClass::kGuaranteed, kUid, runtime, "c1") ==
          under({"kubepods/pod" + kUid}));
    CHECK(ContainerCgroupCandidates(fs, PodQosClass::kBurstable, kUid, runtime, "c1") ==
          under({"kubepods/burstable/pod" + kUid}));
    CHECK(ContainerCgroupCandidates(fs, PodQosClass::kBestEffort, kUid, runtime, "c1") ==
          under({"kubepods/besteffort/pod" + kUid}));
    CHECK(ContainerCgroupCandidates(fs, PodQosClass::kUnknown, kUid, runtime, "c1") ==
          under({"kubepods/pod" + kUid, "kubepods/burstable/pod" + kUid,
                 "kubepods/besteffort/pod" + kUid}));
  }
}

TEST_CASE("Container candidates: systemd driver, every QoS class and runtime") {
  const CgroupLayout sd{CgroupDriver::kSystemd, {}};
  const std::string g = "kubepods.slice/kubepods-pod" + kUid_ + ".slice/";
  const std::string b =
      "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUid_ + ".slice/";
  const std::string be =
      "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kUid_ + ".slice/";
  struct Case {
    std::string runtime, scope;
  };
  for (const auto& c : {Case{"containerd", "cri-containerd-c1.scope"},
                        Case{"cri-o", "crio-c1.scope"}, Case{"docker", "docker-c1.scope"}}) {
    INFO("runtime=" << c.runtime);
    CHECK(ContainerCgroupCandidates(sd, PodQosClass::kGuaranteed, kUid, c.runtime, "c1") ==
          V{g + c.scope});
    CHECK(ContainerCgroupCandidates(sd, PodQosClass::kBurstable, kUid, c.runtime, "c1") ==
          V{b + c.scope});
    CHECK(ContainerCgroupCandidates(sd, PodQosClass::kBestEffort, kUid, c.runtime, "c1") ==
          V{be + c.scope});
    CHECK(ContainerCgroupCandidates(sd, PodQosClass::kUnknown, kUid, c.runtime, "c1") ==
          V{g + c.scope, b + c.scope, be + c.scope});
  }
  // An unknown runtime tries every scope prefix.
  CHECK(ContainerCgroupCandidates(sd, PodQosClass::kBurstable, kUid, "", "c1") ==
        V{b + "cri-containerd-c1.scope", b + "crio-c1.scope", b + "docker-c1.scope"});
}

TEST_CASE("Container candidates: additional roots follow the built-in ones") {
  const CgroupLayout fs{CgroupDriver::kCgroupfs, {"/kubepods/offline/", "custom"}};
  CHECK(ContainerCgroupCandidates(fs, PodQosClass::kBurstable, kUid, "containerd", "c1") ==
        V{"kubepods/burstable/pod" + kUid + "/c1", "kubepods/offline/pod" + kUid + "/c1",
          "custom/pod" + kUid + "/c1"});
  const CgroupLayout sd{CgroupDriver::kSystemd, {"/kubepods.slice/offline.slice", "/plain"}};
  CHECK(ContainerCgroupCandidates(sd, PodQosClass::kGuaranteed, kUid, "docker", "c1") ==
        V{"kubepods.slice/kubepods-pod" + kUid_ + ".slice/docker-c1.scope",
          "kubepods.slice/offline.slice/offline-pod" + kUid_ + ".slice/docker-c1.scope",
          "plain/pod" + kUid + "/c1"});
  CHECK(PodCgroupCandidates(sd, PodQosClass::kGuaranteed, kUid) ==
        V{"kubepods.slice/kubepods-pod" + kUid_ + ".slice",
          "kubepods.slice/offline.slice/offline-pod" + kUid_ + ".slice", "plain/pod" + kUid});
}

TEST_CASE("ResolveCgroupDir: the first existing container candidate directory") {
  TempDir tmp;
  const CgroupLayout fs{CgroupDriver::kCgroupfs, {}};
  const auto candidates =
      ContainerCgroupCandidates(fs, PodQosClass::kUnknown, kUid, "containerd", "c1");

  auto none = ResolveCgroupDir(tmp.path(), candidates);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == StatusCode::kNotFound);
  CHECK_THAT(none.status().message(), Catch::Contains("kubepods/besteffort/pod" + kUid + "/c1"));
  CHECK_THAT(none.status().message(), Catch::Contains(tmp.path()));

  std::filesystem::create_directories(tmp.path() + "/kubepods/besteffort/pod" + kUid + "/c1");
  auto be = ResolveCgroupDir(tmp.path() + "/", candidates);
  REQUIRE(be.ok());
  CHECK(*be == tmp.path() + "/kubepods/besteffort/pod" + kUid + "/c1");

  // A plain file of the same name is not a cgroup directory.
  std::filesystem::create_directories(tmp.path() + "/kubepods/burstable/pod" + kUid);
  {
    auto f = std::fopen((tmp.path() + "/kubepods/burstable/pod" + kUid + "/c1").c_str(), "w");
    REQUIRE(f != nullptr);
    std::fclose(f);
  }
  CHECK(*ResolveCgroupDir(tmp.path(), candidates) == *be);

  std::filesystem::create_directories(tmp.path() + "/kubepods/pod" + kUid + "/c1");
  CHECK(*ResolveCgroupDir(tmp.path(), candidates) == tmp.path() + "/kubepods/pod" + kUid + "/c1");
}

TEST_CASE("CgroupId refuses a directory that is not on cgroup2, and a missing one") {
  TempDir tmp;
  auto id = CgroupId(tmp.path());
  REQUIRE_FALSE(id.ok());
  CHECK(id.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(id.status().message(), Catch::Contains("cgroup2"));
  CHECK_THAT(id.status().message(), Catch::Contains(tmp.path()));

  auto missing = CgroupId(tmp.path() + "/nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
}

}  // namespace
