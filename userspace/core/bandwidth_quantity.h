// The standard pod bandwidth annotations, kubernetes.io/egress-bandwidth and
// kubernetes.io/ingress-bandwidth, read as the CNI bandwidth plugin and the kubelet read them: a
// Kubernetes quantity ("10M", "1G", "500Ki", "1.5e6") in bits per second, rounded up to a whole
// bit, and refused below 1k or above 1P as the kubelet refuses it. What netqos does with them:
// docs/enforcement.md, "The bandwidth model".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "core/types.h"

namespace netqos::core {

inline constexpr char kEgressBandwidthAnnotation[] = "kubernetes.io/egress-bandwidth";
inline constexpr char kIngressBandwidthAnnotation[] = "kubernetes.io/ingress-bandwidth";

// The kubelet's bounds for a bandwidth annotation, in bit/s.
inline constexpr uint64_t kMinAnnotatedBitsPerSecond = 1'000;
inline constexpr uint64_t kMaxAnnotatedBitsPerSecond = 1'000'000'000'000'000;
// Longer values are refused unread: a real quantity is a handful of characters, and a pod's
// annotation must not make a problem report (or a log line) megabytes long.
inline constexpr size_t kMaxQuantityLength = 64;

// A quantity in Kubernetes' grammar: an optional sign, digits with an optional fraction, and
// one suffix: none, n, u, m, k, M, G, T, P, E (powers of 1000), Ki, Mi, Gi, Ti, Pi, Ei (powers
// of 1024), or e/E and a signed integer exponent. The value is rounded up to an integer, as
// Quantity.Value() does, exactly (decimal arithmetic, not floating point). InvalidArgument for
// anything else, a negative value, or one outside [kMinAnnotatedBitsPerSecond,
// kMaxAnnotatedBitsPerSecond]; the message does not repeat the text.
Result<uint64_t> ParseBandwidthQuantity(std::string_view text);

// A size in bytes in the same grammar ("1600", "64Ki", "1.5M", "1Mi"), rounded up to a whole byte
// and refused outside [min_bytes, max_bytes] (the message names the bound, not the text).
Result<uint64_t> ParseByteQuantity(std::string_view text, uint64_t min_bytes, uint64_t max_bytes);

// A pod's annotated caps per direction, in bit/s; unset when not annotated or refused.
struct AnnotatedBandwidth {
  std::optional<uint64_t> egress_bps;
  std::optional<uint64_t> ingress_bps;
  // Present on the pod but refused: the caller decides what the direction keeps meanwhile.
  bool egress_refused = false;
  bool ingress_refused = false;
  // One entry per refused annotation, naming it and its value (quoted for a log line).
  std::vector<std::string> errors;
};

AnnotatedBandwidth ReadBandwidthAnnotations(const StringMap& annotations);

}  // namespace netqos::core
