// Dataplane: libbpf skeletons + pinned maps and links. See dataplane.h.
#include "bpf/dataplane.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "bpf/class_generation.h"
#include "common/errno_status.h"
#include "common/fd.h"
#include "common/tc_handle.h"
#include "netqos_cgroup.skel.h"

namespace netqos::bpf {
namespace {

// Every entry of a hash map. Entries deleted while it walks are skipped.
template <typename K, typename V>
Result<std::vector<std::pair<K, V>>> ListEntries(int fd, const char* map_name) {
  std::vector<std::pair<K, V>> out;
  K key{};
  K next{};
  const void* prev = nullptr;
  while (true) {
    int err = bpf_map_get_next_key(fd, prev, &next);
    if (err == -ENOENT) break;
    if (err) return ErrnoStatus(std::string("bpf_map_get_next_key(") + map_name + ")", err);
    V value{};
    err = bpf_map_lookup_elem(fd, &next, &value);
    if (err == 0) {
      out.emplace_back(next, value);
    } else if (err != -ENOENT) {
      return ErrnoStatus(std::string("bpf_map_lookup_elem(") + map_name + ")", err);
    }
    key = next;
    prev = &key;
  }
  return out;
}

// One entry written (any flag: create or replace); `what` names it in the error (", cgroup 12").
template <typename K, typename V>
Status PutEntry(const bpf_map* map, const char* map_name, const K& key, const V& value,
                const std::string& what) {
  int err = bpf_map__update_elem(map, &key, sizeof(key), &value, sizeof(value), BPF_ANY);
  if (err) return ErrnoStatus(std::string("bpf_map_update_elem(") + map_name + what + ")", err);
  return Status::Ok();
}

// One entry removed; one that is not there is no error.
template <typename K>
Status DropEntry(const bpf_map* map, const char* map_name, const K& key, const std::string& what) {
  int err = bpf_map__delete_elem(map, &key, sizeof(key), 0);
  if (err && err != -ENOENT) {
    return ErrnoStatus(std::string("bpf_map_delete_elem(") + map_name + what + ")", err);
  }
  return Status::Ok();
}

std::string CgroupText(uint64_t cgroup_id) { return ", cgroup " + std::to_string(cgroup_id); }
std::string LeafText(uint64_t handle) {
  return ", leaf " + TcHandleText(static_cast<uint32_t>(handle));
}

std::string Join(const std::string& dir, const char* name) { return dir + "/" + name; }

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Refuses early, naming the map, when a map pinned by an older build has another layout:
// libbpf would otherwise fail the whole load with a bare -EINVAL.
Status CheckPinnedLayouts(bpf_object* obj) {
  bpf_map* map = nullptr;
  bpf_object__for_each_map(map, obj) {
    const char* path = bpf_map__pin_path(map);
    if (path == nullptr || !Exists(path)) continue;
    const Fd fd(bpf_obj_get(path));
    if (!fd) return ErrnoStatus(std::string("bpf_obj_get(") + path + ")", errno);
    bpf_map_info info{};
    uint32_t len = sizeof(info);
    if (int err = bpf_obj_get_info_by_fd(fd.get(), &info, &len); err)
      return ErrnoStatus(std::string("bpf_obj_get_info_by_fd(") + path + ")", err);
    if (info.type != static_cast<uint32_t>(bpf_map__type(map)) ||
        info.key_size != bpf_map__key_size(map) || info.value_size != bpf_map__value_size(map) ||
        info.max_entries != bpf_map__max_entries(map) ||
        info.map_flags != bpf_map__map_flags(map)) {
      return FailedPrecondition(
          std::string("pinned map ") + bpf_map__name(map) + " at " + path +
          " has a different layout than this build (type/key/value/max_entries/flags " +
          std::to_string(info.type) + "/" + std::to_string(info.key_size) + "/" +
          std::to_string(info.value_size) + "/" + std::to_string(info.max_entries) + "/" +
          std::to_string(info.map_flags) + "); run with --uninstall to remove the old dataplane");
    }
  }
  return Status::Ok();
}

bpf_object_open_opts OpenOpts(const std::string& pin_dir) {
  bpf_object_open_opts opts{};
  opts.sz = sizeof(opts);
  opts.pin_root_path = pin_dir.c_str();
  return opts;
}

Status Unlink(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus("unlink(" + path + ")", errno);
  }
  return Status::Ok();
}

// A link pinned under the name netqosd used before (link_egress) moves to its current name, so
// the program swap below finds it: the hook stays attached throughout.
Status RenameLegacyPin(const std::string& pin_dir, const char* legacy, const char* current) {
  const std::string from = Join(pin_dir, legacy);
  const std::string to = Join(pin_dir, current);
  if (!Exists(from) || Exists(to)) return Status::Ok();
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoStatus("rename(" + from + ", " + to + ")", errno);
  }
  return Status::Ok();
}

