#include "checkpoint/format_stamp_file.h"

#include <unistd.h>

#include <cerrno>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/bounded_file.h"
#include "common/durable_file.h"
#include "common/errno_status.h"
#include "common/log_value.h"

namespace netqos::checkpoint {
namespace {

// A stamp is about 80 bytes; the limit only keeps a wrong file from being read whole.
constexpr size_t kMaxStampBytes = 4096;
// The release names a stamp carries: as many bytes as the pin's field holds, less its NUL.
constexpr size_t kMaxReleaseBytes = 55;

std::string PathIn(const std::string& dir) { return dir + "/" + kFormatStampFile; }

Result<uint32_t> Generation(const nlohmann::json& doc, const char* key, const std::string& path) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_number_unsigned() ||
      it->get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
    return DataLoss(path + ": \"" + key + "\" is missing or not a generation number");
  }
  return static_cast<uint32_t>(it->get<uint64_t>());
}

}  // namespace

Result<std::optional<FormatStamp>> ReadFormatStampFile(const std::string& dir) {
  const std::string path = PathIn(dir);
  auto text = ReadFileAtMost(path, kMaxStampBytes);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<FormatStamp>();
    if (text.status().code() == StatusCode::kOutOfRange) {
      return DataLoss(text.status().message() + "; it is not a netqos format stamp");
    }
    return text.status();
  }
  const auto doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return DataLoss(path + " is not a JSON object: not a netqos format stamp");
  FormatStamp stamp;
  NETQOS_ASSIGN_OR_RETURN(stamp.generation, Generation(doc, "generation", path));
  NETQOS_ASSIGN_OR_RETURN(stamp.min_reader, Generation(doc, "min_reader", path));
  const auto release = doc.find("release");
  if (release == doc.end() || !release->is_string() ||
      release->get_ref<const std::string&>().size() > kMaxReleaseBytes) {
    return DataLoss(path + ": \"release\" is missing, not a string or longer than " +
                    std::to_string(kMaxReleaseBytes) + " bytes");
  }
  // Named in messages and logs: escaped and bounded like every value read from outside.
  stamp.release = LogValue(release->get<std::string>());
  return std::optional<FormatStamp>(stamp);
}

Status WriteFormatStampFile(const std::string& dir, const FormatStamp& stamp) {
  const nlohmann::json doc = {{"generation", stamp.generation},
                              {"min_reader", stamp.min_reader},
                              {"release", stamp.release}};
  return ReplaceFileDurably(PathIn(dir), doc.dump() + "\n");
}

Status RemoveFormatStampFile(const std::string& dir) {
  const std::string path = PathIn(dir);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus("unlink(" + path + ")", errno);
  }
  return Status::Ok();
}

}  // namespace netqos::checkpoint
