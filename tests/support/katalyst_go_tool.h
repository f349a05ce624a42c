// The Go reference for Katalyst's checkpoint checksum (tests/tools/katalyst_checksum: mirrors of
// Katalyst's Go types, hashed with the real go-spew), built once per test process.
//
// Tests that use it are hidden from Catch2's discovery and run as CTest tests labelled "go"
// (tests/CMakeLists.txt): without Go they print "Go reference NOT RUN" (CTest reports them
// skipped), except under CI=true, where a missing Go is a failure.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "support/process.h"
#include "support/temp_dir.h"

namespace netqos::testing {

inline std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// The Go tool, compiled once per test run into a private directory (GOPATH mode: no network).
class GoTool {
 public:
  static const GoTool& Get() {
    static const GoTool tool;
    return tool;
  }
  bool ok() const { return !binary_.empty(); }
  const std::string& problem() const { return problem_; }

  CommandResult Run(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {binary_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, dir_.file("out"));
  }

 private:
  GoTool() {
    const std::string go = FindInPath("go");
    if (go.empty()) {
      problem_ = "no go in PATH (install golang-go and golang-github-davecgh-go-spew-dev)";
      return;
    }
    const std::string binary = dir_.file("katalyst_checksum");
    auto built = RunCommand({"/usr/bin/env", "GO111MODULE=off",
                             "GOPATH=" NETQOS_KATALYST_CHECKSUM_TOOL_DIR ":/usr/share/gocode",
                             "GOCACHE=" + dir_.file("gocache"), "GOFLAGS=", "HOME=" + dir_.path(),
                             go, "build", "-o", binary, "katalystck"},
                            dir_.file("build.log"), std::chrono::seconds(600));
    if (built.exit_code != 0) {
      problem_ = "go build failed (exit " + std::to_string(built.exit_code) + "): " + built.output;
      return;
    }
    binary_ = binary;
  }

  TempDir dir_;
  std::string binary_;
  std::string problem_;
};

// True when the test may use the Go tool. Without it: a failure under CI=true, else a notice
// that CTest's SKIP_REGULAR_EXPRESSION turns into "skipped".
inline bool GoToolAvailable() {
  const GoTool& tool = GoTool::Get();
  if (tool.ok()) return true;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string(ci) == "true") {
    FAIL("the Go reference is required under CI=true: " << tool.problem());
  }
  std::cout << "Go reference NOT RUN: " << tool.problem() << "\n";
  return false;
}

}  // namespace netqos::testing
