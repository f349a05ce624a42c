// Reads the kubelet's pod list and parses it only when its bytes changed. At 10,000 pods the list
// is megabytes of JSON, re-read every few seconds and nearly always the same as the last time:
// comparing a hash of the bytes costs a fraction of parsing them and re-resolving every container.
// The kubelet adapter of the pod-source port (pods/pod_source.h).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "pods/pod_list.h"
#include "pods/pod_source.h"

namespace netqos::pods {

class PodListReader : public pods::PodSource {
 public:
  // One read of the list, unparsed (a GET of the kubelet's /pods, or a file).
  using Fetch = std::function<Result<std::string>()>;
  // `source` names the list in parse errors (its URL); `options` say which annotations are kept.
  PodListReader(Fetch fetch, std::string source, pods::PodListOptions options = {})
      : fetch_(std::move(fetch)), source_(std::move(source)), options_(std::move(options)) {}

  // The pods when the bytes differ from the last successful read, or when `force`; nullopt when
  // they are the same. A failed fetch or parse is returned and forgets the last list, so the next
  // good read counts as a change.
  Result<std::optional<std::vector<pods::PodInfo>>> Read(bool force) override;
  std::string Describe() const override { return source_; }

 private:
  struct Digest {
    size_t size = 0;
    size_t hash = 0;
    bool operator==(const Digest&) const = default;
  };
  Fetch fetch_;
  std::string source_;
  pods::PodListOptions options_;
  std::optional<Digest> last_;
};

}  // namespace netqos::pods
