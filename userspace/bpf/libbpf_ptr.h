// Owners for what libbpf hands out, each freed with libbpf's own call: a link (bpf_link__destroy
// closes our fd; a pinned link stays attached), a BTF object, and a generated skeleton (its
// deleter is declared by the class that holds it and defined next to the skeleton's include, so
// headers need not pull in the generated code).
#pragma once

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <memory>

namespace netqos::bpf {

struct BpfLinkDeleter {
  void operator()(bpf_link* link) const { bpf_link__destroy(link); }
};
using BpfLinkPtr = std::unique_ptr<bpf_link, BpfLinkDeleter>;

struct BtfDeleter {
  void operator()(btf* b) const { btf__free(b); }
};
using BtfPtr = std::unique_ptr<btf, BtfDeleter>;

}  // namespace netqos::bpf
