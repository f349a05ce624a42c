// A FileStateStore created and loaded, for tests: any failure fails the test with its message.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <utility>

#include "checkpoint/file_state_store.h"

namespace netqos::checkpoint {

inline std::unique_ptr<FileStateStore> LoadedStoreWith(FileStateStore::Options options,
                                                       core::LoadedState* loaded = nullptr) {
  auto store = FileStateStore::Create(std::move(options));
  REQUIRE(store.ok());
  auto state = store.value()->Load();
  INFO(state.status().message());
  REQUIRE(state.ok());
  if (loaded != nullptr) *loaded = std::move(state).value();
  return std::move(store).value();
}

}  // namespace netqos::checkpoint
