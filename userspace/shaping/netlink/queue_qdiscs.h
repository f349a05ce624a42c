// EDT mode's qdiscs on a NIC (see shaping_mode.h): its multi-queue root (mq) kept, with fq under
// every TX queue, which holds each packet until the departure time netqos_nic_tx gave it; fq alone
// at the root of a single-queue NIC. Also what --uninstall needs to give a NIC back as it was:
// the layout before netqos touched it, put back kind by kind, and a clsact nothing uses any more.
// Works through libnl-route in the calling thread's network namespace; one instance per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "os/libnl_ptr.h"

struct nl_sock;

namespace netqos::shaping {

// netqos's own EDT root (mq, or fq on a single-queue NIC) has the handle the HTB root has: 10:.
inline constexpr uint32_t kEdtRootMajor = 0x10;

struct QueueLayout {
  std::string root_kind;  // "" = no root qdisc
  uint32_t root_handle = 0;
  // Under an mq root: each TX queue's qdisc kind, in queue order ("" = none).
  std::vector<std::string> queue_kinds;
  bool operator==(const QueueLayout&) const = default;
};

struct EdtInstallReport {
  bool root_created = false;  // netqos put its own mq (or fq) at the root
  int queues_replaced = 0;    // TX queues whose qdisc became fq
  bool Unchanged() const { return !root_created && queues_replaced == 0; }
};

class QueueQdiscs {
 public:
  static Result<QueueQdiscs> Create();
  QueueQdiscs(QueueQdiscs&&) noexcept;
  QueueQdiscs& operator=(QueueQdiscs&&) noexcept;
  ~QueueQdiscs();

  Result<int> TxQueues(int ifindex);
  Result<QueueLayout> Read(int ifindex);
  // True when the root is netqos's EDT root (10: mq or 10: fq).
  Result<bool> OwnRoot(int ifindex);

  // An mq root (anyone's, kept) with fq under each TX queue; on a single-queue NIC fq at the root.
  // netqos's HTB root and kernel defaults are replaced; any other root only with replace_foreign
  // (FailedPrecondition naming it otherwise). A queue's other qdisc (fq_codel, pfifo_fast) is
  // replaced by fq: without fq the departure times would be ignored.
  Result<EdtInstallReport> EnsureEdt(int ifindex, bool replace_foreign);

  // Deletes netqos's EDT root, if it is there; the kernel's default takes its place.
  Status RemoveOwnRoot(int ifindex);
  // Puts `before` back: an mq root where it had one and has none now (deleting a root leaves
  // noqueue on devices such as veth), then each queue's kind, with the kind's default
  // parameters. Other roots cannot be rebuilt from a kind and are left to the kernel's default.
  Status Restore(int ifindex, const QueueLayout& before);
  // Deletes the link's clsact qdisc when no filter is left on it (netqos's were detached).
  Status RemoveEmptyClsact(int ifindex);

 private:
  explicit QueueQdiscs(os::NlSockPtr sock);
  os::NlSockPtr sock_;
};

}  // namespace netqos::shaping
