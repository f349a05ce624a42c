// PinnedMaps and the map readers: bpf_obj_get on the pins, plain map syscalls. See pinned_maps.h.
#include "bpf/pinned_maps.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "bpf/map_migration.h"
#include "common/errno_status.h"

namespace netqos::bpf {
namespace {

// A deleted key makes bpf_map_get_next_key restart from the first key; seen keys are skipped
// and the walk is bounded, so entries changing underneath never loop forever.
constexpr size_t kMaxWalk = 4 * static_cast<size_t>(NETQOS_MAX_ENTRIES);

template <typename Key, typename Fn>
Status WalkKeys(int fd, const char* map_name, Fn&& fn) {
  std::set<Key> seen;
  Key key{};
  const Key* prev = nullptr;
  for (size_t steps = 0; steps < kMaxWalk; ++steps) {
    int err = bpf_map_get_next_key(fd, prev, &key);
    if (err == -ENOENT) return Status::Ok();
    if (err) return ErrnoStatus(std::string("bpf_map_get_next_key(") + map_name + ")", err);
    if (seen.insert(key).second) NETQOS_RETURN_IF_ERROR(fn(key));
    prev = &key;
  }
  return Status::Ok();
}

// Per-CPU values come back as one 8-byte-aligned slot per possible CPU.
static_assert(sizeof(netqos_counters) % 8 == 0);

// The kernel's value in the shared struct. TrafficCounters holds exactly the ABI's counters, so a
// field added to netqos_counters without its member (and its line here) fails to compile.
static_assert(sizeof(netqos_counters) == sizeof(TrafficCounters),
              "every netqos_counters field has its TrafficCounters member, copied by FromAbi");
TrafficCounters FromAbi(const netqos_counters& c) {
  return {.tx_bytes = c.tx_bytes,
          .tx_packets = c.tx_packets,
          .rx_bytes = c.rx_bytes,
          .rx_packets = c.rx_packets,
          .drops = c.drops};
}

// ENOENT: *found = false and zeros.
Status LookupSummed(int fd, const char* map_name, const void* key, TrafficCounters* out,
                    bool* found) {
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return ErrnoStatus("libbpf_num_possible_cpus", ncpu);
  std::vector<netqos_counters> per_cpu(static_cast<size_t>(ncpu));
  *out = TrafficCounters{};
  int err = bpf_map_lookup_elem(fd, key, per_cpu.data());
  if (err == -ENOENT) {
    *found = false;
    return Status::Ok();
  }
  if (err) return ErrnoStatus(std::string("bpf_map_lookup_elem(") + map_name + ")", err);
  *found = true;
  for (const netqos_counters& c : per_cpu) AddCounters(*out, FromAbi(c));
  return Status::Ok();
}

template <typename Key>
Result<std::vector<std::pair<Key, TrafficCounters>>> ReadAllCounters(int fd, const char* map_name) {
  std::vector<std::pair<Key, TrafficCounters>> out;
  Status st = WalkKeys<Key>(fd, map_name, [&](Key key) {
    TrafficCounters c;
    bool found = false;
    NETQOS_RETURN_IF_ERROR(LookupSummed(fd, map_name, &key, &c, &found));
    if (found) out.emplace_back(key, c);  // not found: deleted meanwhile
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

bool IsPermission(int err) { return err == EPERM || err == EACCES; }

std::string PermissionHint(const std::string& what, int err) {
  return what + ": permission denied (" + std::strerror(err) +
         "): run as root (reading pinned BPF maps needs CAP_BPF or CAP_SYS_ADMIN)";
}

// The fd of a pin, read-only; a Status naming the pin otherwise.
Result<Fd> OpenPin(const std::string& path, bool read_only) {
  struct bpf_obj_get_opts opts {};
  opts.sz = sizeof(opts);
  opts.file_flags = read_only ? BPF_F_RDONLY : 0;
  Fd fd(bpf_obj_get_opts(path.c_str(), &opts));
  if (fd) return fd;
  const int err = errno;
  if (IsPermission(err)) {
    return Status(StatusCode::kPermissionDenied, PermissionHint("bpf_obj_get(" + path + ")", err));
  }
  return ErrnoStatus("bpf_obj_get(" + path + ")", err);
}

struct ExpectedMap {
  const char* name;
  bpf_map_type type;
  uint32_t key_size;
  uint32_t value_size;
};

constexpr ExpectedMap kExpected[] = {
    {kClassMapName, BPF_MAP_TYPE_HASH, sizeof(uint64_t), sizeof(netqos_class)},
    {kCgroupStatsMapName, BPF_MAP_TYPE_PERCPU_HASH, sizeof(uint64_t), sizeof(netqos_counters)},
    {kClassStatsMapName, BPF_MAP_TYPE_PERCPU_HASH, sizeof(uint32_t), sizeof(netqos_counters)},
    {kSockTagMapName, BPF_MAP_TYPE_SK_STORAGE, sizeof(int), sizeof(netqos_sock_tag)},
    {kPodAddrMapName, BPF_MAP_TYPE_HASH, sizeof(netqos_addr), sizeof(uint64_t)},
    {kFragMapName, BPF_MAP_TYPE_LRU_HASH, sizeof(netqos_frag_key), sizeof(uint64_t)},
    {kEdtMapName, BPF_MAP_TYPE_HASH, sizeof(uint64_t), sizeof(netqos_edt)},
    {kAggregateMapName, BPF_MAP_TYPE_HASH, sizeof(uint64_t), sizeof(uint64_t)},
};

Result<bpf_map_info> MapInfo(int fd, const std::string& path) {
  bpf_map_info info{};
  uint32_t len = sizeof(info);
  if (int err = bpf_obj_get_info_by_fd(fd, &info, &len); err) {
    return ErrnoStatus("bpf_obj_get_info_by_fd(" + path + ")", err);
  }
  return info;
}

Status CheckLayout(const ExpectedMap& want, const bpf_map_info& info, const std::string& path) {
  if (info.type == static_cast<uint32_t>(want.type) && info.key_size == want.key_size &&
      info.value_size == want.value_size) {
    return Status::Ok();
  }
  return FailedPrecondition(
      "pinned map " + path + " has type/key/value " + std::to_string(info.type) + "/" +
      std::to_string(info.key_size) + "/" + std::to_string(info.value_size) +
      ", this build expects " + std::to_string(want.type) + "/" + std::to_string(want.key_size) +
      "/" + std::to_string(want.value_size) + ": netqosctl and netqosd are of different versions");
}

Result<Fd> OpenChecked(const std::string& pin_dir, const ExpectedMap& want) {
  const std::string path = pin_dir + "/" + want.name;
  NETQOS_ASSIGN_OR_RETURN(Fd fd, OpenPin(path, /*read_only=*/true));
  auto info = MapInfo(fd.get(), path);
  Status st = info.ok() ? CheckLayout(want, *info, path) : info.status();
  if (!st.ok()) return st;
  return fd;
}

PinnedLinkState InspectLink(const std::string& path) {
  PinnedLinkState s;
  s.path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      s.error = IsPermission(errno) ? PermissionHint("stat(" + path + ")", errno)
                                    : "stat(" + path + "): " + std::strerror(errno);
    }
    return s;
  }
  s.present = true;
  auto fd = OpenPin(path, /*read_only=*/false);  // links cannot be opened with BPF_F_RDONLY
  if (!fd.ok()) {
    s.error = fd.status().message();
    return s;
  }
  bpf_link_info info{};
  uint32_t len = sizeof(info);
  if (int err = bpf_obj_get_info_by_fd(fd->get(), &info, &len); err) {
    s.error = ErrnoStatus("bpf_obj_get_info_by_fd(" + path + ")", err).message();
    return s;
  }
  s.id = info.id;
  s.prog_id = info.prog_id;
  if (info.type == BPF_LINK_TYPE_CGROUP) {
    s.cgroup_id = info.cgroup.cgroup_id;
    s.egress = info.cgroup.attach_type == BPF_CGROUP_INET_EGRESS;
    s.ingress = info.cgroup.attach_type == BPF_CGROUP_INET_INGRESS;
    s.setsockopt = info.cgroup.attach_type == BPF_CGROUP_SETSOCKOPT;
  } else {
    s.error = "not a cgroup link (link type " + std::to_string(info.type) + ")";
  }
  if (const Fd prog_fd(bpf_prog_get_fd_by_id(info.prog_id)); prog_fd) {
    bpf_prog_info prog{};
    uint32_t plen = sizeof(prog);
    if (bpf_obj_get_info_by_fd(prog_fd.get(), &prog, &plen) == 0) s.prog_name = prog.name;
  }
  return s;
}

}  // namespace

Status RequirePinned(const std::string& pin_dir, std::initializer_list<const char*> maps,
                     const char* object) {
  if (pin_dir.empty()) return InvalidArgument(std::string("load ") + object + ": pin_dir is empty");
  for (const char* map : maps) {
    struct stat st {};
    if (::stat((pin_dir + "/" + map).c_str(), &st) != 0) {
      return FailedPrecondition(std::string("map ") + map + " is not pinned in " + pin_dir +
                                " (Dataplane::Open creates the maps first)");
    }
  }
  return Status::Ok();
}

Result<std::vector<std::pair<uint64_t, netqos_class>>> ReadClassMap(int fd, const char* map_name) {
  std::vector<std::pair<uint64_t, netqos_class>> out;
  Status st = WalkKeys<uint64_t>(fd, map_name, [&](uint64_t key) {
    netqos_class cls{};
    int err = bpf_map_lookup_elem(fd, &key, &cls);
    if (err == 0) {
      out.emplace_back(key, cls);
    } else if (err != -ENOENT) {  // ENOENT: deleted meanwhile
      return ErrnoStatus(std::string("bpf_map_lookup_elem(") + map_name + ")", err);
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<TrafficCounters> ReadSummedCounters(int fd, const char* map_name, const void* key) {
  TrafficCounters c;
  bool found = false;
  NETQOS_RETURN_IF_ERROR(LookupSummed(fd, map_name, key, &c, &found));
  return c;
}

Result<std::vector<std::pair<uint64_t, TrafficCounters>>> ReadAllContainerCounters(
    int fd, const char* map_name) {
  return ReadAllCounters<uint64_t>(fd, map_name);
}

Result<std::vector<std::pair<uint32_t, TrafficCounters>>> ReadAllClassCounters(
    int fd, const char* map_name) {
  return ReadAllCounters<uint32_t>(fd, map_name);
}

PinDirState InspectPinDir(const std::string& pin_dir) {
  PinDirState s;
  s.pin_dir = pin_dir;
  struct stat st {};
  if (::stat(pin_dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      s.error = IsPermission(errno) ? PermissionHint("stat(" + pin_dir + ")", errno)
                                    : "stat(" + pin_dir + "): " + std::strerror(errno);
    }
    return s;
  }
  s.exists = true;
  struct statfs fs {};
  s.on_bpffs =
      ::statfs(pin_dir.c_str(), &fs) == 0 && static_cast<unsigned long>(fs.f_type) == BPF_FS_MAGIC;

  std::vector<std::string> names;
  for (const ExpectedMap& want : kExpected) {
    names.push_back(want.name);
    PinnedMapState m;
    m.name = want.name;
    m.path = pin_dir + "/" + want.name;
    if (::stat(m.path.c_str(), &st) != 0) {
      if (errno != ENOENT) {
        m.error = IsPermission(errno) ? PermissionHint("stat(" + m.path + ")", errno)
                                      : "stat(" + m.path + "): " + std::strerror(errno);
      }
      s.maps.push_back(std::move(m));
      continue;
    }
    m.present = true;
    auto fd = OpenPin(m.path, /*read_only=*/true);
    if (!fd.ok()) {
      m.error = fd.status().message();
      s.maps.push_back(std::move(m));
      continue;
    }
    if (auto info = MapInfo(fd->get(), m.path); !info.ok()) {
      m.error = info.status().message();
    } else if (Status layout = CheckLayout(want, *info, m.path); !layout.ok()) {
      m.error = layout.message();
    } else {
      m.id = info->id;
      m.max_entries = info->max_entries;
      if (want.type != BPF_MAP_TYPE_SK_STORAGE) {  // sk storage has no keys to walk
        uint32_t n = 0;
        Status walked = want.key_size == sizeof(uint64_t)
                            ? WalkKeys<uint64_t>(fd->get(), want.name,
                                                 [&](uint64_t) {
                                                   ++n;
                                                   return Status::Ok();
                                                 })
                            : WalkKeys<uint32_t>(fd->get(), want.name, [&](uint32_t) {
                                ++n;
                                return Status::Ok();
                              });
        if (walked.ok()) {
          m.counted = true;
          m.entries = n;
        } else {
          m.error = walked.message();
        }
      }
    }
    s.maps.push_back(std::move(m));
  }
  s.egress_link = InspectLink(pin_dir + "/" + kEgressLinkPin);
  s.rx_link = InspectLink(pin_dir + "/" + kRxLinkPin);
  s.sockopt_link = InspectLink(pin_dir + "/" + kSockoptLinkPin);
  if (auto others = FindOtherVersionPins(pin_dir, names); others.ok()) {
    s.other_versions = std::move(others).value();
  }
  return s;
}

Result<std::unique_ptr<PinnedMaps>> PinnedMaps::Open(const std::string& pin_dir) {
  struct stat st {};
  if (::stat(pin_dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound("pin dir " + pin_dir + " not found");
    if (IsPermission(err)) {
      return Status(StatusCode::kPermissionDenied, PermissionHint("stat(" + pin_dir + ")", err));
    }
    return ErrnoStatus("stat(" + pin_dir + ")", err);
  }
  std::unique_ptr<PinnedMaps> maps(new PinnedMaps());
  maps->pin_dir_ = pin_dir;
  NETQOS_ASSIGN_OR_RETURN(maps->class_fd_, OpenChecked(pin_dir, kExpected[0]));
  NETQOS_ASSIGN_OR_RETURN(maps->cg_stats_fd_, OpenChecked(pin_dir, kExpected[1]));
  NETQOS_ASSIGN_OR_RETURN(maps->class_stats_fd_, OpenChecked(pin_dir, kExpected[2]));
  return maps;
}

Result<std::vector<std::pair<uint64_t, netqos_class>>> PinnedMaps::Classes() const {
  return ReadClassMap(class_fd_.get(), kClassMapName);
}

Result<std::optional<netqos_class>> PinnedMaps::Class(uint64_t cgroup_id) const {
  netqos_class cls{};
  int err = bpf_map_lookup_elem(class_fd_.get(), &cgroup_id, &cls);
  if (err == -ENOENT) return std::optional<netqos_class>();
  if (err) return ErrnoStatus(std::string("bpf_map_lookup_elem(") + kClassMapName + ")", err);
  return std::optional<netqos_class>(cls);
}

Result<TrafficCounters> PinnedMaps::ContainerCounters(uint64_t cgroup_id) const {
  return ReadSummedCounters(cg_stats_fd_.get(), kCgroupStatsMapName, &cgroup_id);
}

Result<std::vector<std::pair<uint64_t, TrafficCounters>>> PinnedMaps::AllContainerCounters() const {
  return ReadAllContainerCounters(cg_stats_fd_.get(), kCgroupStatsMapName);
}

Result<std::vector<std::pair<uint32_t, TrafficCounters>>> PinnedMaps::AllClassCounters() const {
  return ReadAllClassCounters(class_stats_fd_.get(), kClassStatsMapName);
}

}  // namespace netqos::bpf
