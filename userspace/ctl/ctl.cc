// Command-line surface of netqosctl (CLI11) and dispatch to the subcommands.
#include "ctl/ctl.h"

#include <CLI/CLI.hpp>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/version.h"
#include "ctl/class_rows.h"
#include "ctl/commands.h"
#include "ctl/completion.h"
#include "ctl/flag_checks.h"
#include "ctl/suggest.h"

namespace netqos::ctl {
namespace {

// The limits of the numeric flags: wide enough for any real use, narrow enough to read.
constexpr double kMaxTimeoutSeconds = 86400;  // a day
constexpr double kMaxContainerIndex = 4294967295;
constexpr double kMaxMbps = 1e9;  // a petabit
constexpr double kMaxIterations = 1e9;

const std::vector<std::string> kFormats = {"table", "wide", "json", "yaml"};
const std::vector<std::string> kShells = {"bash", "zsh"};

std::vector<std::string> CommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// " (did you mean \"status\"?)" when a command is close to `typed`, else "".
std::string DidYouMean(const CLI::App& app, const std::string& typed) {
  auto best = ClosestName(typed, CommandNames(app));
  return best ? " (did you mean \"" + *best + "\"?)" : std::string();
}

// `netqosctl help [command]`.
int CmdHelp(const CLI::App& app, const std::vector<std::string>& topic, std::ostream& out,
            std::ostream& err) {
  if (topic.empty()) {
    // Not app.help(), which prints the help of the subcommand parsed: `help` itself.
    out << app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
    return kExitOk;
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == topic.front()) {
      out << sub->help(app.get_name());  // "Usage: netqosctl top ..."
      return kExitOk;
    }
  }
  err << "netqosctl help: unknown command \"" << topic.front() << "\""
      << DidYouMean(app, topic.front()) << " (see netqosctl help)\n";
  return kExitUsage;
}

int CmdVersion(const GlobalOptions& g, std::ostream& out) {
  if (g.structured()) {
    out << DocumentText(g.format, {{"netqosctl_version", Version()}});
  } else {
    out << "netqosctl " << Version() << "\n";
  }
  return kExitOk;
}

int CmdCompletion(const CLI::App& app, const std::string& shell, std::ostream& out) {
  CompletionHints hints;
  hints.flag_values["--output"] = kFormats;
  hints.path_flags = {"--socket", "--bpf-pin-dir"};
  hints.arguments["completion"] = kShells;
  hints.arguments["help"] = CommandNames(app);
  const CompletionTree tree = CompletionTreeOf(app, hints);
  out << (shell == "zsh" ? ZshCompletion(tree) : BashCompletion(tree));
  return kExitOk;
}

void AddRequestFlags(CLI::App* cmd, RequestFlags* f) {
  cmd->add_option("--pod-uid", f->pod_uid, "pod UID")->required();
  cmd->add_option("--pod-namespace", f->pod_namespace, "pod namespace")->capture_default_str();
  cmd->add_option("--pod-name", f->pod_name, "pod name");
  cmd->add_option("--container", f->container, "container name (not with --pod)");
  cmd->add_option("--container-type", f->container_type, "MAIN, INIT, SIDECAR or EPHEMERAL")
      ->capture_default_str();
  cmd->add_option("--container-index", f->container_index, "container index")
      ->check(WholeNumberIn(0, kMaxContainerIndex, ""));
  cmd->add_option("--mbps", f->mbps, "requested bandwidth in Mbps")
      ->capture_default_str()
      ->check(NumberIn(0, kMaxMbps, "Mbps"));
  cmd->add_option("--qos", f->qos,
                  "QoS level (sets the katalyst.kubewharf.io/qos_level annotation and label)");
  cmd->add_option("--annotation", f->annotations, "pod annotation key=value (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--label", f->labels, "pod label key=value (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--hint", f->hint, "request hint: NUMA nodes, e.g. 0,1 or 0-3");
  cmd->add_flag("--preferred", f->preferred, "mark the request hint preferred");
  cmd->add_flag("--pod", f->pod_level,
                "use the pod-level RPCs (GetPodTopologyHints/AllocateForPod)");
}

int Dispatch(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"netqosctl: talk to netqosd (the Katalyst-compatible network QRM plugin)",
               "netqosctl"};
  app.require_subcommand(1);
  app.fallthrough();  // global flags may follow the subcommand
  app.set_version_flag("--version", "netqosctl " + VersionLine());
  app.footer(
      "Exit codes: 0 success (also --help, --version); 1 the daemon or the pinned maps could not\n"
      "be reached, or an RPC failed; 2 a usage error (unknown subcommand or flag, bad value).");
  // A flag given twice takes its last value, as in netqosd (and Go); set before any option or
  // subcommand is added, which copy the defaults. --annotation and --label still collect.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  GlobalOptions g;
  g.socket = kDefaultSocket;
  app.add_option("--socket", g.socket, "netqosd's unix socket")->capture_default_str();
  std::string output = "table";
  auto* output_opt = app.add_option("-o,--output", output,
                                    "output format: table, wide (more columns), json or yaml "
                                    "(documents with a schema_version)")
                         ->capture_default_str()
                         ->check(OneOf(kFormats));
  bool json_alias = false;
  app.add_flag("--json", json_alias, "the same as -o json");
  app.add_option("--timeout", g.timeout_seconds, "RPC deadline in seconds")
      ->capture_default_str()
      ->check(NumberIn(0.001, kMaxTimeoutSeconds, "seconds"));

