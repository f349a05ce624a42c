// service::EnforcementView over the running enforcement stack (or its absence): the reconciler's
// last pass joined with the counters in the pinned per-CPU maps.
#pragma once

#include <string>

#include "app/enforcement_setup.h"
#include "service/enforcement_view.h"

namespace netqos::app {

class StackEnforcementView : public service::EnforcementView {
 public:
  // `stack` may be null: enforcement off ("none") or failed to start ("disabled", with `error`).
  StackEnforcementView(const EnforcementStack* stack, std::string mode, std::string error,
                       std::string pin_dir)
      : stack_(stack),
        mode_(std::move(mode)),
        error_(std::move(error)),
        pin_dir_(std::move(pin_dir)) {}

  service::EnforcementReport Report(bool with_counters) const override;

 private:
  const EnforcementStack* stack_;
  std::string mode_;
  std::string error_;
  std::string pin_dir_;
};

}  // namespace netqos::app
