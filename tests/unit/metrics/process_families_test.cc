// The process_* families: /proc/self/stat parsed (a command name with spaces and parentheses
// included), and the live values of this test process plausible.
#include "metrics/process_families.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "support/prom_parser.h"

using netqos::metrics::CollectProcess;
using netqos::metrics::Family;
using netqos::metrics::ParseBootTime;
using netqos::metrics::ParseProcStat;

TEST_CASE("ParseProcStat counts fields from the command's last parenthesis") {
  // Fields 1..24 of proc(5): pid (comm) state ppid ... utime(14) stime(15) ... starttime(22)
  // vsize(23) rss(24).
  const std::string stat =
      "4242 (net) qos (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 "
      "1000 123456789 2048 18446744073709551615\n";
  auto s = ParseProcStat(stat, 100, 4096, 1700000000);
  REQUIRE(s.ok());
  CHECK(s->cpu_seconds == Approx(3.0));
  CHECK(s->virtual_bytes == 123456789);
  CHECK(s->resident_bytes == 2048.0 * 4096);
  CHECK(s->start_time_seconds == Approx(1700000010));

  CHECK_FALSE(ParseProcStat("4242 net S 1", 100, 4096, 0).ok());
  CHECK_FALSE(ParseProcStat("4242 (net) S 1 2 3", 100, 4096, 0).ok());
}

TEST_CASE("ParseBootTime reads the btime line") {
  auto b = ParseBootTime("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n");
  REQUIRE(b.ok());
  CHECK(*b == 1700000000);
  CHECK_FALSE(ParseBootTime("cpu 1\n").ok());
  CHECK_FALSE(ParseBootTime("btime x\n").ok());
}

TEST_CASE("the process families of this process are present and plausible") {
  std::vector<Family> fams;
  CollectProcess(&fams);
  const auto doc = netqos::testing::ParsePrometheusText(netqos::metrics::RenderText(fams));
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(doc.Value("process_resident_memory_bytes") > 0);
  CHECK(doc.Value("process_virtual_memory_bytes") >= doc.Value("process_resident_memory_bytes"));
  CHECK(doc.Value("process_cpu_seconds_total") >= 0);
  CHECK(doc.Family("process_cpu_seconds_total").type == "counter");
  // This test process started moments ago (clock ticks and btime are whole seconds).
  CHECK(doc.Value("process_start_time_seconds") <= now + 2);
  CHECK(doc.Value("process_start_time_seconds") > now - 600);
  CHECK(doc.Value("process_open_fds") >= 3);  // stdin, stdout, stderr
  CHECK(doc.Value("process_max_fds") >= doc.Value("process_open_fds"));
}
