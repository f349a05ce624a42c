// Map layout migration by BTF member name. See map_migration.h.
#include "bpf/map_migration.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "bpf/libbpf_ptr.h"
#include "common/errno_status.h"
#include "common/fd.h"

namespace netqos::bpf {
namespace {

struct Member {
  std::string name;
  uint32_t offset = 0;
  uint32_t size = 0;
};

struct Layout {
  uint32_t size = 0;
  bool composite = false;
  std::vector<Member> members;
};

Result<Layout> LayoutOf(const btf* b, uint32_t type_id, const std::string& what) {
  const std::string where = what + ": BTF type " + std::to_string(type_id);
  const int resolved = btf__resolve_type(b, type_id);
  if (resolved < 0) return FailedPrecondition(where + " does not resolve");
  const btf_type* t = btf__type_by_id(b, static_cast<uint32_t>(resolved));
  const int64_t size = btf__resolve_size(b, static_cast<uint32_t>(resolved));
  if (t == nullptr || size <= 0) return FailedPrecondition(where + " has no size");
  Layout layout;
  layout.size = static_cast<uint32_t>(size);
  if (!btf_is_composite(t)) return layout;
  layout.composite = true;
  const btf_member* m = btf_members(t);
  for (uint32_t i = 0; i < btf_vlen(t); ++i, ++m) {
    const char* name = btf__name_by_offset(b, m->name_off);
    if (name == nullptr || *name == '\0') {
      return FailedPrecondition(where + ": anonymous member #" + std::to_string(i) +
                                " cannot be matched by name");
    }
    const uint32_t bit_offset = btf_member_bit_offset(t, i);
    if (btf_member_bitfield_size(t, i) != 0 || bit_offset % 8 != 0) {
      return FailedPrecondition(where + ": bitfield member " + name + " is not supported");
    }
    const int64_t msize = btf__resolve_size(b, m->type);
    if (msize < 0 || bit_offset / 8 + static_cast<uint64_t>(msize) > layout.size) {
      return FailedPrecondition(where + ": member " + name + " has no valid size");
    }
    layout.members.push_back({name, bit_offset / 8, static_cast<uint32_t>(msize)});
  }
  return layout;
}

bool IsPerCpu(uint32_t type) {
  return type == BPF_MAP_TYPE_PERCPU_HASH || type == BPF_MAP_TYPE_LRU_PERCPU_HASH ||
         type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE;
}

// BPF_NOEXIST (keep what the target has) is meaningful for hash maps only.
bool IsHash(uint32_t type) {
  return type == BPF_MAP_TYPE_HASH || type == BPF_MAP_TYPE_PERCPU_HASH ||
         type == BPF_MAP_TYPE_LRU_HASH || type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

uint32_t RoundUp8(uint32_t n) { return (n + 7u) & ~7u; }

std::string JoinNames(const std::vector<std::string>& names) {
  if (names.empty()) return "-";
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// Pins can be links or programs too; only a map fd reads back as "anon_inode:bpf-map".
bool IsMapFd(int fd) {
  char target[64] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
  return n > 0 && std::string_view(target, static_cast<size_t>(n)) == "anon_inode:bpf-map";
}

// The value type of map `name` as declared in the object's BTF (its .maps section). Not
// bpf_map__btf_value_type_id: after libbpf reuses a pinned map, that is the id in the BTF the
// map was created with, not in this object's.
Result<uint32_t> DeclaredValueType(const btf* b, const std::string& name) {
  const int sec = btf__find_by_name_kind(b, ".maps", BTF_KIND_DATASEC);
  const btf_type* ds = sec < 0 ? nullptr : btf__type_by_id(b, static_cast<uint32_t>(sec));
  if (ds != nullptr) {
    const btf_var_secinfo* vs = btf_var_secinfos(ds);
    for (uint32_t i = 0; i < btf_vlen(ds); ++i, ++vs) {
      const btf_type* var = btf__type_by_id(b, vs->type);
      if (var == nullptr || !btf_is_var(var)) continue;
      const char* var_name = btf__name_by_offset(b, var->name_off);
      if (var_name == nullptr || name != var_name) continue;
      const int def_id = btf__resolve_type(b, var->type);
      const btf_type* def =
          def_id < 0 ? nullptr : btf__type_by_id(b, static_cast<uint32_t>(def_id));
      if (def == nullptr || !btf_is_struct(def)) break;
      const btf_member* m = btf_members(def);
      for (uint32_t j = 0; j < btf_vlen(def); ++j, ++m) {
        const char* member = btf__name_by_offset(b, m->name_off);
        const btf_type* ptr = btf__type_by_id(b, m->type);
        if (member != nullptr && std::strcmp(member, "value") == 0 && ptr != nullptr &&
            btf_is_ptr(ptr)) {
          return ptr->type;  // __type(value, T) declares `T *value`
        }
      }
      break;
    }
  }
  return Internal("map " + name + " of this build has no value type in its BTF");
}

// One old map, checked and ready to copy.
struct Plan {
  std::string pin;
  uint32_t version = 0;
  Fd fd;
  const MigrationTarget* target = nullptr;
  uint32_t key_size = 0;
  bool per_cpu = false;
  ValueConversion conversion;
};

Result<Plan> PlanMap(const std::string& pin, uint32_t version, const MigrationTarget& target,
                     const btf* new_btf, uint32_t new_type_id) {
  const char* target_name = bpf_map__name(target.map);
  Plan plan;
  plan.pin = pin;
  plan.version = version;
  plan.target = &target;
  plan.fd = Fd(bpf_obj_get(pin.c_str()));
  if (plan.fd.get() < 0) return ErrnoStatus("bpf_obj_get(" + pin + ")", errno);
  if (!IsMapFd(plan.fd.get())) {
    return FailedPrecondition("pin " + pin + " is not a map; run with --uninstall to remove it");
  }
  bpf_map_info info{};
  uint32_t len = sizeof(info);
  if (int err = bpf_obj_get_info_by_fd(plan.fd.get(), &info, &len); err) {
    return ErrnoStatus("bpf_obj_get_info_by_fd(" + pin + ")", err);
  }
  if (info.btf_id == 0 || info.btf_value_type_id == 0) {
    return FailedPrecondition("pinned map " + pin +
                              " has no BTF, so its values cannot be converted to " + target_name +
                              " by field name; it is left in place: run with --uninstall to remove "
                              "the old dataplane (its entries are lost)");
  }
  if (info.key_size != bpf_map__key_size(target.map)) {
    return FailedPrecondition("pinned map " + pin + " has key size " +
                              std::to_string(info.key_size) + ", " + target_name + " has " +
                              std::to_string(bpf_map__key_size(target.map)) +
                              ": cannot migrate; run with --uninstall to remove the old dataplane");
  }
  const auto target_type = static_cast<uint32_t>(bpf_map__type(target.map));
  if (!IsHash(target_type) || !IsHash(info.type) || IsPerCpu(info.type) != IsPerCpu(target_type)) {
    return FailedPrecondition("pinned map " + pin + " (map type " + std::to_string(info.type) +
                              ") cannot be migrated into " + target_name + " (map type " +
                              std::to_string(target_type) +
                              "); run with --uninstall to remove the old dataplane");
  }
  BtfPtr old_btf(btf__load_from_kernel_by_id(info.btf_id));
  if (!old_btf) {
    return ErrnoStatus("btf__load_from_kernel_by_id(" + std::to_string(info.btf_id) + ") of " + pin,
                       errno);
  }
  const std::string what = pin + " -> " + target_name;
  NETQOS_ASSIGN_OR_RETURN(
      plan.conversion,
      PlanValueConversion(old_btf.get(), info.btf_value_type_id, new_btf, new_type_id, what));
  if (plan.conversion.old_size != info.value_size ||
      plan.conversion.new_size != bpf_map__value_size(target.map)) {
    return FailedPrecondition(
        what + ": BTF value sizes " + std::to_string(plan.conversion.old_size) + "/" +
        std::to_string(plan.conversion.new_size) + " do not match the map value sizes " +
        std::to_string(info.value_size) + "/" + std::to_string(bpf_map__value_size(target.map)));
  }
  plan.key_size = info.key_size;
  plan.per_cpu = IsPerCpu(info.type);
  return plan;
}

Result<MigratedMap> CopyEntries(const Plan& plan) {
  const char* target_name = bpf_map__name(plan.target->map);
  const int target_fd = bpf_map__fd(plan.target->map);
  MigratedMap out;
  out.old_pin = plan.pin;
  out.target = target_name;
  out.dropped_fields = plan.conversion.dropped;
  out.zeroed_fields = plan.conversion.zeroed;

  size_t slots = 1;
  uint32_t old_slot = plan.conversion.old_size;
  uint32_t new_slot = plan.conversion.new_size;
  if (plan.per_cpu) {
    // Per-CPU values come back as one 8-byte-aligned slot per possible CPU.
    const int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) return ErrnoStatus("libbpf_num_possible_cpus", ncpu);
    slots = static_cast<size_t>(ncpu);
    old_slot = RoundUp8(old_slot);
    new_slot = RoundUp8(new_slot);
  }
  std::vector<uint8_t> key(plan.key_size), next(plan.key_size);
  std::vector<uint8_t> in(old_slot * slots), value(new_slot * slots, 0);
  bool first = true;
  while (true) {
    int err = bpf_map_get_next_key(plan.fd.get(), first ? nullptr : key.data(), next.data());
    if (err == -ENOENT) break;
    if (err) return ErrnoStatus("bpf_map_get_next_key(" + plan.pin + ")", err);
    key.swap(next);
    first = false;
    err = bpf_map_lookup_elem(plan.fd.get(), key.data(), in.data());
    if (err == -ENOENT) continue;  // deleted meanwhile
    if (err) return ErrnoStatus("bpf_map_lookup_elem(" + plan.pin + ")", err);
    for (size_t cpu = 0; cpu < slots; ++cpu) {
      plan.conversion.Apply(in.data() + cpu * old_slot, value.data() + cpu * new_slot);
    }
    err = bpf_map_update_elem(target_fd, key.data(), value.data(), BPF_NOEXIST);
    if (err == -EEXIST) {
      ++out.kept;
    } else if (err) {
      return ErrnoStatus(
          std::string("bpf_map_update_elem(") + target_name + ", from " + plan.pin + ")", err);
    } else {
      ++out.copied;
    }
  }
  return out;
}

}  // namespace

std::optional<VersionedName> ParseVersionedName(std::string_view name) {
  const size_t pos = name.rfind("_v");
  if (pos == std::string_view::npos) return std::nullopt;
  const std::string_view digits = name.substr(pos + 2);
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  uint32_t version = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    version = version * 10 + static_cast<uint32_t>(c - '0');
  }
  return VersionedName{std::string(name.substr(0, pos + 2)), version};
}

void ValueConversion::Apply(const void* in, void* out) const {
  auto* dst = static_cast<uint8_t*>(out);
  const auto* src = static_cast<const uint8_t*>(in);
  std::memset(dst, 0, new_size);
  for (const Field& f : fields) std::memcpy(dst + f.new_offset, src + f.old_offset, f.size);
}

Result<ValueConversion> PlanValueConversion(const btf* old_btf, uint32_t old_type_id,
                                            const btf* new_btf, uint32_t new_type_id,
                                            const std::string& what) {
  NETQOS_ASSIGN_OR_RETURN(Layout old_layout, LayoutOf(old_btf, old_type_id, what + " (old value)"));
  NETQOS_ASSIGN_OR_RETURN(Layout new_layout, LayoutOf(new_btf, new_type_id, what + " (new value)"));
  ValueConversion conv;
  conv.old_size = old_layout.size;
  conv.new_size = new_layout.size;
  if (!old_layout.composite || !new_layout.composite) {
    if (old_layout.composite != new_layout.composite || old_layout.size != new_layout.size) {
      return FailedPrecondition(what + ": value types differ (struct vs scalar, or size " +
                                std::to_string(old_layout.size) + " vs " +
                                std::to_string(new_layout.size) + ") and have no fields to match");
    }
    conv.fields.push_back({"", 0, 0, new_layout.size});
    return conv;
  }
  std::vector<bool> used(old_layout.members.size(), false);
  for (const Member& nm : new_layout.members) {
    bool found = false;
    for (size_t i = 0; i < old_layout.members.size(); ++i) {
      const Member& om = old_layout.members[i];
      if (om.name == nm.name && om.size == nm.size) {
        conv.fields.push_back({nm.name, om.offset, nm.offset, nm.size});
        used[i] = true;
        found = true;
        break;
      }
    }
    if (!found) conv.zeroed.push_back(nm.name);
  }
  for (size_t i = 0; i < old_layout.members.size(); ++i) {
    if (!used[i]) conv.dropped.push_back(old_layout.members[i].name);
  }
  return conv;
}

std::vector<std::string> MigrationReport::Describe() const {
  std::vector<std::string> lines;
  for (const MigratedMap& m : maps) {
    lines.push_back("old_pin=" + m.old_pin + " target=" + m.target +
                    " copied=" + std::to_string(m.copied) + " kept=" + std::to_string(m.kept) +
                    " dropped_fields=" + JoinNames(m.dropped_fields) + " zeroed_fields=" +
                    JoinNames(m.zeroed_fields) + " unpinned=" + (unpinned ? "true" : "false"));
  }
  return lines;
}

Result<std::vector<std::string>> FindOtherVersionPins(
    const std::string& pin_dir, const std::vector<std::string>& current_names) {
  std::vector<VersionedName> current;
  for (const std::string& name : current_names) {
    auto parsed = ParseVersionedName(name);
    if (!parsed) return InvalidArgument("map name " + name + " has no _v<N> version suffix");
    current.push_back(*parsed);
  }
  std::vector<std::string> out;
  DIR* d = ::opendir(pin_dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return out;
    return ErrnoStatus("opendir(" + pin_dir + ")", errno);
  }
  while (dirent* e = ::readdir(d)) {
    const auto parsed = ParseVersionedName(e->d_name);
    if (!parsed) continue;
    for (size_t i = 0; i < current.size(); ++i) {
      if (parsed->family == current[i].family && e->d_name != current_names[i]) {
        out.push_back(pin_dir + "/" + e->d_name);
        break;
      }
    }
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

Result<MigrationReport> MigrateOtherVersions(const std::string& pin_dir,
                                             const std::vector<MigrationTarget>& targets) {
  // Check every old map first, so a refusal leaves all targets untouched.
  std::vector<Plan> plans;
  for (const MigrationTarget& target : targets) {
    const std::string name = bpf_map__name(target.map);
    const btf* new_btf = bpf_object__btf(target.obj);
    if (new_btf == nullptr) return Internal("BPF object of map " + name + " has no BTF");
    NETQOS_ASSIGN_OR_RETURN(const uint32_t new_type_id, DeclaredValueType(new_btf, name));
    NETQOS_ASSIGN_OR_RETURN(std::vector<std::string> pins, FindOtherVersionPins(pin_dir, {name}));
    std::vector<Plan> family;
    for (const std::string& pin : pins) {
      const auto version = ParseVersionedName(pin.substr(pin.rfind('/') + 1));
      NETQOS_ASSIGN_OR_RETURN(Plan plan,
                              PlanMap(pin, version->version, target, new_btf, new_type_id));
      family.push_back(std::move(plan));
    }
    // Highest version first: with several old maps, the newest data wins (entries are never
    // overwritten).
    std::sort(family.begin(), family.end(),
              [](const Plan& a, const Plan& b) { return a.version > b.version; });
    for (Plan& p : family) plans.push_back(std::move(p));
  }
  MigrationReport report;
  for (const Plan& plan : plans) {
    NETQOS_ASSIGN_OR_RETURN(MigratedMap migrated, CopyEntries(plan));
    report.maps.push_back(std::move(migrated));
  }
  return report;
}

Status UnpinMigratedMaps(MigrationReport* report) {
  for (const MigratedMap& m : report->maps) {
    if (::unlink(m.old_pin.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus("unlink(" + m.old_pin + ")", errno);
    }
  }
  report->unpinned = true;
  return Status::Ok();
}

}  // namespace netqos::bpf
