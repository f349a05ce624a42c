#include "enforce/kernel/kernel_class_stats.h"

#include "enforce/link_shaper.h"
#include "os/netns_exec.h"
#include "shaping/netlink/htb_class_stats_reader.h"

namespace netqos::enforce {

Result<LinkClassStats> ReadKernelClassStats(const core::Nic& nic) {
  LinkClassStats out;
  const Status st = os::RunInNetns(
      nic.netns_path,
      [&](const std::string&) -> Status {
        auto reader = shaping::HtbClassStatsReader::Create();
        if (!reader.ok()) return reader.status();
        auto egress = reader->Read(nic.ifindex);
        if (!egress.ok()) return egress.status().Wrap("egress classes of " + nic.id.name);
        auto ingress = reader->ReadByName(IfbNameFor(nic.ifindex));
        if (!ingress.ok()) return ingress.status().Wrap("ingress classes");
        out.egress = std::move(egress).value();
        out.ingress = std::move(ingress).value();
        return Status::Ok();
      },
      os::NetnsSysfs::kNone);
  if (!st.ok()) return st;
  return out;
}

}  // namespace netqos::enforce
