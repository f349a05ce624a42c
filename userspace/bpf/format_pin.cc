#include "bpf/format_pin.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <cerrno>
#include <cstring>

#include "bpf/pinned_maps.h"
#include "common/errno_status.h"
#include "common/fd.h"
#include "common/log_value.h"
#include "netqos_abi.h"

namespace netqos::bpf {
namespace {

std::string PinPath(const std::string& pin_dir) { return pin_dir + "/" + kFormatPinName; }

// Refuses anything pinned under the stamp's name that does not have its shape.
Status CheckShape(int fd, const std::string& path) {
  bpf_map_info info{};
  uint32_t len = sizeof(info);
  if (int err = bpf_obj_get_info_by_fd(fd, &info, &len); err) {
    return ErrnoStatus("bpf_obj_get_info_by_fd(" + path + ")", err);
  }
  if (info.type != BPF_MAP_TYPE_ARRAY || info.key_size != sizeof(uint32_t) ||
      info.value_size != sizeof(netqos_format_stamp) || info.max_entries != 1) {
    return FailedPrecondition(path + " is not a netqos format stamp (type/key/value/entries " +
                              std::to_string(info.type) + "/" + std::to_string(info.key_size) +
                              "/" + std::to_string(info.value_size) + "/" +
                              std::to_string(info.max_entries) + ")");
  }
  return Status::Ok();
}

}  // namespace

Result<std::optional<FormatStamp>> ReadFormatPin(const std::string& pin_dir) {
  const std::string path = PinPath(pin_dir);
  Fd fd(bpf_obj_get(path.c_str()));
  if (!fd) {
    // No such pin or directory (a directory that is not a bpffs has no pins either).
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<FormatStamp>();
    return ErrnoStatus("bpf_obj_get(" + path + ")", errno);
  }
  NETQOS_RETURN_IF_ERROR(CheckShape(fd.get(), path));
  uint32_t key = 0;
  netqos_format_stamp raw{};
  if (bpf_map_lookup_elem(fd.get(), &key, &raw) != 0) {
    return ErrnoStatus("bpf_map_lookup_elem(" + path + ")", errno);
  }
  FormatStamp stamp;
  stamp.generation = raw.generation;
  stamp.min_reader = raw.min_reader;
  // Named in messages and logs: escaped like every value read from outside.
  stamp.release =
      LogValue(std::string_view(raw.release, strnlen(raw.release, sizeof(raw.release))));
  return std::optional<FormatStamp>(stamp);
}

Status WriteFormatPin(const std::string& pin_dir, const FormatStamp& stamp) {
  const std::string path = PinPath(pin_dir);
  Fd fd(bpf_obj_get(path.c_str()));
  bool pin = false;
  if (!fd) {
    if (errno != ENOENT) return ErrnoStatus("bpf_obj_get(" + path + ")", errno);
    fd = Fd(bpf_map_create(BPF_MAP_TYPE_ARRAY, kFormatPinName, sizeof(uint32_t),
                           sizeof(netqos_format_stamp), 1, nullptr));
    if (!fd) return ErrnoStatus("bpf_map_create(" + std::string(kFormatPinName) + ")", errno);
    pin = true;
  } else {
    NETQOS_RETURN_IF_ERROR(CheckShape(fd.get(), path));
  }
  netqos_format_stamp raw{};
  raw.generation = stamp.generation;
  raw.min_reader = stamp.min_reader;
  std::strncpy(raw.release, stamp.release.c_str(), sizeof(raw.release) - 1);
  uint32_t key = 0;
  if (bpf_map_update_elem(fd.get(), &key, &raw, BPF_ANY) != 0) {
    return ErrnoStatus("bpf_map_update_elem(" + path + ")", errno);
  }
  if (pin && bpf_obj_pin(fd.get(), path.c_str()) != 0) {
    return ErrnoStatus("bpf_obj_pin(" + path + ")", errno);
  }
  return Status::Ok();
}

}  // namespace netqos::bpf
