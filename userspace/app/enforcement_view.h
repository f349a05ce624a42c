// service::EnforcementView over the running enforcement stack (or its absence): the reconciler's
// last pass joined with the counters in the pinned per-CPU maps.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "app/enforcement_start.h"
#include "service/enforcement_view.h"

namespace netqos::app {

class StackEnforcementView : public service::EnforcementView {
 public:
  // `state` says, each time a report is made, what there is: enforcement starts after serving
  // (enforcement_start.h), so the stack may come later, or never ("none", or "disabled" with
  // the reason). Its stack must outlive this view's readers.
  StackEnforcementView(std::function<EnforcementState()> state, std::string pin_dir)
      : state_(std::move(state)), pin_dir_(std::move(pin_dir)) {}

  service::EnforcementReport Report(bool with_counters) const override;

 private:
  std::function<EnforcementState()> state_;
  std::string pin_dir_;
};

}  // namespace netqos::app
