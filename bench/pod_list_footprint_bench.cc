// What parsing the kubelet's pod list costs in memory at 10,000 pods shaped like a real kubelet's
// (whole specs and statuses, managed fields, a dozen annotations:
// tests/support/kubelet_pod_json.h): the heap's peak during the parse and what the parsed pods
// keep, for the parse netqos had before (the whole document built as a JSON tree, rebuilt here from
// tests/support/pod_list_tree_parse.h) and for pods::ParsePodList (a stream of tokens, only
// PodInfo's fields copied out), without and with the daemon's annotation filter, on the same
// document in one run. Bytes are counted by this program's operator new (malloc_usable_size of
// every block: what malloc hands out, its own headers not included); the document's text is
// allocated before and not counted. In-process: no daemon, no root.
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "enforce/pod_annotation_keys.h"
#include "pods/pod_list.h"
#include "support/kubelet_pod_json.h"
#include "support/pod_list_tree_parse.h"

namespace {

std::atomic<size_t> g_live{0};
std::atomic<size_t> g_peak{0};

void* Counted(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  const size_t live = g_live.fetch_add(malloc_usable_size(p)) + malloc_usable_size(p);
  size_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
  return p;
}

void Uncounted(void* p) {
  if (p == nullptr) return;
  g_live.fetch_sub(malloc_usable_size(p));
  std::free(p);
}

}  // namespace

void* operator new(size_t n) { return Counted(std::malloc(n == 0 ? 1 : n)); }
void* operator new[](size_t n) { return Counted(std::malloc(n == 0 ? 1 : n)); }
void* operator new(size_t n, std::align_val_t a) {
  return Counted(std::aligned_alloc(
      static_cast<size_t>(a), (n + static_cast<size_t>(a) - 1) & ~(static_cast<size_t>(a) - 1)));
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { Uncounted(p); }
void operator delete[](void* p) noexcept { Uncounted(p); }
void operator delete(void* p, size_t) noexcept { Uncounted(p); }
void operator delete[](void* p, size_t) noexcept { Uncounted(p); }
void operator delete(void* p, std::align_val_t) noexcept { Uncounted(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Uncounted(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { Uncounted(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { Uncounted(p); }

namespace {

using netqos::pods::PodInfo;

struct Cost {
  size_t peak = 0;      // the most the heap held above the start, during the parse
  size_t retained = 0;  // what the parsed pods hold
  double ms = 0;        // wall clock of the parse (one run, on whatever else the machine does)
  std::vector<PodInfo> pods;
};

template <typename Parse>
Cost Measure(const Parse& parse) {
  Cost c;
  const size_t start = g_live.load();
  g_peak.store(start);
  const auto t0 = std::chrono::steady_clock::now();
  auto pods = parse();
  c.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!pods.ok()) {
    std::fprintf(stderr, "parse failed: %s\n", pods.status().message().c_str());
    std::exit(1);
  }
  c.pods = std::move(*pods);
  c.peak = g_peak.load() - start;
  c.retained = g_live.load() - start;
  return c;
}

double Mb(size_t bytes) { return static_cast<double>(bytes) / 1e6; }

void Row(const char* what, const Cost& c, const Cost& baseline, size_t pods) {
  std::printf("| %s | %.1f MB | %.2fx | %.1f MB (%zu B/pod) | %.2fx | %.0f ms |\n", what,
              Mb(c.peak), static_cast<double>(c.peak) / static_cast<double>(baseline.peak),
              Mb(c.retained), c.retained / pods,
              static_cast<double>(c.retained) / static_cast<double>(baseline.retained), c.ms);
}

void Run(const char* title, const netqos::testing::KubeletPodListShape& shape) {
  const std::string text = netqos::testing::KubeletPodListJson(shape);
  const auto pods = static_cast<size_t>(shape.pods);
  netqos::pods::PodListOptions daemon;
  daemon.annotation_keys = netqos::enforce::PodAnnotationKeys(netqos::core::PolicyConfig{});

  std::optional<Cost> tree;
  tree.emplace(Measure([&] { return netqos::testing::ParsePodListTree(text, "bench"); }));
  const std::vector<PodInfo> expected = tree->pods;  // for the checks below, not measured
  tree->pods.clear();
  tree->pods.shrink_to_fit();
  std::optional<Cost> stream;
  stream.emplace(Measure([&] { return netqos::pods::ParsePodList(text, "bench"); }));
  if (stream->pods != expected) {
    std::fprintf(stderr, "the streamed parse gave other pods than the tree\n");
    std::exit(1);
  }
  stream->pods.clear();
  stream->pods.shrink_to_fit();
  std::optional<Cost> filtered;
  filtered.emplace(Measure([&] { return netqos::pods::ParsePodList(text, "bench", daemon); }));
  if (filtered->pods != netqos::testing::WithAnnotations(expected, *daemon.annotation_keys)) {
    std::fprintf(stderr, "the filtered parse gave other pods than the tree\n");
    std::exit(1);
  }

  std::printf("\n%s: %zu pods, %.1f MB of JSON (%zu B/pod)\n\n", title, pods, Mb(text.size()),
              text.size() / pods);
  std::printf("| parse | peak during the parse | / tree | the parsed pods | / tree | time |\n");
  std::printf("|---|---|---|---|---|---|\n");
  Row("whole tree, then the pods (before)", *tree, *tree, pods);
  Row("stream, every annotation", *stream, *tree, pods);
  Row("stream, the daemon's annotations (netqosd)", *filtered, *tree, pods);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  netqos::testing::KubeletPodListShape real;
  real.pods = quick ? 100 : 10000;
  Run("Pods shaped like a real kubelet's", real);
  netqos::testing::KubeletPodListShape small = real;
  small.containers = 1;
  small.env_vars = 0;
  small.extra_annotations = 0;
  Run("Smaller pods (one container, no env, no extra annotations)", small);
  return 0;
}
