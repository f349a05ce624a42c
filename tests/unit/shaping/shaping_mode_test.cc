// Choosing a NIC's shaping mode (--shaping-mode) from its queues and the kernel: pure.
#include "shaping/shaping_mode.h"

#include <catch2/catch.hpp>

using netqos::StatusCode;
using Strings = std::vector<std::string>;
using netqos::shaping::ChooseShapingMode;
using netqos::shaping::ContainerCeil;
using netqos::shaping::HtbOnlyFeatures;
using netqos::shaping::NicQueueFacts;
using netqos::shaping::ShapingConfig;
using netqos::shaping::ShapingMode;
using netqos::shaping::ShapingReason;
using netqos::shaping::ShapingReasonName;

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

TEST_CASE("the flags asking for what only htb does are named, and only those", "[shaping_mode]") {
  CHECK(HtbOnlyFeatures(ShapingConfig{}).empty());

  ShapingConfig dscp_only;  // marking works in both modes
  dscp_only.dscp[0] = 46;
  dscp_only.unmarked_dscp = 0;
  CHECK(HtbOnlyFeatures(dscp_only).empty());

  ShapingConfig levels;
  levels.levels[3].ceil_permille = 500;
  CHECK(HtbOnlyFeatures(levels) == Strings{"--qos-level-shaping"});

  ShapingConfig all;
  all.levels[1].prio = 5;
  all.container_ceil = ContainerCeil::kLevel;
  all.low_priority_floor_percent = 5;
  all.burst_bytes[2] = 64 * 1024;
  CHECK(HtbOnlyFeatures(all) == Strings{"--qos-level-shaping", "--container-ceil=level",
                                        "--low-priority-groups", "--qos-level-burst"});
}

TEST_CASE("what only htb does makes auto pick htb and an explicit edt report it inactive",
          "[shaping_mode]") {
  const NicQueueFacts mq_fq{.tx_queues = 4, .fq_available = true, .fq_missing_reason = ""};
  const Strings asked{"--container-ceil=level", "--qos-level-burst"};

  auto autom = ChooseShapingMode(ShapingMode::kAuto, mq_fq, asked);
  REQUIRE(autom.ok());
  CHECK(autom->mode == ShapingMode::kHtb);
  CHECK(autom->reason ==
        "auto: 4 TX queues and fq, but htb for --container-ceil=level, --qos-level-burst");
  CHECK(autom->inactive.empty());
  CHECK(ShapingReasonName(autom->why) == std::string("htb_only_features"));

  auto edt = ChooseShapingMode(ShapingMode::kEdt, mq_fq, asked);
  REQUIRE(edt.ok());
  CHECK(edt->mode == ShapingMode::kEdt);
  CHECK(edt->inactive == asked);

  auto htb = ChooseShapingMode(ShapingMode::kHtb, mq_fq, asked);
  REQUIRE(htb.ok());
  CHECK(htb->inactive.empty());

  // Nothing asked: auto's choice as before, and nothing reported.
  auto plain = ChooseShapingMode(ShapingMode::kEdt, mq_fq, {});
  REQUIRE(plain.ok());
  CHECK(plain->inactive.empty());
}