  std::vector<std::string> help_topic;
  auto* help = app.add_subcommand("help", "how to use netqosctl, or one of its commands");
  help->add_option("command", help_topic, "the command to explain")->expected(0, 1);
  auto* version = app.add_subcommand("version", "print netqosctl's version");
  std::string shell;
  auto* completion = app.add_subcommand(
      "completion", "print a shell completion script: source <(netqosctl completion bash)");
  completion->add_option("shell", shell, "bash or zsh")->required()->check(OneOf(kShells));

  RequestFlags hints_flags;
  auto* hints = app.add_subcommand("hints", "ask for topology hints (GetTopologyHints)");
  AddRequestFlags(hints, &hints_flags);

  RequestFlags alloc_flags;
  auto* allocate = app.add_subcommand("allocate", "allocate bandwidth (Allocate)");
  AddRequestFlags(allocate, &alloc_flags);

  std::string remove_uid;
  auto* remove = app.add_subcommand("remove", "release a pod's bandwidth (RemovePod)");
  remove->add_option("--pod-uid", remove_uid, "pod UID")->required();

  auto* allocations = app.add_subcommand("allocations", "list what the daemon holds");
  auto* capacity = app.add_subcommand("capacity", "per-NIC capacity and what the kubelet sees");
  auto* topology = app.add_subcommand(
      "topology", "the NICs the daemon sees: namespace, ifindex, speed, NUMA, IPs, health");
  auto* tenant_policy = app.add_subcommand(
      "tenant-policy",
      "the tenant policy in force: what each namespace's pods may ask for with annotations");

  std::string pin_dir;
  auto add_pin_dir = [&pin_dir](CLI::App* cmd) {
    cmd->add_option("--bpf-pin-dir", pin_dir,
                    "where netqosd pins its BPF maps (default: what the daemon reports, else " +
                        std::string(kDefaultPinDir) + ")");
  };
  auto* status = app.add_subcommand(
      "status", "daemon health, NICs, enforcement mode and the pinned BPF state");
  add_pin_dir(status);
  auto* classes = app.add_subcommand(
      "classes", "the class map (cgroup -> HTB class) joined with pod and container names");
  add_pin_dir(classes);
  TopFlags top_flags;
  auto* top = app.add_subcommand(
      "top", "live per-container and per-class rates and drops from the pinned counters");
  add_pin_dir(top);
  top->add_option("--interval", top_flags.interval_seconds, "seconds between refreshes")
      ->capture_default_str()
      ->check(NumberIn(0.05, 3600, "seconds"));
  top->add_option("--iterations", top_flags.iterations, "stop after N refreshes (0: never)")
      ->capture_default_str()
      ->check(WholeNumberIn(0, kMaxIterations, ""));
  top->add_flag("--no-clear", top_flags.no_clear, "print frames one after another");
  top->add_flag("--sparkline", top_flags.sparkline,
                "a TX TREND column: each container's send rate over the last 24 refreshes, full "
                "height at its cap (Unicode blocks in a UTF-8 locale, else ASCII)");
  std::string cgroup_target;
  auto* cgroup = app.add_subcommand("cgroup", "what applies to one cgroup, and why");
  add_pin_dir(cgroup);
  cgroup->add_option("target", cgroup_target, "cgroup directory or cgroup id")->required();

