#include "ctl/completion.h"

#include <algorithm>

namespace netqos::ctl {
namespace {

// The flags of one command, names as typed ("-o", "--output").
void AddFlags(const CLI::App& app, const CompletionHints& hints, CompletionTree* tree,
              std::vector<std::string>* flags) {
  for (const CLI::Option* opt : app.get_options()) {
    if (!opt->nonpositional()) continue;
    std::vector<std::string> names;
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    if (std::find(names.begin(), names.end(), "--help") != names.end() ||
        std::find(names.begin(), names.end(), "--version") != names.end()) {
      continue;
    }
    for (const auto& name : names) {
      flags->push_back(name);
      if (opt->get_expected_min() > 0) tree->value_flags.insert(name);
    }
    // The hints name a flag by any of its names; the script knows it by all of them.
    for (const auto& name : names) {
      if (auto v = hints.flag_values.find(name); v != hints.flag_values.end()) {
        for (const auto& n : names) tree->flag_values[n] = v->second;
      }
      if (hints.path_flags.count(name) != 0) {
        for (const auto& n : names) tree->path_flags.insert(n);
      }
    }
  }
}

std::string Words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string Alternatives(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : "|") + n;
  return out;
}

std::vector<std::string> CommandNames(const CompletionTree& tree) {
  std::vector<std::string> names;
  for (const auto& c : tree.commands) names.push_back(c.name);
  return names;
}

// The value flags that offer nothing (a number, a pod UID): neither closed nor a path.
std::set<std::string> FreeValueFlags(const CompletionTree& tree) {
  std::set<std::string> free;
  for (const auto& f : tree.value_flags) {
    if (tree.flag_values.count(f) == 0 && tree.path_flags.count(f) == 0) free.insert(f);
  }
  return free;
}

// What differs between the two scripts: how the words typed so far are read, and how a list of
// candidates is offered. The logic around them is the same for both (Body).
struct Shell {
  std::string word;   // the i-th word typed: ${COMP_WORDS[i]} or ${words[i]}, without "i]}"
  std::string first;  // the first word after the program's name
  std::string end;    // the word being completed
  std::string (*offer)(const std::string& words);      // offer these words, then return
  std::string files;                                   // offer file names, then return
  std::string nothing;                                 // offer nothing, then return
  std::string (*add_flags)(const std::string& words);  // the command's flags join the global ones
  std::string (*set_words)(const std::string& words);  // what a non-flag word may be
  std::string offer_flags;                             // offer the flags gathered
  std::string offer_words;                             // offer the words gathered
};

const Shell kBash{
    "${COMP_WORDS[",
    "1",
    "COMP_CWORD",
    [](const std::string& w) {
      return "COMPREPLY=($(compgen -W \"" + w + "\" -- \"$cur\")); return";
    },
    "COMPREPLY=($(compgen -f -- \"$cur\")); return",
    "COMPREPLY=(); return",
    [](const std::string& w) { return "flags=\"$flags " + w + "\";"; },
    [](const std::string& w) { return "words=\"" + w + "\";"; },
    "COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))",
    "COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))",
};

const Shell kZsh{
    "${words[",
    "2",
    "CURRENT",
    [](const std::string& w) { return "compadd -- " + w + "; return"; },
    "_files; return",
    "return",
    [](const std::string& w) { return "flags+=(" + w + ");"; },
    [](const std::string& w) { return "cands=(" + w + ");"; },
    "compadd -- \"${flags[@]}\"",
    "compadd -- \"${cands[@]}\"",
};

// The function's body after its variables: find the command, complete a flag's value, else offer
// the command's flags or its words.
std::string Body(const CompletionTree& tree, const Shell& sh) {
  std::string s;
  s += "  # The command is the first word that is neither a flag nor a flag's value.\n";
  s += "  for (( i = " + sh.first + "; i < " + sh.end + "; i++ )); do\n";
  s += "    case \"" + sh.word + "i]}\" in\n";
  s += "      -*) ;;\n";
  s += "      *)\n";
  if (!tree.value_flags.empty()) {
    s += "        case \"" + sh.word + "i-1]}\" in " + Alternatives(tree.value_flags) +
         ") continue ;; esac\n";
  }
  s += "        cmd=\"" + sh.word + "i]}\"\n";
  s += "        break ;;\n";
  s += "    esac\n";
  s += "  done\n";
  s += "  case \"$prev\" in\n";
  std::map<std::vector<std::string>, std::set<std::string>> by_values;
  for (const auto& [flag, values] : tree.flag_values) by_values[values].insert(flag);
  for (const auto& [values, flags] : by_values) {
    s += "    " + Alternatives(flags) + ") " + sh.offer(Words(values)) + " ;;\n";
  }
  if (!tree.path_flags.empty()) {
    s += "    " + Alternatives(tree.path_flags) + ") " + sh.files + " ;;\n";
  }
  if (const auto free = FreeValueFlags(tree); !free.empty()) {
    s += "    " + Alternatives(free) + ") " + sh.nothing + " ;;\n";
  }
  s += "  esac\n";
  s += "  case \"$cmd\" in\n";
  s += "    \"\") " + sh.set_words(Words(CommandNames(tree))) + " ;;\n";
  for (const auto& c : tree.commands) {
    if (c.flags.empty() && c.arguments.empty()) continue;
    s += "    " + c.name + ")";
    if (!c.flags.empty()) s += " " + sh.add_flags(Words(c.flags));
    if (!c.arguments.empty()) s += " " + sh.set_words(Words(c.arguments));
    s += " ;;\n";
  }
  s += "  esac\n";
  s += "  if [[ \"$cur\" == -* ]]; then\n";
  s += "    " + sh.offer_flags + "\n";
  s += "  else\n";
  s += "    " + sh.offer_words + "\n";
  s += "  fi\n";
  return s;
}

}  // namespace