// Detaches the link pinned at link_path and unpins it; Ok when there is none. Detached explicitly,
// so the program stops even if someone else still holds the link open. A defunct link (cgroup
// gone) reports an error here that does not matter.
Status DetachPinnedLink(const std::string& link_path) {
  if (!Exists(link_path)) return Status::Ok();
  {
    const Fd fd(bpf_obj_get(link_path.c_str()));
    if (!fd) return ErrnoStatus("bpf_obj_get(" + link_path + ")", errno);
    bpf_link_detach(fd.get());
  }
  return Unlink(link_path);
}

// The names of the pinned links of netqos_sockopt_pods in pin_dir.
Result<std::vector<std::string>> PodSockoptPins(const std::string& pin_dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(pin_dir.c_str());
  if (d == nullptr) return ErrnoStatus("opendir(" + pin_dir + ")", errno);
  const std::string prefix = kPodSockoptLinkPinPrefix;
  while (dirent* e = ::readdir(d)) {
    if (std::string(e->d_name).rfind(prefix, 0) == 0) out.emplace_back(e->d_name);
  }
  ::closedir(d);
  return out;
}

// Whether cgroup/setsockopt programs may call bpf_get_current_ancestor_cgroup_id here (not on
// 5.10). A failed probe counts as no: the flat program is safe everywhere.
bool SockoptCanWalkAncestors() {
  return libbpf_probe_bpf_helper(BPF_PROG_TYPE_CGROUP_SOCKOPT,
                                 BPF_FUNC_get_current_ancestor_cgroup_id, nullptr) == 1;
}

// The link of `prog` at `attach_type` of the cgroup, pinned at link_path: the program is swapped
// into an existing pinned link (the old program keeps running until the swap, so no packet goes
// unclassified), or a new link is attached and pinned.
Result<BpfLinkPtr> AttachCgroupLink(bpf_program* prog, bpf_attach_type attach_type,
                                    const std::string& link_path, const std::string& cgroup_path,
                                    uint64_t cgroup_id) {
  const std::string prog_name = bpf_program__name(prog);
  if (Exists(link_path)) {
    BpfLinkPtr link(bpf_link__open(link_path.c_str()));
    if (!link) return ErrnoStatus("bpf_link__open(" + link_path + ")", errno);
    bpf_link_info info{};
    uint32_t len = sizeof(info);
    int err = bpf_obj_get_info_by_fd(bpf_link__fd(link.get()), &info, &len);
    if (err) return ErrnoStatus("bpf_obj_get_info_by_fd(" + link_path + ")", err);
    if (info.type == BPF_LINK_TYPE_CGROUP && info.cgroup.cgroup_id == cgroup_id &&
        info.cgroup.attach_type == static_cast<uint32_t>(attach_type)) {
      err = bpf_link__update_program(link.get(), prog);
      if (err) return ErrnoStatus("bpf_link__update_program(" + link_path + ")", err);
      return link;
    }
    // Our own link, but for another cgroup or defunct (its cgroup was removed): replace it.
    bpf_link_detach(bpf_link__fd(link.get()));
    link.reset();
    NETQOS_RETURN_IF_ERROR(Unlink(link_path));
  }
  const Fd cg(::open(cgroup_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!cg) return ErrnoStatus("open(" + cgroup_path + ")", errno);
  BpfLinkPtr link(bpf_program__attach_cgroup(prog, cg.get()));
  if (!link) {
    const int err = errno;  // before the message is built
    return ErrnoStatus("attach " + prog_name + " to cgroup " + cgroup_path, err);
  }
  if (int err = bpf_link__pin(link.get(), link_path.c_str()); err) {
    return ErrnoStatus("bpf_link__pin(" + link_path + ")", err);
  }
  return link;
}

}  // namespace

