// In-memory fakes of the enforcer's map ports (enforce/class_table.h, enforce/pod_address_table.h)
// shared by its unit tests. Every call is serialised, so the enforcer's worker thread may call
// them while a test reads Get or Snapshot; single-threaded tests use the members directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "common/status.h"
#include "enforce/class_table.h"
#include "enforce/pod_address_table.h"

namespace netqos::enforce::testing {

// The class map: cgroup id -> class entry. Records each call, and fails the ones asked to, as
// the BPF map would ("E2BIG", "EPERM", a full map).
struct FakeClassTable : ClassTable {
  Result<std::map<uint64_t, ClassEntry>> List() const override {
    std::lock_guard<std::mutex> l(mu);
    if (list_fails) return Internal("bpf_map_get_next_key(netqos_cls): EPERM");
    return entries;
  }
  Status Set(uint64_t id, const ClassEntry& e) override {
    std::lock_guard<std::mutex> l(mu);
    sets.push_back(id);
    if (on_set) on_set(id, e);
    if (fail_set.count(id) != 0) return Internal("bpf_map_update_elem: E2BIG");
    if (entries.count(id) == 0 && entries.size() >= capacity) {
      return Status(StatusCode::kResourceExhausted, "class map full");
    }
    entries[id] = e;
    return Status::Ok();
  }
  Status Clear(uint64_t id) override {
    std::lock_guard<std::mutex> l(mu);
    clears.push_back(id);
    if (fail_clear.count(id) != 0) return Internal("bpf_map_delete_elem: EPERM");
    entries.erase(id);
    return Status::Ok();
  }
  std::optional<ClassEntry> Get(uint64_t id) const {
    std::lock_guard<std::mutex> l(mu);
    auto it = entries.find(id);
    return it == entries.end() ? std::nullopt : std::optional<ClassEntry>(it->second);
  }

  mutable std::mutex mu;
  std::map<uint64_t, ClassEntry> entries;
  std::vector<uint64_t> sets;    // every Set, in order, failed ones included
  std::vector<uint64_t> clears;  // every Clear, in order
  std::set<uint64_t> fail_set;
  std::set<uint64_t> fail_clear;
  size_t capacity = 1000;
  bool list_fails = false;
  std::function<void(uint64_t, const ClassEntry&)> on_set;  // called on every Set, under mu
};

// The pod-address map: pod address -> cgroup id.
struct FakePodAddressTable : PodAddressTable {
  Result<std::map<PodAddress, uint64_t>> List() const override {
    std::lock_guard<std::mutex> l(mu);
    return entries;
  }
  Status Set(const PodAddress& a, uint64_t id) override {
    std::lock_guard<std::mutex> l(mu);
    if (fail_set) return Internal("bpf_map_update_elem(netqos_podip): E2BIG");
    entries[a] = id;
    return Status::Ok();
  }
  Status Clear(const PodAddress& a) override {
    std::lock_guard<std::mutex> l(mu);
    entries.erase(a);
    return Status::Ok();
  }
  std::map<PodAddress, uint64_t> Snapshot() const {
    std::lock_guard<std::mutex> l(mu);
    return entries;
  }

  mutable std::mutex mu;
  std::map<PodAddress, uint64_t> entries;
  bool fail_set = false;
};

}  // namespace netqos::enforce::testing
