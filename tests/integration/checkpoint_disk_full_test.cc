// A full disk under the checkpoint, for real: a small tmpfs mounted for the test, filled until
// write() says ENOSPC. What is checked: a restart on the full disk loads the state and serves it
// (the start-up snapshot fails, and only that is reported); a change that cannot be persisted is
// refused with the write's error and allocates nothing; once space is back, changes persist and
// a later start finds all of them. Root only (mount); the tmpfs goes away on scope exit.
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/file_state_store.h"
#include "core/constants.h"
#include "service/allocation_service.h"
#include "support/temp_dir.h"
#include "unit/grpc/service_fixture.h"

namespace {

using netqos::service::AllocationService;

// A tmpfs of `bytes` at a fresh directory; unmounted (and the directory removed) on scope exit.
class SmallTmpfs {
 public:
  explicit SmallTmpfs(size_t bytes) {
    const std::string opts = "size=" + std::to_string(bytes) + ",mode=0700";
    if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
      FAIL("mount tmpfs at " << dir_.path() << ": " << std::strerror(errno));
    }
  }
  ~SmallTmpfs() { ::umount2(dir_.path().c_str(), MNT_DETACH); }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  std::string path() const { return dir_.path(); }

 private:
  netqos::testing::TempDir dir_;  // destroyed after the unmount above
};

// Writes zeros into `path` until the file system refuses: the disk is then full.
void FillUp(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  const std::vector<char> zeros(4096, 0);
  int err = 0;
  for (;;) {
    const ssize_t n = ::write(fd, zeros.data(), zeros.size());
    if (n < 0) {
      err = errno;
      break;
    }
  }
  ::close(fd);
  REQUIRE(err == ENOSPC);
}

netqos::core::ContainerRequest Request(const std::string& uid, int mbps) {
  netqos::core::ContainerRequest r;
  r.pod_uid = uid;
  r.pod_namespace = "ns";
  r.pod_name = uid;
  r.container_name = "app";
  r.resource_name = netqos::core::kResourceName;
  r.resource_requests[netqos::core::kResourceName] = mbps;
  r.annotations["katalyst.kubewharf.io/qos_level"] = "shared_cores";
  return r;
}

netqos::Result<std::unique_ptr<AllocationService>> Start(const std::string& dir) {
  netqos::checkpoint::FileStateStore::Options o;
  o.dir = dir;
  auto store = netqos::checkpoint::FileStateStore::Create(o);
  REQUIRE(store.ok());
  auto policy = netqos::core::StaticPolicy::Create(netqos::core::PolicyConfig{},
                                                   netqos::testing::FixtureTopology());
  REQUIRE(policy.ok());
  return AllocationService::Create(std::move(policy).value(), std::move(store).value(),
                                   std::make_unique<netqos::core::FirstNicChooser>(),
                                   AllocationService::Durability::kJournal);
}

}  // namespace

TEST_CASE(
    "checkpoint: on a full disk netqosd starts from the state it loaded and refuses only "
    "changes it cannot persist",
    "[checkpoint][disk]") {
  // Room for the state and one journal segment (1 MiB, written with zeros when it is created).
  SmallTmpfs disk(4 * 1024 * 1024);
  const std::string state = disk.path() + "/state";
  const std::string filler = disk.path() + "/filler";
  {
    auto svc = Start(state);
    REQUIRE(svc.ok());
    for (const char* uid : {"pod-a", "pod-b", "pod-c"}) {
      REQUIRE((*svc)->Allocate(Request(uid, 100)).ok());
    }
  }
  FillUp(filler);

  // The restart reads everything; writing its snapshot fails, and that alone does not stop it.
  auto svc = Start(state);
  INFO((svc.ok() ? std::string() : svc.status().message()));
  REQUIRE(svc.ok());
  const auto before = (*svc)->Snapshot();
  CHECK(before.pod_entries.size() == 3);

  // A change that cannot be journalled is refused, names the cause, and allocates nothing.
  auto refused = (*svc)->Allocate(Request("pod-d", 100));
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("No space left on device"));
  CHECK((*svc)->Snapshot().pod_entries == before.pod_entries);
  CHECK_FALSE((*svc)->RemovePod("pod-a").ok());
  CHECK((*svc)->Snapshot().pod_entries == before.pod_entries);

  // Space back: changes persist again, and a later start finds all of them.
  REQUIRE(::unlink(filler.c_str()) == 0);
  REQUIRE((*svc)->Allocate(Request("pod-d", 100)).ok());
  REQUIRE((*svc)->RemovePod("pod-a").ok());
  svc->reset();
  auto again = Start(state);
  REQUIRE(again.ok());
  const auto after = (*again)->Snapshot().pod_entries;
  CHECK(after.count("pod-a") == 0);
  CHECK(after.count("pod-b") == 1);
  CHECK(after.count("pod-c") == 1);
  CHECK(after.count("pod-d") == 1);
}