Result<std::unique_ptr<Dataplane>> Dataplane::Open(const Options& options) {
  if (options.cgroup_path.empty()) return InvalidArgument("Dataplane::Open: cgroup_path is empty");
  NETQOS_ASSIGN_OR_RETURN(uint64_t cgroup_id, CgroupIdOf(options.cgroup_path));

  if (::mkdir(options.pin_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus("mkdir(" + options.pin_dir + ")", errno);
  }
  struct statfs fs {};
  if (::statfs(options.pin_dir.c_str(), &fs) != 0) {
    return ErrnoStatus("statfs(" + options.pin_dir + ")", errno);
  }
  if (static_cast<unsigned long>(fs.f_type) != BPF_FS_MAGIC) {
    return FailedPrecondition("pin dir " + options.pin_dir +
                              " is not on a bpffs (mount -t bpf bpf /sys/fs/bpf)");
  }

  std::unique_ptr<Dataplane> dp(new Dataplane());
  dp->pin_dir_ = options.pin_dir;

  bpf_object_open_opts opts = OpenOpts(dp->pin_dir_);
  dp->skel_.reset(netqos_cgroup__open_opts(&opts));
  if (!dp->skel_) return ErrnoStatus("open BPF object netqos_cgroup", errno);
  dp->sockopt_flat_ = !SockoptCanWalkAncestors();
  bpf_program__set_autoload(dp->skel_->progs.netqos_sockopt, !dp->sockopt_flat_);
  bpf_program__set_autoload(dp->skel_->progs.netqos_sockopt_flat, dp->sockopt_flat_);

  NETQOS_RETURN_IF_ERROR(CheckPinnedLayouts(dp->skel_->obj));
  if (int err = netqos_cgroup__load(dp->skel_.get()); err) {
    return ErrnoStatus("load BPF object netqos_cgroup (pin dir " + dp->pin_dir_ + ")", err);
  }

  // Maps of another layout version: copy their entries into the new maps before the new program
  // is swapped in, so it classifies from its first packet. On failure the old pins and the old
  // program stay as they are: enforcement goes on with the old version.
  auto migrated = MigrateOtherVersions(dp->pin_dir_,
                                       {{dp->skel_->obj, dp->skel_->maps.NETQOS_MAP_CLASS},
                                        {dp->skel_->obj, dp->skel_->maps.NETQOS_MAP_CG_STATS},
                                        {dp->skel_->obj, dp->skel_->maps.NETQOS_MAP_CLASS_STATS}});
  if (!migrated.ok()) return migrated.status().Wrap("migrate maps pinned in " + dp->pin_dir_);
  dp->migration_ = std::move(migrated).value();
  // The migration wrote the class map; a generation of 0 (a new pin) would keep the programs
  // from using any tag. Either way the sockets' tags are resolved again.
  NETQOS_RETURN_IF_ERROR(BumpClassGeneration(bpf_map__fd(dp->skel_->maps.NETQOS_MAP_CARRIER)));

  NETQOS_RETURN_IF_ERROR(RenameLegacyPin(dp->pin_dir_, kLegacyEgressLinkPin, kEgressLinkPin));
  NETQOS_RETURN_IF_ERROR(RenameLegacyPin(dp->pin_dir_, kLegacyRxLinkPin, kRxLinkPin));
  NETQOS_ASSIGN_OR_RETURN(
      dp->egress_link_,
      AttachCgroupLink(dp->skel_->progs.netqos_egress, BPF_CGROUP_INET_EGRESS,
                       Join(dp->pin_dir_, kEgressLinkPin), options.cgroup_path, cgroup_id));
  NETQOS_ASSIGN_OR_RETURN(
      dp->rx_link_,
      AttachCgroupLink(dp->skel_->progs.netqos_rx, BPF_CGROUP_INET_INGRESS,
                       Join(dp->pin_dir_, kRxLinkPin), options.cgroup_path, cgroup_id));
  bpf_program* sockopt =
      dp->sockopt_flat_ ? dp->skel_->progs.netqos_sockopt_flat : dp->skel_->progs.netqos_sockopt;
  NETQOS_ASSIGN_OR_RETURN(dp->sockopt_link_, AttachCgroupLink(sockopt, BPF_CGROUP_SETSOCKOPT,
                                                              Join(dp->pin_dir_, kSockoptLinkPin),
                                                              options.cgroup_path, cgroup_id));
  // The programs now use the new maps. An unpin that fails is an error: a later Open
  // would migrate the stale entries again.
  NETQOS_RETURN_IF_ERROR(UnpinMigratedMaps(&dp->migration_));
  // The socket tags of an older layout (netqos_sktag_v1): socket storage cannot be listed, so
  // there is nothing to copy; the new programs tag each socket again at its next packet. The
  // old map lives on while an older NIC program still uses it.
  NETQOS_ASSIGN_OR_RETURN(std::vector<std::string> old_tags,
                          FindOtherVersionPins(dp->pin_dir_, {kSockTagMapName}));
  for (const std::string& pin : old_tags) NETQOS_RETURN_IF_ERROR(Unlink(pin));
  dp->root_cgroup_id_ = cgroup_id;
  if (Status st = dp->GuardPodRoots(options.pod_roots);
      !st.ok() && st.code() != StatusCode::kNotFound) {
    return st;
  }
  return dp;
}

Status Dataplane::GuardPodRoots(const std::vector<std::string>& roots) {
  std::set<std::string> wanted;
  std::vector<std::string> missing;
  for (const std::string& root : roots) {
    auto id = CgroupIdOf(root);
    if (!id.ok()) {
      missing.push_back(root);
      continue;
    }
    if (*id == root_cgroup_id_) continue;
    const std::string pin = kPodSockoptLinkPinPrefix + std::to_string(*id);
    wanted.insert(pin);
    auto link = AttachCgroupLink(skel_->progs.netqos_sockopt_pods, BPF_CGROUP_SETSOCKOPT,
                                 Join(pin_dir_, pin.c_str()), root, *id);
    if (!link.ok()) return link.status().Wrap("guard pod root " + root);
  }
  NETQOS_ASSIGN_OR_RETURN(std::vector<std::string> pins, PodSockoptPins(pin_dir_));
  for (const std::string& pin : pins) {
    if (wanted.count(pin) != 0) continue;
    NETQOS_RETURN_IF_ERROR(DetachPinnedLink(Join(pin_dir_, pin.c_str())));
  }
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    return NotFound("kubelet cgroup roots not there (yet): " + names);
  }
  return Status::Ok();
}

