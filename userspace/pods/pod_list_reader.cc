#include "pods/pod_list_reader.h"

#include <string_view>

namespace netqos::pods {

Result<std::optional<std::vector<pods::PodInfo>>> PodListReader::Read(bool force) {
  auto text = fetch_();
  if (!text.ok()) {
    last_.reset();
    return text.status();
  }
  // A collision would only delay a change until the next forced read (the periodic resync).
  const Digest digest{text->size(), std::hash<std::string_view>{}(*text)};
  if (!force && last_ && *last_ == digest) return std::optional<std::vector<pods::PodInfo>>();
  auto pods = pods::ParsePodList(*text, source_, options_);
  if (!pods.ok()) {
    last_.reset();
    return pods.status();
  }
  last_ = digest;
  return std::optional<std::vector<pods::PodInfo>>(std::move(*pods));
}

}  // namespace netqos::pods
