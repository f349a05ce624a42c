// --log-format=json: house-style messages split into text and key=value fields, one JSON object
// per line with ts (UTC, ms), level and msg.
#include "app/logging.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "common/log_value.h"

using netqos::app::FormatJsonLogLine;
using netqos::app::SplitKeyValues;
using Fields = std::vector<std::pair<std::string, std::string>>;

TEST_CASE("house-style messages split into text and key=value pairs") {
  auto s = SplitKeyValues(
      "allocated pod=ns/web uid=u1 container=app nic=eth0 mbps=100 "
      "class_id=22345 result=\"0-1\"");
  CHECK(s.text == "allocated");
  CHECK(s.fields == Fields{{"pod", "ns/web"},
                           {"uid", "u1"},
                           {"container", "app"},
                           {"nic", "eth0"},
                           {"mbps", "100"},
                           {"class_id", "22345"},
                           {"result", "0-1"}});

  // A quoted value keeps its spaces and '=' signs; an unescaped quote inside survives.
  s = SplitKeyValues("rpc failed rpc=Allocate code=INTERNAL error=\"a b=c: only \"static\" x\"");
  CHECK(s.text == "rpc failed");
  CHECK(s.fields ==
        Fields{{"rpc", "Allocate"}, {"code", "INTERNAL"}, {"error", "a b=c: only \"static\" x"}});

  // Escaped quotes and backslashes are unescaped.
  s = SplitKeyValues(R"(x k="say \"hi\" \\ bye")");
  CHECK(s.fields == Fields{{"k", "say \"hi\" \\ bye"}});

  // Only pairs: no text. Empty values are values.
  s = SplitKeyValues("a=1 b= c=3");
  CHECK(s.text == "");
  CHECK(s.fields == Fields{{"a", "1"}, {"b", ""}, {"c", "3"}});

  // Text with '=' before the trailing pairs stays text.
  s = SplitKeyValues("set x=1 then later y=2");
  CHECK(s.text == "set x=1 then later");
  CHECK(s.fields == Fields{{"y", "2"}});
}

TEST_CASE("messages that do not end in pairs are all text") {
  for (const char* m : {"netqosd cannot start: --foo=bar is wrong", "plain words", "",
                        "k=\"unterminated", "libbpf: map 'x': created"}) {
    INFO(m);
    auto s = SplitKeyValues(m);
    CHECK(s.text == m);
    CHECK(s.fields.empty());
  }
}

TEST_CASE("a JSON log line has ts, level, msg and the message's fields") {
  using namespace std::chrono;
  const auto ts = system_clock::time_point(seconds(1700000000) + milliseconds(42));
  const std::string line =
      FormatJsonLogLine(ts, "info", "allocated pod=ns/web container=app mbps=100 msg=hello");
  REQUIRE(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);  // exactly one line
  auto j = nlohmann::json::parse(line);
  CHECK(j["ts"] == "2023-11-14T22:13:20.042Z");
  CHECK(j["level"] == "info");
  CHECK(j["msg"] == "allocated");
  CHECK(j["pod"] == "ns/web");
  CHECK(j["container"] == "app");
  CHECK(j["mbps"] == "100");
  CHECK(j["field_msg"] == "hello");  // a reserved name is renamed, never overwrites msg
  // Key order: ts, level, msg first.
  CHECK(line.rfind("{\"ts\":", 0) == 0);
  CHECK(line.find("\"level\"") < line.find("\"msg\""));

  const std::string odd = FormatJsonLogLine(ts, "warning", "bad \"quote\"\nand \xff byte");
  auto k = nlohmann::json::parse(odd);
  CHECK(k["level"] == "warning");
  CHECK(k["msg"].get<std::string>().find("\"quote\"\nand") != std::string::npos);
  CHECK(odd.find('\n') == odd.size() - 1);
}

TEST_CASE("values from outside cannot forge a field or a line") {
  using netqos::LogValue;
  CHECK(LogValue("web-0") == "web-0");  // plain tokens print as they are
  CHECK(LogValue("") == "\"\"");
  CHECK(LogValue("a b") == "\"a b\"");
  // A pod name or annotation written by a tenant: a quote, a forged field, a newline.
  const std::string hostile = "x\" pod=kube-system/y\nlevel=error msg=forged";
  const std::string message = "enforcement problem object=pod:ns/p problem=" + LogValue(hostile) +
                              " pod=" + LogValue("ns/real");
  CHECK(message.find('\n') == std::string::npos);  // one line in the text format
  const auto split = SplitKeyValues(message);
  CHECK(split.fields == Fields{{"object", "pod:ns/p"},
                               {"problem", "x\" pod=kube-system/y\\nlevel=error msg=forged"},
                               {"pod", "ns/real"}});
  const auto json = nlohmann::json::parse(
      FormatJsonLogLine(std::chrono::system_clock::now(), "warning", message));
  CHECK(json["pod"] == "ns/real");
  CHECK(json["level"] == "warning");
  CHECK(LogValue(std::string("a\x01"
                             "b\x7f")) == "\"a\\x01b\\x7f\"");
}
