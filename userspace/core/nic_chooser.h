// Which of several equally good NICs an allocation takes. Katalyst picks uniformly at random;
// tests inject a deterministic choice. The core never owns randomness.
#pragma once

#include <cstddef>

namespace netqos::core {

class NicChooser {
 public:
  virtual ~NicChooser() = default;
  // Returns an index in [0, count); count >= 1.
  virtual size_t Choose(size_t count) = 0;
};

// Katalyst's FirstOne / LastOne policies, for tests and for operators who want determinism.
class FirstNicChooser final : public NicChooser {
 public:
  size_t Choose(size_t) override { return 0; }
};

class LastNicChooser final : public NicChooser {
 public:
  size_t Choose(size_t count) override { return count - 1; }
};

}  // namespace netqos::core
