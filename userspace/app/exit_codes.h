// netqosd's exit codes, the same as netqosctl's (ctl/ctl.h) and documented in docs/operations.md
// ("Exit codes"): scripts and init systems tell a command line to fix from a failure to retry.
#pragma once

namespace netqos::app {

inline constexpr int kExitOk = 0;       // also --help, --version, --print-config
inline constexpr int kExitFailure = 1;  // the command line was fine; running failed
inline constexpr int kExitUsage = 2;    // unknown flag, bad value, contradicting flags, ...

// The help text's last lines: the codes, where an operator looks first.
inline constexpr char kExitCodesHelp[] =
    "Exit codes: 0 success (also --help, --version, --print-config); 1 a runtime failure;\n"
    "2 a usage error (unknown flag, bad or missing value, contradicting flags).";

}  // namespace netqos::app
