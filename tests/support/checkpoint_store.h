// What the FileStateStore tests share: an allocation to journal, and loading a store the test
// requires to load.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "checkpoint/file_state_store.h"
#include "core/types.h"

namespace netqos::checkpoint::testing {

// Container "c" of pod `uid`, `bw` Mbit/s both ways on eth0, shared_cores.
inline core::AllocationInfo Info(const std::string& uid, uint32_t bw) {
  core::AllocationInfo info;
  info.pod_uid = uid;
  info.pod_namespace = "default";
  info.pod_name = "pod-" + uid;
  info.container_name = "c";
  info.container_type = "MAIN";
  info.egress = bw;
  info.ingress = bw;
  info.if_name = "eth0";
  info.qos_level = "shared_cores";
  return info;
}

// Container `container` of pod `uid`, 10 Mbit/s both ways on eth0, as a journal record.
inline core::StateChange SetFor(const std::string& uid, const std::string& container) {
  core::AllocationInfo info;
  info.pod_uid = uid;
  info.container_name = container;
  info.container_type = "MAIN";
  info.egress = info.ingress = 10;
  info.if_name = "eth0";
  return core::SetAllocation{info};
}

// Loads `store`, requiring success (the error is shown); the state goes to *loaded when given.
inline std::unique_ptr<FileStateStore> MustLoad(std::unique_ptr<FileStateStore> store,
                                                core::LoadedState* loaded) {
  auto state = store->Load();
  INFO(state.status().message());
  REQUIRE(state.ok());
  if (loaded != nullptr) *loaded = std::move(state).value();
  return store;
}

}  // namespace netqos::checkpoint::testing
