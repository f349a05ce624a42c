// netqosd: the netqos node daemon.
#include <signal.h>
#include <sys/stat.h>

#include <exception>
#include <iostream>

#include "app/daemon.h"
#include "app/daemon_config.h"
#include "app/enforcement_setup.h"
#include "app/exit_codes.h"
#include "app/logging.h"
#include "app/tenant_policy_file.h"

int main(int argc, char** argv) {
  // Everything netqosd creates (state dir, journal, snapshot, enforced-links record, socket
  // directories and sockets) is root's alone, whatever umask it was started with: the state
  // names every pod, and the socket drives allocations.
  ::umask(077);
  try {
    auto parsed = netqos::app::ParseDaemonFlags(argc, argv);
    if (!parsed.config) return parsed.exit_code;
    if (parsed.config->print_topology) return netqos::app::PrintTopology(*parsed.config);
    if (!parsed.config->check_tenant_policy.empty()) {
      return netqos::app::CheckTenantPolicyFile(parsed.config->check_tenant_policy, std::cout,
                                                std::cerr);
    }
    if (parsed.config->uninstall) {
      netqos::app::SetupLogging(parsed.config->log_level, parsed.config->log_format);
      return netqos::app::Uninstall(*parsed.config);
    }
    return netqos::app::RunDaemon(*parsed.config);
  } catch (const std::exception& e) {
    std::cerr << "netqosd: fatal: " << e.what() << "\n";
    return netqos::app::kExitFailure;
  } catch (...) {
    std::cerr << "netqosd: fatal: unknown exception\n";
    return netqos::app::kExitFailure;
  }
}
