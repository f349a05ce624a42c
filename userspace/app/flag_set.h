// FlagSet: netqosd's flags on a CLI11 app, each listed under a --help group and tied to the typed
// setting it writes. That tie is what lets --print-config print every setting's resolved value
// (a spelling, a Go duration, true or false; never the text as typed) and a --config file set any
// setting, in the one format (CLI11's TOML-like `name=value`, lists as arrays). Modes (--help,
// --uninstall, --print-config, ...) are command-line only: neither printed nor read from a file.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "app/flag_choices.h"
#include "common/named_enum.h"
#include "common/status.h"

namespace netqos::app {

// `text` as a quoted config-file value ("..." or, when it holds a '"', '...').
std::string ConfigQuoted(const std::string& text);

// A number as a config-file value: integers in decimal, floating point in the shortest form that
// reads back to the same value (0.94, not 0.939999998).
template <typename T>
std::string ConfigNumber(T value) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

class FlagSet {
 public:
  explicit FlagSet(CLI::App& app) : app_(app) {}
  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // The flags added from now on are listed under `name` in --help.
  void Group(std::string name) { group_ = std::move(name); }

  // Settings: each is printed by --print-config and may be set by a --config file.
  CLI::Option* AddString(const std::string& flag, std::string& target,
                         const std::string& description);
  template <typename T>
  CLI::Option* AddNumber(const std::string& flag, T& target, const std::string& description) {
    static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
    return AddSetting(app_.add_option(flag, target, description),
                      [&target] { return ConfigNumber(target); });
  }
  // A boolean flag that also takes "=true"/"=false" (Go style).
  CLI::Option* AddBool(const std::string& flag, bool& target, const std::string& description);
  // A list: comma-separated items split by the parser (kCommas), or each occurrence kept whole
  // for the caller to split or to take as one item (kWhole). Occurrences add up.
  enum class Split { kCommas, kWhole };
  CLI::Option* AddList(const std::string& flag, std::vector<std::string>& target, Split split,
                       const std::string& description);
  // A closed choice (app/flag_choices.h): read as text, parsed by Resolve.
  template <typename E, size_t N>
  CLI::Option* AddChoice(const std::string& flag, E& target, const Choices<E, N>& choices,
                         const std::string& description) {
    CLI::Option* option = AddText(
        flag, std::string(ChoiceName(target, choices)),
        [&target, &choices](const std::string& name, const std::string& text) -> Status {
          NETQOS_ASSIGN_OR_RETURN(target, ParseChoice(name, text, choices));
          return Status::Ok();
        },
        description);
    return AddSetting(option, [&target, &choices] {
      return ConfigQuoted(std::string(ChoiceName(target, choices)));
    });
  }
  // A duration (app/duration_flag.h): read as text, parsed by Resolve, printed in Go's form.
  CLI::Option* AddDuration(const std::string& flag, std::chrono::milliseconds& target,
                           const std::string& description);

  // Command-line only: a mode (do this and exit) or --config itself.
  CLI::Option* AddModeFlag(const std::string& flag, bool& target, const std::string& description);
  CLI::Option* AddModeOption(const std::string& flag, std::string& target,
                             const std::string& description);

  // Parses the text of every choice and duration flag into its target: the first bad one's
  // error, in the order the flags were added.
  Status Resolve() const;

  // Applies the settings of a --config file to the flags the command line did not give (the
  // command line wins). A key given twice counts as a flag given twice: the last value wins, a
  // list collects both; "key = []" is the empty list. Errors name the file and the key: an
  // unreadable file, a key that is no flag or is a mode, a section, a value that does not
  // convert. Call once, after the command line is parsed.
  Status ApplyConfigFile(const std::string& path);

  // `status`, with the --config file named when its message names a flag the file set (the
  // checks after parsing name flags, not where their values came from).
  Status NameConfigFile(Status status) const;

  // Whether the --config file set `option` (the command line did not).
  bool FromConfigFile(const CLI::Option* option) const {
    return config_keys_.count(option->get_single_name()) > 0;
  }

  // Every setting as a --config file takes it: `name=value` lines, grouped as in --help.
  std::string ConfigText() const;

 private:
  struct Setting {
    CLI::Option* option;
    std::function<std::string()> value;  // the resolved value, as a config file writes it
    std::function<void()> clear;         // lists only: make the list empty
  };

  CLI::Option* AddSetting(CLI::Option* option, std::function<std::string()> value,
                          std::function<void()> clear = nullptr);
  CLI::Option* AddText(const std::string& flag, std::string initial,
                       std::function<Status(const std::string&, const std::string&)> parse,
                       const std::string& description);
  const Setting* FindSetting(const std::string& name) const;

  CLI::App& app_;
  std::string group_;
  std::vector<Setting> settings_;
  std::deque<std::string> texts_;  // CLI11 writes into them: their addresses must stay put
  std::vector<std::function<Status()>> resolvers_;
  std::string config_path_;            // the --config file applied, if any
  std::set<std::string> config_keys_;  // the keys it set (flag names without "--")
};

}  // namespace netqos::app