void Dataplane::SkeletonDeleter::operator()(netqos_cgroup* skel) const {
  netqos_cgroup__destroy(skel);
}

Dataplane::~Dataplane() = default;

Status Dataplane::Uninstall(const std::string& pin_dir) {
  std::vector<std::string> links = {kEgressLinkPin, kRxLinkPin, kSockoptLinkPin,
                                    kLegacyEgressLinkPin, kLegacyRxLinkPin};
  if (Exists(pin_dir)) {
    NETQOS_ASSIGN_OR_RETURN(std::vector<std::string> pods, PodSockoptPins(pin_dir));
    links.insert(links.end(), pods.begin(), pods.end());
  }
  for (const std::string& link : links) {
    NETQOS_RETURN_IF_ERROR(DetachPinnedLink(Join(pin_dir, link.c_str())));
  }
  const std::vector<std::string> maps = {kClassMapName,   kCgroupStatsMapName, kClassStatsMapName,
                                         kSockTagMapName, kPodAddrMapName,     kFragMapName,
                                         kEdtMapName,     kAggregateMapName,   kVethMapName,
                                         kCarrierMapName, kRxOwnerMapName};
  for (const std::string& name : maps) NETQOS_RETURN_IF_ERROR(Unlink(pin_dir + "/" + name));
  // Maps of other layout versions, e.g. left by a migration that was refused.
  NETQOS_ASSIGN_OR_RETURN(std::vector<std::string> others, FindOtherVersionPins(pin_dir, maps));
  for (const std::string& pin : others) NETQOS_RETURN_IF_ERROR(Unlink(pin));
  // The format stamp last: it guarded the rest against an older netqosd until they were gone.
  NETQOS_RETURN_IF_ERROR(Unlink(Join(pin_dir, kFormatPinName)));
  if (::rmdir(pin_dir.c_str()) != 0 && errno != ENOENT) {
    int err = errno;
    std::string left;
    if (DIR* d = ::opendir(pin_dir.c_str()); d != nullptr) {
      while (dirent* e = ::readdir(d)) {
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
          left += std::string(" ") + e->d_name;
        }
      }
      ::closedir(d);
    }
    return ErrnoStatus("rmdir(" + pin_dir + "), left:" + left, err);
  }
  return Status::Ok();
}

