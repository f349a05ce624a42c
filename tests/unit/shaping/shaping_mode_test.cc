// Choosing a NIC's shaping mode (--shaping-mode) from its queues and the kernel: pure.
#include "shaping/shaping_mode.h"

#include <catch2/catch.hpp>

using netqos::StatusCode;
using netqos::shaping::ChooseShapingMode;
using netqos::shaping::NicQueueFacts;
using netqos::shaping::ParseShapingMode;
using netqos::shaping::ShapingMode;
using netqos::shaping::ShapingReason;
using netqos::shaping::ShapingReasonName;

TEST_CASE("the shaping mode flag parses its three values and names a bad one", "[shaping_mode]") {
  CHECK(*ParseShapingMode("auto") == ShapingMode::kAuto);
  CHECK(*ParseShapingMode("htb") == ShapingMode::kHtb);
  CHECK(*ParseShapingMode("edt") == ShapingMode::kEdt);
  for (const char* bad : {"", "EDT", "fq", "htb "}) {
    auto m = ParseShapingMode(bad);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == StatusCode::kInvalidArgument);
    CHECK(m.status().message().find("--shaping-mode") != std::string::npos);
    CHECK(m.status().message().find("auto, htb, edt") != std::string::npos);
  }
}

TEST_CASE("auto picks edt only on a multi-queue NIC with fq, and says why", "[shaping_mode]") {
  const NicQueueFacts mq_fq{.tx_queues = 4, .fq_available = true, .fq_missing_reason = ""};
  const NicQueueFacts mq_no_fq{
      .tx_queues = 4, .fq_available = false, .fq_missing_reason = "sch_fq: Unknown qdisc"};
  const NicQueueFacts single{.tx_queues = 1, .fq_available = true, .fq_missing_reason = ""};

  auto edt = ChooseShapingMode(ShapingMode::kAuto, mq_fq);
  REQUIRE(edt.ok());
  CHECK(edt->mode == ShapingMode::kEdt);
  CHECK(edt->reason == "auto: 4 TX queues and fq");
  CHECK(ShapingReasonName(edt->why) == std::string("tx_queues_and_fq"));

  auto no_fq = ChooseShapingMode(ShapingMode::kAuto, mq_no_fq);
  REQUIRE(no_fq.ok());
  CHECK(no_fq->mode == ShapingMode::kHtb);
  CHECK(no_fq->reason == "auto: 4 TX queues but no fq: sch_fq: Unknown qdisc");
  // The metric label is the closed reason, never the probe's error text.
  CHECK(ShapingReasonName(no_fq->why) == std::string("no_fq"));

  auto one = ChooseShapingMode(ShapingMode::kAuto, single);
  REQUIRE(one.ok());
  CHECK(one->mode == ShapingMode::kHtb);
  CHECK(one->reason == "auto: 1 TX queue");
  CHECK(ShapingReasonName(one->why) == std::string("single_tx_queue"));
}

TEST_CASE("an explicit mode is kept, and edt without fq is refused, not replaced",
          "[shaping_mode]") {
  const NicQueueFacts mq_fq{.tx_queues = 8, .fq_available = true, .fq_missing_reason = ""};
  auto htb = ChooseShapingMode(ShapingMode::kHtb, mq_fq);
  REQUIRE(htb.ok());
  CHECK(htb->mode == ShapingMode::kHtb);
  CHECK(htb->why == ShapingReason::kFlag);

  auto single_edt = ChooseShapingMode(
      ShapingMode::kEdt, {.tx_queues = 1, .fq_available = true, .fq_missing_reason = ""});
  REQUIRE(single_edt.ok());
  CHECK(single_edt->mode == ShapingMode::kEdt);  // fq at the root of a single-queue NIC
  CHECK(single_edt->why == ShapingReason::kFlag);

  auto refused = ChooseShapingMode(
      ShapingMode::kEdt, {.tx_queues = 8, .fq_available = false, .fq_missing_reason = "no module"});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
  CHECK(refused.status().message().find("no module") != std::string::npos);
}
