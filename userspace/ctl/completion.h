// `netqosctl completion bash|zsh`: shell completion scripts generated from netqosctl's own
// command tree (CompletionTreeOf reads the CLI11 app), so a new command or flag completes without
// anyone editing a script. The scripts offer the commands, each command's flags (and the global
// ones, which netqosctl takes anywhere), the values of closed-choice flags, and file names after
// a path flag.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace netqos::ctl {

struct CompletionCommand {
  std::string name;
  std::vector<std::string> flags;      // "--pod-uid", "-o", ...
  std::vector<std::string> arguments;  // what its positional argument may be ("bash", "zsh")
};

struct CompletionTree {
  std::string program;
  std::vector<std::string> global_flags;
  std::vector<CompletionCommand> commands;
  std::set<std::string> value_flags;  // flags followed by a value: the next word is not a command
  std::map<std::string, std::vector<std::string>> flag_values;  // closed choices
  std::set<std::string> path_flags;                             // complete file names
};

// What completion needs to know beyond the tree: the closed choices of flags (by any of their
// names), which flags take a path, and the values of commands' positional arguments.
struct CompletionHints {
  std::map<std::string, std::vector<std::string>> flag_values;
  std::set<std::string> path_flags;
  std::map<std::string, std::vector<std::string>> arguments;  // by command name
};

// The tree of `app`: its flags (but --help and --version, which every shell user knows) and its
// subcommands' flags, in the order they were added.
CompletionTree CompletionTreeOf(const CLI::App& app, const CompletionHints& hints);

// A bash script defining _<program> and registering it with `complete -F`.
std::string BashCompletion(const CompletionTree& tree);
// A zsh script defining _<program> and registering it with compdef (after compinit).
std::string ZshCompletion(const CompletionTree& tree);

}  // namespace netqos::ctl
