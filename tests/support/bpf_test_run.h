// BPF_PROG_TEST_RUN of an skb program (cgroup_skb or tc) on a crafted packet, with an skb context
// so the test sees the priority the program leaves. The kernel runs it in the calling task, so a
// cgroup_skb program sees the caller's cgroup.
#pragma once

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <cstdint>
#include <vector>

namespace netqos::testing {

struct SkbRunResult {
  int err = 0;           // bpf_prog_test_run_opts' return (0 = ran)
  uint32_t retval = 0;   // the program's verdict
  uint32_t priority = 0; // skb->priority after the program
};

inline SkbRunResult RunSkbProgram(int prog_fd, std::vector<uint8_t> pkt, uint32_t in_priority) {
  __sk_buff ctx_in{};
  ctx_in.priority = in_priority;
  __sk_buff ctx_out{};
  bpf_test_run_opts opts{};
  opts.sz = sizeof(opts);
  opts.data_in = pkt.data();
  opts.data_size_in = static_cast<uint32_t>(pkt.size());
  opts.ctx_in = &ctx_in;
  opts.ctx_size_in = sizeof(ctx_in);
  opts.ctx_out = &ctx_out;
  opts.ctx_size_out = sizeof(ctx_out);
  opts.repeat = 1;
  SkbRunResult r;
  r.err = bpf_prog_test_run_opts(prog_fd, &opts);
  r.retval = opts.retval;
  r.priority = ctx_out.priority;
  return r;
}

}  // namespace netqos::testing