// The generation moves after the write (class_generation.h): sockets whose tags copied the entry
// (or its absence) resolve again at their next packet. A write that failed changed nothing.
Status Dataplane::SetClass(uint64_t cgroup_id, const netqos_class& cls) {
  NETQOS_RETURN_IF_ERROR(
      PutEntry(skel_->maps.NETQOS_MAP_CLASS, kClassMapName, cgroup_id, cls, CgroupText(cgroup_id)));
  return BumpClassGeneration(bpf_map__fd(skel_->maps.NETQOS_MAP_CARRIER));
}

Status Dataplane::ClearClass(uint64_t cgroup_id) {
  NETQOS_RETURN_IF_ERROR(
      DropEntry(skel_->maps.NETQOS_MAP_CLASS, kClassMapName, cgroup_id, CgroupText(cgroup_id)));
  return BumpClassGeneration(bpf_map__fd(skel_->maps.NETQOS_MAP_CARRIER));
}

Status Dataplane::DeleteContainerCounters(uint64_t cgroup_id) {
  return DropEntry(skel_->maps.NETQOS_MAP_CG_STATS, kCgroupStatsMapName, cgroup_id,
                   CgroupText(cgroup_id));
}

Result<std::vector<std::pair<uint64_t, netqos_class>>> Dataplane::ListClasses() const {
  return ReadClassMap(bpf_map__fd(skel_->maps.NETQOS_MAP_CLASS), kClassMapName);
}

Result<TrafficCounters> Dataplane::ContainerCounters(uint64_t cgroup_id) const {
  return ReadSummedCounters(bpf_map__fd(skel_->maps.NETQOS_MAP_CG_STATS), kCgroupStatsMapName,
                            &cgroup_id);
}

Result<TrafficCounters> Dataplane::ClassCounters(uint32_t net_class_id) const {
  return ReadSummedCounters(bpf_map__fd(skel_->maps.NETQOS_MAP_CLASS_STATS), kClassStatsMapName,
                            &net_class_id);
}

Status Dataplane::SetPodAddress(const netqos_addr& addr, uint64_t cgroup_id) {
  return PutEntry(skel_->maps.NETQOS_MAP_POD_ADDR, kPodAddrMapName, addr, cgroup_id,
                  CgroupText(cgroup_id));
}

Status Dataplane::ClearPodAddress(const netqos_addr& addr) {
  return DropEntry(skel_->maps.NETQOS_MAP_POD_ADDR, kPodAddrMapName, addr, "");
}

Result<std::vector<std::pair<netqos_addr, uint64_t>>> Dataplane::ListPodAddresses() const {
  return ListEntries<netqos_addr, uint64_t>(bpf_map__fd(skel_->maps.NETQOS_MAP_POD_ADDR),
                                            kPodAddrMapName);
}

Status Dataplane::SetEdtRate(uint64_t leaf_handle, uint64_t bytes_per_second) {
  // t_last starts at 0: the first packet at the new rate leaves when its sender wants.
  netqos_edt value{};
  value.rate = bytes_per_second;
  return PutEntry(skel_->maps.NETQOS_MAP_EDT, kEdtMapName, leaf_handle, value,
                  LeafText(leaf_handle));
}

Status Dataplane::ClearEdtRate(uint64_t leaf_handle) {
  return DropEntry(skel_->maps.NETQOS_MAP_EDT, kEdtMapName, leaf_handle, LeafText(leaf_handle));
}

Result<std::vector<std::pair<uint64_t, uint64_t>>> Dataplane::ListEdtRates() const {
  NETQOS_ASSIGN_OR_RETURN(auto entries, (ListEntries<uint64_t, netqos_edt>(
                                            bpf_map__fd(skel_->maps.NETQOS_MAP_EDT), kEdtMapName)));
  std::vector<std::pair<uint64_t, uint64_t>> out;
  out.reserve(entries.size());
  for (const auto& [id, edt] : entries) out.emplace_back(id, edt.rate);
  return out;
}

Status Dataplane::SetAggregate(uint64_t leaf_handle, uint64_t aggregate_handle) {
  return PutEntry(skel_->maps.NETQOS_MAP_AGG, kAggregateMapName, leaf_handle, aggregate_handle,
                  LeafText(leaf_handle));
}

