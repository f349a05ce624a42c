// Katalyst's RandomOne NIC selection: uniformly random among equally good candidates, so that
// containers spread over NICs instead of piling onto the first.
#pragma once

#include <random>

#include "core/nic_chooser.h"

namespace netqos::app {

class RandomNicChooser final : public core::NicChooser {
 public:
  RandomNicChooser() : rng_(std::random_device{}()) {}
  size_t Choose(size_t count) override {
    return std::uniform_int_distribution<size_t>(0, count - 1)(rng_);
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace netqos::app
