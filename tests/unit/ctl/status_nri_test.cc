// `netqosctl status`'s NRI line and JSON, rendered from GetStatus: a registered session, one that
// lost its runtime, and a daemon that is no NRI plugin (or too old to say).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ctl/status_view.h"

namespace admin = ::netqos::admin::v1;
using netqos::ctl::PrintStatus;
using netqos::ctl::StatusInput;
using netqos::ctl::StatusJson;

namespace {

StatusInput WithNri(bool connected) {
  admin::GetStatusResponse s;
  s.set_version("0.2.0");
  s.mutable_enforcement()->set_mode("bpf");
  auto* n = s.mutable_nri();
  n->set_socket("/var/run/nri/nri.sock");
  n->set_connected(connected);
  n->set_runtime_name("containerd");
  n->set_runtime_version("v2.1.9");
  n->set_event_budget_ms(1000);
  n->set_connects(3);
  n->set_events(41);
  n->set_late_replies(2);
  n->set_last_error(connected ? "" : "the runtime closed the connection");
  StatusInput in;
  in.daemon = s;
  return in;
}

std::string Text(const StatusInput& in) {
  std::ostringstream out;
  PrintStatus(in, out);
  return out.str();
}

}  // namespace

TEST_CASE("status shows the NRI runtime, its timeout, the budget and what the session did") {
  StatusInput in = WithNri(true);
  CHECK_THAT(Text(in), Catch::Contains("NRI:         registered with containerd v2.1.9 at "
                                       "/var/run/nri/nri.sock, fail-open, budget 1000 ms "
                                       "(runtime's timeout none sent); 41 events, 2 answered "
                                       "late, 0 starts refused\n"));
  in.daemon->mutable_nri()->set_runtime_timeout_ms(2000);
  in.daemon->mutable_nri()->set_shed_events(5);
  const std::string text = Text(in);
  CHECK_THAT(text, Catch::Contains("(runtime's timeout 2000 ms)"));
  CHECK_THAT(text, Catch::Contains(", 5 SHED, 0 invalid"));

  const nlohmann::json j = StatusJson(in).at("daemon").at("nri");
  CHECK(j.at("connected") == true);
  CHECK(j.at("runtime_name") == "containerd");
  CHECK(j.at("runtime_timeout_ms") == 2000);
  CHECK(j.at("event_budget_ms") == 1000);
  CHECK(j.at("late_replies") == 2);
  CHECK(j.at("shed_events") == 5);
  CHECK(j.at("last_error").is_null());
}

TEST_CASE("status says when the NRI session has lost its runtime, and why") {
  const StatusInput in = WithNri(false);
  CHECK_THAT(Text(in), Catch::Contains("NRI:         NOT CONNECTED to /var/run/nri/nri.sock "
                                       "(fail-open, 3 connections so far): the runtime closed "
                                       "the connection\n"));
  CHECK(StatusJson(in).at("daemon").at("nri").at("last_error") ==
        "the runtime closed the connection");
}

TEST_CASE("status of a daemon that is no NRI plugin has no NRI line, and null in JSON") {
  StatusInput in = WithNri(true);
  in.daemon->clear_nri();
  CHECK_THAT(Text(in), !Catch::Contains("NRI:"));
  CHECK(StatusJson(in).at("daemon").at("nri").is_null());
}
