#include "enforce/kernel/kernel_link_shaper.h"

#include <net/if.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "bpf/nic_attach.h"
#include "common/errno_status.h"
#include "enforce/kernel/installed_links.h"
#include "os/netns_exec.h"
#include "shaping/netlink/htb_installer.h"

namespace netqos::enforce {
namespace {

constexpr char kForwardPrioritySysctl[] = "/proc/sys/net/ipv4/ip_forward_update_priority";

// Reads the namespace-local sysctl of the calling thread's network namespace; -1 if unreadable.
int ReadForwardPriority() {
  std::ifstream in(kForwardPrioritySysctl);
  int v = -1;
  if (!(in >> v)) return -1;
  return v;
}

Status WriteForwardPriority(int value) {
  std::ofstream out(kForwardPrioritySysctl);
  out << value << "\n";
  out.flush();
  if (!out) {
    return ErrnoStatus(std::string("write ") + kForwardPrioritySysctl, errno);
  }
  return Status::Ok();
}

std::string NicText(const core::Nic& nic) { return "nic " + nic.id.Identifier(); }

// An IFB named after an ifindex that no device of this namespace has any more: it belonged to an
// earlier incarnation of the NIC (deleted and re-created), and nothing redirects to it.
bool IsStaleIfb(const std::string& ifb, int current_ifindex) {
  const std::string prefix = kIfbPrefix;
  if (ifb.rfind(prefix, 0) != 0 || ifb == IfbNameFor(current_ifindex)) return false;
  int ifindex = 0;
  try {
    ifindex = std::stoi(ifb.substr(prefix.size()));
  } catch (const std::exception&) {
    return false;
  }
  char name[IF_NAMESIZE] = {};
  return ifindex > 0 && ::if_indextoname(static_cast<unsigned>(ifindex), name) == nullptr;
}

// A root qdisc netqos put there (HTB 10:, or EDT's 10: mq / 10: fq): not what the NIC had.
bool IsNetqosRoot(const shaping::QueueLayout& l) {
  return shaping::HandleMajor(l.root_handle) == shaping::kQdiscMajor &&
         (l.root_kind == "htb" || l.root_kind == "mq" || l.root_kind == "fq");
}

}  // namespace

Result<shaping::ModeChoice> KernelLinkShaper::Apply(const core::Nic& nic,
                                                    const shaping::HtbPlan& egress,
                                                    const shaping::HtbPlan& ingress) {
  int forward_before = -1;
  // IFBs recorded for this link; those of an earlier incarnation of the NIC are removed below.
  std::vector<std::string> ifbs;
  shaping::QueueLayout before;
  if (!options_.record_path.empty()) {
    if (auto links = LoadInstalledLinks(options_.record_path); links.ok()) {
      for (const auto& l : *links) {
        if (l.netns == nic.id.netns && l.name == nic.id.name) {
          ifbs = l.ifbs;
          before = l.before;
        }
      }
    }
  }
  shaping::ModeChoice choice;
  Status st = os::RunInNetns(
      nic.netns_path,
      [&](const std::string&) -> Status {
        auto queues = shaping::QueueQdiscs::Create();
        if (!queues.ok()) return queues.status();
        auto tx_queues = queues->TxQueues(nic.ifindex);
        if (!tx_queues.ok()) return tx_queues.status();
        auto chosen = shaping::ChooseShapingMode(
            options_.mode, {*tx_queues, options_.fq.available, options_.fq.reason},
            options_.htb_only);
        if (!chosen.ok()) return chosen.status();
        choice = *chosen;
        const bool edt = choice.mode == shaping::ShapingMode::kEdt;
        // What the NIC had, recorded once, before netqos first changes it.
        if (before.root_kind.empty()) {
          if (auto layout = queues->Read(nic.ifindex); layout.ok() && !IsNetqosRoot(*layout)) {
            before = *layout;
          }
        }
        if (options_.keep_forwarded_priority) {
          const int cur = ReadForwardPriority();
          if (cur > 0) {
            NETQOS_RETURN_IF_ERROR(WriteForwardPriority(0));
            forward_before = cur;
            spdlog::info("set net.ipv4.ip_forward_update_priority=0 netns={} was={}",
                         nic.id.netns.empty() ? "host" : nic.id.netns, cur);
          }
        }
        auto installer = shaping::HtbInstaller::Create();
        if (!installer.ok()) return installer.status();
        shaping::InstallReport report;
        shaping::EdtInstallReport edt_report;
        if (!egress.shapes) {
          // Nothing capped on the NIC: it keeps (or gets back) the root it had, and its packets
          // pay for no qdisc of netqos's.
          NETQOS_RETURN_IF_ERROR(installer->Remove(nic.ifindex).Wrap("egress HTB"));
          NETQOS_RETURN_IF_ERROR(queues->RemoveOwnRoot(nic.ifindex).Wrap("egress EDT root"));
          NETQOS_RETURN_IF_ERROR(queues->Restore(nic.ifindex, before).Wrap("egress root"));
        } else if (edt) {
          auto r = queues->EnsureEdt(nic.ifindex, options_.replace_root_qdisc);
          if (!r.ok()) return r.status().Wrap("egress EDT qdiscs");
          edt_report = *r;
        } else {
          // Back from EDT mode: netqos's mq (or fq) root goes before the HTB tree replaces it.
          NETQOS_RETURN_IF_ERROR(queues->RemoveOwnRoot(nic.ifindex).Wrap("egress EDT root"));
          shaping::InstallOptions opts;
          opts.replace_foreign = options_.replace_root_qdisc;
          auto r = installer->Apply(nic.ifindex, egress, opts);
          if (!r.ok()) return r.status().Wrap("egress HTB");
          report = *r;
        }
        auto programs = ProgramsFor(edt);
        if (!programs.ok()) return programs.status().Wrap("NIC programs");
        Result<shaping::InstallReport> ireport = shaping::InstallReport{};
        if (ingress.shapes) {
          auto ifb = installer->EnsureIfb(IfbNameFor(nic.ifindex));
          if (!ifb.ok()) return ifb.status().Wrap("ingress IFB");
          // The IFB is netqos's own device: whatever root it has was put there by netqos.
          shaping::InstallOptions ifb_opts;
          ifb_opts.replace_foreign = true;
          ireport = installer->Apply(*ifb, ingress, ifb_opts);
          if (!ireport.ok())
            return ireport.status().Wrap("ingress HTB on " + IfbNameFor(nic.ifindex));
          bpf::IngressAttachOptions attach;
          attach.pin_dir = options_.pin_dir;
          attach.ifindex = nic.ifindex;
          attach.ifb_ifindex = *ifb;
          attach.redirect_unclassified = options_.redirect_unclassified;
          NETQOS_RETURN_IF_ERROR(bpf::AttachIngress(attach, **programs).Wrap("ingress classifier"));
        } else {
          // Nothing received is capped: no program on the NIC's receive path, no IFB. Detached
          // first, so nothing is redirected to an IFB on its way out.
          NETQOS_RETURN_IF_ERROR(bpf::DetachIngress(nic.ifindex).Wrap("ingress classifier"));
          NETQOS_RETURN_IF_ERROR(installer->DeleteIfb(IfbNameFor(nic.ifindex)).Wrap("ingress IFB"));
        }
        // After the qdiscs it feeds: every sent packet's class (and in EDT mode its departure
        // time) comes from netqos from now on.
        NETQOS_RETURN_IF_ERROR(
            bpf::AttachEgress(nic.ifindex, {.edt = edt}, **programs).Wrap("egress classifier"));
        std::vector<std::string> kept{IfbNameFor(nic.ifindex)};
        for (const auto& old : ifbs) {
          if (old == kept.front()) continue;
          if (!IsStaleIfb(old, nic.ifindex)) {
            kept.push_back(old);  // the ifindex in its name is in use again: left to --uninstall
            continue;
          }
          if (Status del = installer->DeleteIfb(old); !del.ok()) {
            spdlog::warn("cannot remove ifb of an earlier incarnation nic={} ifb={} error=\"{}\"",
                         nic.id.Identifier(), old, del.message());
            kept.push_back(old);
            continue;
          }
          spdlog::info("removed ifb of an earlier incarnation nic={} ifb={}", nic.id.Identifier(),
                       old);
        }
        ifbs = std::move(kept);
        if (!report.Unchanged() || !edt_report.Unchanged() || !ireport->Unchanged()) {
          spdlog::info(
              "shaping applied nic={} mode={} egress_added={} egress_changed={} "
              "egress_deleted={} edt_root_created={} edt_queues_replaced={} "
              "ingress_added={} ingress_changed={} ingress_deleted={}",
              nic.id.Identifier(), shaping::ShapingModeName(choice.mode), report.classes_added,
              report.classes_changed, report.classes_deleted, edt_report.root_created,
              edt_report.queues_replaced, ireport->classes_added, ireport->classes_changed,
              ireport->classes_deleted);
        }
        return Status::Ok();
      },
      os::NetnsSysfs::kNone);
  const std::string mode = st.ok() ? shaping::ShapingModeName(choice.mode) : "";
  if (!st.ok()) {
    // The IFB may have been created before the failure: keep it on the record for --uninstall.
    if (std::find(ifbs.begin(), ifbs.end(), IfbNameFor(nic.ifindex)) == ifbs.end()) {
      ifbs.push_back(IfbNameFor(nic.ifindex));
    }
    // The sysctl may have been changed before the shaping failed (a foreign root qdisc, say):
    // record its old value anyway, or --uninstall could not restore it (the namespace's other
    // NICs then find it at 0 and record nothing).
    if (Status rec = Record(nic, forward_before, ifbs, mode, before); !rec.ok()) {
      spdlog::error("recording what was installed on {} failed: {}", NicText(nic), rec.message());
    }
    return st.Wrap(NicText(nic));
  }
  NETQOS_RETURN_IF_ERROR(Record(nic, forward_before, ifbs, mode, before));
  return choice;
}

Result<const bpf::NicPrograms*> KernelLinkShaper::ProgramsFor(bool edt) {
  auto& slot = programs_[edt];
  if (!slot) {
    bpf::IngressAttachOptions load;
    load.pin_dir = options_.pin_dir;
    // Loaded to redirect: only ever attached at ingress where the NIC has an IFB. Only whether
    // there is one matters to the load.
    load.ifb_ifindex = 1;
    load.redirect_unclassified = options_.redirect_unclassified;
    load.edt = edt;
    load.unmarked_dscp = options_.unmarked_dscp;
    auto loaded = bpf::NicPrograms::Load(load);
    if (!loaded.ok()) return loaded.status();
    slot = std::move(*loaded);
  }
  return slot.get();
}

Status KernelLinkShaper::Patch(const core::Nic& nic, const shaping::PlanDelta& egress,
                               const shaping::PlanDelta& ingress) {
  if (egress.empty() && ingress.empty()) return Status::Ok();
  Status st = os::RunInNetns(
      nic.netns_path,
      [&](const std::string&) -> Status {
        auto installer = shaping::HtbInstaller::Create();
        if (!installer.ok()) return installer.status();
        if (!egress.empty()) {
          NETQOS_RETURN_IF_ERROR(installer->Patch(nic.ifindex, egress).status().Wrap("egress HTB"));
        }
        if (!ingress.empty()) {
          const std::string ifb = IfbNameFor(nic.ifindex);
          const int ifb_index = static_cast<int>(::if_nametoindex(ifb.c_str()));
          if (ifb_index <= 0) return NotFound("ingress IFB " + ifb + " is gone");
          NETQOS_RETURN_IF_ERROR(
              installer->Patch(ifb_index, ingress).status().Wrap("ingress HTB on " + ifb));
        }
        return Status::Ok();
      },
      os::NetnsSysfs::kNone);
  if (!st.ok()) return st.Wrap(NicText(nic));
  spdlog::debug(
      "shaping patched nic={} egress_added={} egress_changed={} ingress_added={} "
      "ingress_changed={}",
      nic.id.Identifier(), egress.added.size(), egress.changed.size(), ingress.added.size(),
      ingress.changed.size());
  return Status::Ok();
}

Status KernelLinkShaper::Record(const core::Nic& nic, int forward_priority_before,
                                const std::vector<std::string>& ifbs, const std::string& mode,
                                const shaping::QueueLayout& before) {
  if (options_.record_path.empty()) return Status::Ok();
  auto links = LoadInstalledLinks(options_.record_path);
  if (!links.ok()) return links.status();
  for (auto& l : *links) {
    if (l.netns == nic.id.netns && l.name == nic.id.name) {
      const bool forward_changed = forward_priority_before >= 0 && l.forward_priority_before < 0;
      const bool mode_changed = !mode.empty() && l.mode != mode;
      const bool before_found = l.before.root_kind.empty() && !before.root_kind.empty();
      if (!forward_changed && !mode_changed && !before_found && l.ifbs == ifbs) {
        return Status::Ok();
      }
      if (forward_changed) l.forward_priority_before = forward_priority_before;
      if (mode_changed) l.mode = mode;
      if (before_found) l.before = before;
      l.ifbs = ifbs;
      return SaveInstalledLinks(options_.record_path, *links);
    }
  }
  links->push_back(
      {nic.id.netns, nic.netns_path, nic.id.name, forward_priority_before, ifbs, mode, before});
  return SaveInstalledLinks(options_.record_path, *links);
}

Status RemoveInstalledLinks(const std::string& record_path,
                            const std::vector<InstalledLink>& extra) {
  auto recorded = LoadInstalledLinks(record_path);
  if (!recorded.ok()) return recorded.status();
  std::vector<InstalledLink> links = *recorded;
  for (const auto& e : extra) {
    bool dup = false;
    for (const auto& l : links) dup = dup || (l.netns == e.netns && l.name == e.name);
    if (!dup) links.push_back(e);
  }
  std::string failures;
  for (const auto& l : links) {
    if (!l.netns_path.empty() && !std::filesystem::exists(l.netns_path)) continue;
    Status st = os::RunInNetns(
        l.netns_path,
        [&](const std::string&) -> Status {
          auto installer = shaping::HtbInstaller::Create();
          if (!installer.ok()) return installer.status();
          auto queues = shaping::QueueQdiscs::Create();
          if (!queues.ok()) return queues.status();
          const int ifindex = static_cast<int>(::if_nametoindex(l.name.c_str()));
          if (ifindex > 0) {
            NETQOS_RETURN_IF_ERROR(bpf::DetachIngress(ifindex));
            NETQOS_RETURN_IF_ERROR(bpf::DetachEgress(ifindex));
            NETQOS_RETURN_IF_ERROR(installer->Remove(ifindex));
            NETQOS_RETURN_IF_ERROR(queues->RemoveOwnRoot(ifindex));
            NETQOS_RETURN_IF_ERROR(queues->Restore(ifindex, l.before));
            NETQOS_RETURN_IF_ERROR(queues->RemoveEmptyClsact(ifindex));
            NETQOS_RETURN_IF_ERROR(installer->DeleteIfb(IfbNameFor(ifindex)));
          }
          // Also the IFBs of a NIC that is gone, or of its earlier incarnations.
          for (const auto& ifb : l.ifbs) NETQOS_RETURN_IF_ERROR(installer->DeleteIfb(ifb));
          if (l.forward_priority_before > 0) {
            NETQOS_RETURN_IF_ERROR(WriteForwardPriority(l.forward_priority_before));
          }
          return Status::Ok();
        },
        os::NetnsSysfs::kNone);
    if (!st.ok()) failures += (failures.empty() ? "" : "; ") + st.Wrap("nic " + l.name).message();
  }
  std::error_code ec;
  std::filesystem::remove(record_path, ec);
  if (!failures.empty()) return Internal(failures);
  return Status::Ok();
}

}  // namespace netqos::enforce
