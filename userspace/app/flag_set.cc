#include "app/flag_set.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "app/duration_flag.h"

namespace netqos::app {
namespace {

// Whether `message` names `--flag` (not a longer flag that starts with it).
bool NamesFlag(const std::string& message, const std::string& flag) {
  const std::string needle = "--" + flag;
  for (size_t at = message.find(needle); at != std::string::npos;
       at = message.find(needle, at + 1)) {
    const size_t end = at + needle.size();
    const bool longer =
        end < message.size() &&
        (std::isalnum(static_cast<unsigned char>(message[end])) != 0 || message[end] == '-');
    if (!longer) return true;
  }
  return false;
}

}  // namespace

std::string ConfigQuoted(const std::string& text) {
  // CLI11's reader has no escapes: it strips one pair of matching quotes.
  const char quote = text.find('"') == std::string::npos ? '"' : '\'';
  return quote + text + quote;
}

CLI::Option* FlagSet::AddSetting(CLI::Option* option, std::function<std::string()> value,
                                 std::function<void()> clear) {
  option->group(group_);
  settings_.push_back(Setting{option, std::move(value), std::move(clear)});
  return option;
}

CLI::Option* FlagSet::AddText(const std::string& flag, std::string initial,
                              std::function<Status(const std::string&, const std::string&)> parse,
                              const std::string& description) {
  std::string& text = texts_.emplace_back(std::move(initial));
  resolvers_.emplace_back([flag, &text, parse = std::move(parse)] { return parse(flag, text); });
  return app_.add_option(flag, text, description);
}

CLI::Option* FlagSet::AddString(const std::string& flag, std::string& target,
                                const std::string& description) {
  return AddSetting(app_.add_option(flag, target, description),
                    [&target] { return ConfigQuoted(target); });
}

CLI::Option* FlagSet::AddBool(const std::string& flag, bool& target,
                              const std::string& description) {
  // CLI11 does not capture a flag's default: set here, --help shows the real one.
  CLI::Option* option =
      app_.add_flag(flag, target, description)->default_str(target ? "true" : "false");
  return AddSetting(option, [&target] { return std::string(target ? "true" : "false"); });
}

CLI::Option* FlagSet::AddList(const std::string& flag, std::vector<std::string>& target,
                              Split split, const std::string& description) {
  CLI::Option* option = app_.add_option(flag, target, description);
  if (split == Split::kCommas) option->delimiter(',');
  return AddSetting(
      option,
      [&target] {
        std::string out = "[";
        for (size_t i = 0; i < target.size(); ++i) {
          if (i > 0) out += ", ";
          out += ConfigQuoted(target[i]);
        }
        return out + "]";
      },
      [&target] { target.clear(); });
}

CLI::Option* FlagSet::AddDuration(const std::string& flag, std::chrono::milliseconds& target,
                                  const std::string& description) {
  CLI::Option* option = AddText(
      flag, DurationFlagText(target),
      [&target](const std::string& name, const std::string& text) -> Status {
        NETQOS_ASSIGN_OR_RETURN(target, ParseDurationFlag(name, text));
        return Status::Ok();
      },
      description);
  option->type_name("DURATION");
  return AddSetting(option, [&target] { return ConfigQuoted(DurationFlagText(target)); });
}

CLI::Option* FlagSet::AddModeFlag(const std::string& flag, bool& target,
                                  const std::string& description) {
  return app_.add_flag(flag, target, description)
      ->default_str(target ? "true" : "false")
      ->configurable(false)
      ->group(group_);
}

CLI::Option* FlagSet::AddModeOption(const std::string& flag, std::string& target,
                                    const std::string& description) {
  return app_.add_option(flag, target, description)->configurable(false)->group(group_);
}

Status FlagSet::Resolve() const {
  for (const auto& resolve : resolvers_) {
    if (Status st = resolve(); !st.ok()) return st;
  }
  return Status::Ok();
}

const FlagSet::Setting* FlagSet::FindSetting(const std::string& name) const {
  for (const Setting& s : settings_) {
    if (s.option->get_single_name() == name) return &s;
  }
  return nullptr;
}

Status FlagSet::ApplyConfigFile(const std::string& path) {
  const std::string where = "--config " + path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return InvalidArgument(where + ": is a directory, not a file");
  std::ifstream in(path);
  if (!in) return InvalidArgument(where + ": cannot read it: " + std::strerror(errno));
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_config(in);
  } catch (const CLI::Error& e) {
    return InvalidArgument(where + ": " + e.what());
  }
  if (in.bad()) return InvalidArgument(where + ": cannot read it: " + std::strerror(errno));

  // What the command line gave stays: the file fills in the rest.
  std::set<const CLI::Option*> on_command_line;
  for (const Setting& s : settings_) {
    if (s.option->count() > 0) on_command_line.insert(s.option);
  }
  std::vector<const Setting*> applied;
  for (const CLI::ConfigItem& item : items) {
    if (!item.parents.empty()) {
      return InvalidArgument(where + ": section [" + item.parents.front() +
                             "]: sections are not read; write every key at the top, as "
                             "--print-config does");
    }
    const std::string& key = item.name;
    const Setting* s = FindSetting(key);
    if (s == nullptr) {
      if (app_.get_option_no_throw("--" + key) != nullptr) {
        return InvalidArgument(where + ": key \"" + key +
                               "\" is a command-line mode, not a setting: give --" + key +
                               " on the command line");
      }
      return InvalidArgument(where + ": unknown key \"" + key +
                             "\": not a netqosd flag (a key is a flag's name without the "
                             "leading --, as netqosd --help lists them)");
    }
    if (on_command_line.count(s->option) > 0) continue;
    config_keys_.insert(key);
    if (s->clear && item.inputs.empty()) {  // "key = []"
      s->option->clear();
      s->clear();
    } else if (!s->clear && item.inputs.size() != 1) {
      return InvalidArgument(where + ": key \"" + key + "\" takes one value, not a list");
    } else {
      s->option->add_result(item.inputs);
    }
    if (std::find(applied.begin(), applied.end(), s) == applied.end()) applied.push_back(s);
  }
  config_path_ = path;
  for (const Setting* s : applied) {
    if (s->option->count() == 0) continue;  // emptied by "key = []"
    const std::string given = s->option->results().back();
    try {
      s->option->run_callback();
    } catch (const std::exception&) {  // CLI::ConversionError, ...
      const std::string type = s->option->get_type_name();
      return InvalidArgument(where + ": key \"" + s->option->get_single_name() + "\": \"" + given +
                             "\" is not " +
                             (type.empty() ? std::string("true or false") : "a " + type));
    }
  }
  return Status::Ok();
}

Status FlagSet::NameConfigFile(Status status) const {
  if (status.ok() || config_path_.empty()) return status;
  std::string keys;
  for (const std::string& key : config_keys_) {
    if (!NamesFlag(status.message(), key)) continue;
    keys += (keys.empty() ? "" : ", ") + key;
  }
  if (keys.empty()) return status;
  return Status(status.code(),
                status.message() + " (set by " + keys + " in --config " + config_path_ + ")");
}

std::string FlagSet::ConfigText() const {
  std::string out;
  std::string group;
  for (const Setting& s : settings_) {
    if (s.option->get_group() != group) {
      group = s.option->get_group();
      out += (out.empty() ? "# " : "\n# ") + group + "\n";
    }
    out += s.option->get_single_name() + "=" + s.value() + "\n";
  }
  return out;
}

}  // namespace netqos::app
