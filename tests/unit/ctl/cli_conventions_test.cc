// netqosctl's command-line conventions, in-process (no daemon needed): help and version commands,
// "did you mean" for a mistyped command, numeric flags' errors, formats refused where they make no
// sense, and the completion script, generated from the command tree and run in a real bash.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/version.h"
#include "ctl/ctl.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace {

struct Run {
  int code;
  std::string out;
  std::string err;
};

Run Ctl(std::vector<std::string> args) {
  args.insert(args.begin(), "netqosctl");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = netqos::ctl::RunCtl(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("netqosctl help and version are commands") {
  auto r = Ctl({"help"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("Usage: netqosctl"));
  CHECK_THAT(r.out, Catch::Contains("completion"));

  r = Ctl({"help", "top"});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("Usage: netqosctl top"));
  CHECK_THAT(r.out, Catch::Contains("--sparkline"));

  r = Ctl({"help", "stauts"});
  CHECK(r.code == 2);
  CHECK(r.err ==
        "netqosctl help: unknown command \"stauts\" (did you mean \"status\"?) (see netqosctl "
        "help)\n");

  r = Ctl({"version"});
  CHECK(r.code == 0);
  CHECK(r.out == std::string("netqosctl ") + netqos::Version() + "\n");
  r = Ctl({"version", "-o", "yaml"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("netqosctl_version: "));
  CHECK_THAT(r.out, Catch::Contains("schema_version: 1\n"));
}

TEST_CASE("netqosctl suggests the closest command for an unknown one") {
  auto r = Ctl({"stauts"});
  CHECK(r.code == 2);
  CHECK(r.err ==
        "netqosctl: unknown subcommand \"stauts\" (did you mean \"status\"?) (see netqosctl "
        "help)\n");
  r = Ctl({"frobnicate"});
  CHECK(r.code == 2);
  CHECK(r.err == "netqosctl: unknown subcommand \"frobnicate\" (see netqosctl help)\n");
}

TEST_CASE("netqosctl numeric flags name the flag and a readable range") {
  auto r = Ctl({"--timeout=abc", "allocations"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--timeout"));
  CHECK_THAT(r.err, Catch::Contains("\"abc\" is not a number: give a number from 0.001 to 86400 "
                                    "seconds"));
  CHECK(r.err.size() < 200);  // not a double's limits spelled out
  r = Ctl({"top", "--interval", "0"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--interval"));
  CHECK_THAT(r.err, Catch::Contains("0 is out of range: give a number from 0.05 to 3600 seconds"));
  r = Ctl({"top", "--iterations", "-1"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("give a whole number from 0 to 1000000000"));
  r = Ctl({"hints", "--pod-uid", "u", "--container", "c", "--container-index", "x"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--container-index"));
  r = Ctl({"allocations", "-o", "xml"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("\"xml\" is not one of table, wide, json or yaml"));
}

TEST_CASE("netqosctl refuses a format a command cannot print, and contradicting formats") {
  auto r = Ctl({"completion", "bash", "-o", "json"});
  CHECK(r.code == 2);
  CHECK(r.err == "netqosctl completion: -o json is not supported: it prints a shell script\n");
  CHECK(r.out.empty());
  r = Ctl({"help", "--json"});
  CHECK(r.code == 2);
  CHECK(r.err == "netqosctl help: -o json is not supported: it prints help text\n");
  r = Ctl({"--json", "-o", "yaml", "version"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--json and -o yaml ask for two formats"));
  // --json is -o json.
  r = Ctl({"--json", "-o", "json", "version"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("\"netqosctl_version\""));
  r = Ctl({"completion", "fish"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("\"fish\" is not one of bash or zsh"));
}

TEST_CASE("netqosctl completion bash completes commands, flags and values in bash") {
  auto script = Ctl({"completion", "bash"});
  REQUIRE(script.code == 0);
  netqos::testing::TempDir dir;
  std::ofstream(dir.file("netqosctl.bash")) << script.out;
  // COMPREPLY after completing `words` (the last is the word under the cursor), one per line.
  auto complete = [&](const std::string& words) {
    const std::string snippet = "source " + dir.file("netqosctl.bash") + " && COMP_WORDS=(" +
                                words +
                                ") && COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )) && _netqosctl && "
                                "printf '%s\\n' \"${COMPREPLY[@]}\"";
    auto r = netqos::testing::RunCommand({"/bin/bash", "-c", snippet}, dir.file("bash.out"));
    INFO(words << "\n" << r.output);
    CHECK(r.exit_code == 0);
    return r.output;
  };
  CHECK(complete("netqosctl sta") == "status\n");
  CHECK(complete("netqosctl topology") == "topology\ntopology-aware\n");
  CHECK(complete("netqosctl comp") == "completion\n");
  // A command's own flag, and a global flag after the command (netqosctl takes them anywhere).
  CHECK(complete("netqosctl status --bpf") == "--bpf-pin-dir\n");
  CHECK(complete("netqosctl top --spark") == "--sparkline\n");
  CHECK(complete("netqosctl status --ti") == "--timeout\n");
  CHECK(complete("netqosctl allocate --pod-u") == "--pod-uid\n");
  // A closed choice's values; a flag's value is not taken for the command.
  CHECK(complete("netqosctl -o y") == "yaml\n");
  CHECK(complete("netqosctl status --output w") == "wide\n");
  CHECK(complete("netqosctl -o json cl") == "classes\n");
  CHECK(complete("netqosctl completion z") == "zsh\n");
  CHECK(complete("netqosctl help cgroup") == "cgroup\ncgroup-mount\n");
  // A free value (a number): nothing to offer.
  CHECK(complete("netqosctl --timeout ''") == "\n");
}

TEST_CASE("netqosctl completion zsh is generated from the same tree") {
  auto r = Ctl({"completion", "zsh"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("#compdef netqosctl\n"));
  CHECK_THAT(r.out, Catch::Contains("top) flags+=("));
  CHECK_THAT(r.out, Catch::Contains("--sparkline"));
  CHECK_THAT(r.out, Catch::Contains("--output|-o) compadd -- table wide json yaml; return ;;"));
  CHECK_THAT(r.out, Catch::Contains("compdef _netqosctl netqosctl"));
}