Status Dataplane::ClearAggregate(uint64_t leaf_handle) {
  return DropEntry(skel_->maps.NETQOS_MAP_AGG, kAggregateMapName, leaf_handle,
                   LeafText(leaf_handle));
}

Result<std::vector<std::pair<uint64_t, uint64_t>>> Dataplane::ListAggregates() const {
  return ListEntries<uint64_t, uint64_t>(bpf_map__fd(skel_->maps.NETQOS_MAP_AGG),
                                         kAggregateMapName);
}

Status Dataplane::SetVeth(uint32_t ifindex, uint64_t cgroup_id) {
  netqos_veth value{};
  value.cgroup_id = cgroup_id;
  return PutEntry(skel_->maps.NETQOS_MAP_VETH, kVethMapName, ifindex, value,
                  ", ifindex " + std::to_string(ifindex));
}

Status Dataplane::ClearVeth(uint32_t ifindex) {
  return DropEntry(skel_->maps.NETQOS_MAP_VETH, kVethMapName, ifindex,
                   ", ifindex " + std::to_string(ifindex));
}

Result<std::vector<std::pair<uint32_t, uint64_t>>> Dataplane::ListVeths() const {
  NETQOS_ASSIGN_OR_RETURN(
      auto entries,
      (ListEntries<uint32_t, netqos_veth>(bpf_map__fd(skel_->maps.NETQOS_MAP_VETH), kVethMapName)));
  std::vector<std::pair<uint32_t, uint64_t>> out;
  out.reserve(entries.size());
  for (const auto& [ifindex, v] : entries) out.emplace_back(ifindex, v.cgroup_id);
  return out;
}

Status Dataplane::SetCarrier(uint32_t slot, uint64_t cgroup_id) {
  if (slot == NETQOS_CLASS_GEN_SLOT || slot >= NETQOS_CARRIER_SLOTS) {
    return InvalidArgument("carrier slot " + std::to_string(slot) + " outside 1.." +
                           std::to_string(NETQOS_CARRIER_SLOTS - 1));
  }
  return PutEntry(skel_->maps.NETQOS_MAP_CARRIER, kCarrierMapName, slot, cgroup_id,
                  ", slot " + std::to_string(slot));
}

Status Dataplane::ClearCarrier(uint32_t slot) {
  // Slot 0 is the class generation's (NETQOS_CLASS_GEN_SLOT): clearing it would stop every
  // program from using its sockets' tags until the next class write.
  if (slot == NETQOS_CLASS_GEN_SLOT || slot >= NETQOS_CARRIER_SLOTS) return Status::Ok();
  const uint64_t none = 0;
  return PutEntry(skel_->maps.NETQOS_MAP_CARRIER, kCarrierMapName, slot, none,
                  ", slot " + std::to_string(slot));
}

Result<std::vector<std::pair<uint32_t, uint64_t>>> Dataplane::ListCarriers() const {
  // An array: every slot exists, so all of it is read in one batch (a lookup per slot would be
  // 32,768 system calls).
  const int fd = bpf_map__fd(skel_->maps.NETQOS_MAP_CARRIER);
  std::vector<uint32_t> keys(NETQOS_CARRIER_SLOTS);
  std::vector<uint64_t> ids(NETQOS_CARRIER_SLOTS);
  uint32_t count = NETQOS_CARRIER_SLOTS;
  uint32_t out_batch = 0;
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  const int err =
      bpf_map_lookup_batch(fd, nullptr, &out_batch, keys.data(), ids.data(), &count, &opts);
  if (err && err != -ENOENT) {  // ENOENT: the batch reached the end
    return ErrnoStatus(std::string("bpf_map_lookup_batch(") + kCarrierMapName + ")", err);
  }
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (uint32_t i = 0; i < count; ++i) {
    // Slot 0 holds the class generation, not a cgroup id.
    if (keys[i] != NETQOS_CLASS_GEN_SLOT && ids[i] != 0) out.emplace_back(keys[i], ids[i]);
  }
  return out;
}

int Dataplane::EgressProgramFd() const { return bpf_program__fd(skel_->progs.netqos_egress); }
int Dataplane::RxProgramFd() const { return bpf_program__fd(skel_->progs.netqos_rx); }
const char* Dataplane::SockoptProgramName() const {
  return sockopt_flat_ ? "netqos_sockopt_flat" : "netqos_sockopt";
}

}  // namespace netqos::bpf