CompletionTree CompletionTreeOf(const CLI::App& app, const CompletionHints& hints) {
  CompletionTree tree;
  tree.program = app.get_name();
  AddFlags(app, hints, &tree, &tree.global_flags);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    CompletionCommand cmd;
    cmd.name = sub->get_name();
    AddFlags(*sub, hints, &tree, &cmd.flags);
    if (auto a = hints.arguments.find(cmd.name); a != hints.arguments.end()) {
      cmd.arguments = a->second;
    }
    tree.commands.push_back(std::move(cmd));
  }
  return tree;
}

std::string BashCompletion(const CompletionTree& tree) {
  const std::string fn = "_" + tree.program;
  std::string s;
  s += "# bash completion for " + tree.program + ", generated by `" + tree.program +
       " completion bash` from its own command tree.\n";
  s += "# Load it with: source <(" + tree.program + " completion bash)\n";
  s += fn + "() {\n";
  s += "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\" cmd=\"\" i\n";
  s += "  (( COMP_CWORD > 0 )) && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n";
  s += "  local flags=\"" + Words(tree.global_flags) + "\" words=\"\"\n";
  s += Body(tree, kBash);
  s += "}\n";
  s += "complete -F " + fn + " " + tree.program + "\n";
  return s;
}

std::string ZshCompletion(const CompletionTree& tree) {
  const std::string fn = "_" + tree.program;
  std::string s;
  s += "#compdef " + tree.program + "\n";
  s += "# zsh completion for " + tree.program + ", generated by `" + tree.program +
       " completion zsh` from its own command tree.\n";
  s += "# Load it with: source <(" + tree.program + " completion zsh)  (after compinit)\n";
  s += fn + "() {\n";
  s += "  local cur=\"${words[CURRENT]}\" prev=\"${words[CURRENT-1]}\" cmd=\"\" i\n";
  s += "  local -a flags cands\n";
  s += "  flags=(" + Words(tree.global_flags) + ")\n";
  s += Body(tree, kZsh);
  s += "}\n";
  s += "if (( $+functions[compdef] )); then compdef " + fn + " " + tree.program + "; fi\n";
  return s;
}

}  // namespace netqos::ctl
