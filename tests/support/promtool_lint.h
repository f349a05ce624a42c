// `promtool check metrics` over an exposition text: the Prometheus project's own linter
// (promlint: base units, counter suffixes, HELP, reserved suffixes and labels), run on what
// netqosd really serves. promtool comes with Debian's prometheus package (scripts/install-deps.sh).
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "support/process.h"
#include "support/temp_dir.h"

namespace netqos::testing {

// Exit code 0 and no output: no finding. Exit code 127: promtool is not installed. Otherwise the
// output holds one line per finding ("name: use base unit \"bytes\" instead of \"bits\"").
inline CommandResult PromtoolCheckMetrics(const std::string& exposition) {
  TempDir dir;
  const std::string in = dir.file("metrics.txt");
  std::ofstream(in) << exposition;
  return RunCommand({"/bin/sh", "-c",
                     "command -v promtool >/dev/null || exit 127; "
                     "exec promtool check metrics < \"$0\"",
                     in},
                    dir.file("out"));
}

// Whether promtool ran. Without it (scripts/install-deps.sh installs it) the lint is not run, which
// the test says; under CI=true that is a failure, as for the monitoring tests.
inline bool PromtoolRan(const CommandResult& lint) {
  if (lint.exit_code != 127) return true;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string(ci) == "true") {
    FAIL("promtool is not installed (scripts/install-deps.sh installs it); CI=true needs it");
  }
  WARN("promtool check metrics NOT RUN: promtool is not installed (scripts/install-deps.sh)");
  return false;
}

}  // namespace netqos::testing