  auto* cgroup_mount = app.add_subcommand(
      "cgroup-mount", "print the cgroup2 mount point (found the way netqosd finds it)");

  std::string ta_uid;
  std::string ta_container;
  auto* topo = app.add_subcommand("topology-aware",
                                  "one container's allocation (GetTopologyAwareResources)");
  topo->add_option("--pod-uid", ta_uid, "pod UID")->required();
  topo->add_option("--container", ta_container, "container name")->required();

  auto* options = app.add_subcommand("options", "plugin options (GetResourcePluginOptions)");
  auto* info = app.add_subcommand("plugin-info", "plugin watcher identity (GetInfo)");

  std::string notify_error;
  auto* notify = app.add_subcommand("notify-registered",
                                    "tell the plugin it was registered (NotifyRegistrationStatus)");
  auto* error_opt =
      notify->add_option("--error", notify_error, "report a failed registration with this error");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // An unknown subcommand leaves no subcommand, and CLI11 then says only "A subcommand is
    // required": name what was given instead.
    const std::vector<std::string> rest = app.remaining();
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && app.get_subcommands().empty() &&
        !rest.empty()) {
      const bool flag = rest.front().rfind('-', 0) == 0;
      err << "netqosctl: unknown " << (flag ? "flag" : "subcommand") << " \"" << rest.front()
          << "\"" << (flag ? std::string() : DidYouMean(app, rest.front()))
          << " (see netqosctl help)\n";
      return kExitUsage;
    }
    // CLI11's own codes (104 for a value that does not convert, 109 for an unexpected argument,
    // ...) are its internals: 2 for every rejected command line.
    return app.exit(e, out, err) == 0 ? kExitOk : kExitUsage;
  }

  // --json is -o json; with another -o it is a contradiction, not a choice to make silently.
  if (json_alias && output_opt->count() > 0 && output != "json") {
    err << "netqosctl: --json and -o " << output << " ask for two formats: give one\n";
    return kExitUsage;
  }
  g.format = json_alias ? OutputFormat::kJson : *ParseOutputFormat(output);
  // help and completion print text for a person or a shell: no document to format.
  for (CLI::App* text_only : {help, completion}) {
    if (text_only->parsed() && g.format != OutputFormat::kTable) {
      err << "netqosctl " << text_only->get_name() << ": -o " << OutputFormatName(g.format)
          << " is not supported: it prints " << (text_only == help ? "help text" : "a shell script")
          << "\n";
      return kExitUsage;
    }
  }
  if (help->parsed()) return CmdHelp(app, help_topic, out, err);
  if (version->parsed()) return CmdVersion(g, out);
  if (completion->parsed()) return CmdCompletion(app, shell, out);
  if (status->parsed()) return CmdStatus(g, pin_dir, out, err);
  if (classes->parsed()) return CmdClasses(g, pin_dir, out, err);
  if (top->parsed()) return CmdTop(g, pin_dir, top_flags, out, err);
  if (cgroup->parsed()) return CmdCgroup(g, pin_dir, cgroup_target, out, err);
  if (cgroup_mount->parsed()) return CmdCgroupMount(g, out, err);
  if (hints->parsed()) return CmdHints(g, hints_flags, out, err);
  if (allocate->parsed()) return CmdAllocate(g, alloc_flags, out, err);
  if (remove->parsed()) return CmdRemove(g, remove_uid, out, err);
  if (allocations->parsed()) return CmdAllocations(g, out, err);
  if (capacity->parsed()) return CmdCapacity(g, out, err);
  if (topology->parsed()) return CmdTopology(g, out, err);
  if (tenant_policy->parsed()) return CmdTenantPolicy(g, out, err);
  if (topo->parsed()) return CmdTopologyAware(g, ta_uid, ta_container, out, err);
  if (options->parsed()) return CmdOptions(g, out, err);
  if (info->parsed()) return CmdPluginInfo(g, out, err);
  if (notify->parsed()) {
    std::optional<std::string> error;
    if (error_opt->count() > 0) error = notify_error;
    return CmdNotifyRegistered(g, error, out, err);
  }
  err << "netqosctl: no subcommand\n";
  return kExitUsage;
}

}  // namespace

int RunCtl(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  try {
    return Dispatch(argc, argv, out, err);
  } catch (const std::exception& e) {
    err << "netqosctl: " << e.what() << "\n";
    return kExitRpcError;
  }
}

}  // namespace netqos::ctl
