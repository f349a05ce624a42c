// InotifyWatch on real inotify and eventfd, in a private directory: events reach the handler with
// their names, Wake() wins over pending events and interrupts a blocked wait from another thread,
// extra fds report readiness, timeouts time out, and a missing path is a NotFound naming it.
#include "os/inotify_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "support/temp_dir.h"

namespace {

using netqos::StatusCode;
using netqos::os::InotifyWatch;
using Outcome = InotifyWatch::Outcome;
using std::chrono::milliseconds;

std::unique_ptr<InotifyWatch> NewWatch() {
  auto w = InotifyWatch::Create();
  REQUIRE(w.ok());
  return std::move(w).value();
}

TEST_CASE("InotifyWatch: every queued event reaches the handler with its name") {
  netqos::testing::TempDir dir;
  auto w = NewWatch();
  REQUIRE(w->has_inotify());
  REQUIRE(w->Add(dir.path(), IN_CREATE | IN_CLOSE_WRITE).ok());
  std::ofstream(dir.file("a")) << "x";
  std::ofstream(dir.file("b")) << "y";
  std::set<std::string> names;
  auto out = w->Wait(milliseconds(2000), [&](const inotify_event& ev) {
    if (ev.len > 0) names.insert(ev.name);
  });
  REQUIRE(out.ok());
  CHECK(*out == Outcome::kReady);
  CHECK(names == std::set<std::string>{"a", "b"});

  // Nothing new: the queue was read to the end, so the next wait times out.
  auto idle = w->Wait(milliseconds(50), nullptr);
  REQUIRE(idle.ok());
  CHECK(*idle == Outcome::kTimeout);
}

TEST_CASE("InotifyWatch: Wake wins over pending events and is consumed") {
  netqos::testing::TempDir dir;
  auto w = NewWatch();
  REQUIRE(w->Add(dir.path(), IN_CREATE).ok());
  std::ofstream(dir.file("a")) << "x";
  w->Wake();
  w->Wake();  // two wakes are one wake-up
  int events = 0;
  auto out = w->Wait(milliseconds(2000), [&](const inotify_event&) { ++events; });
  REQUIRE(out.ok());
  CHECK(*out == Outcome::kWoken);
  CHECK(events == 0);
  auto next = w->Wait(milliseconds(2000), [&](const inotify_event&) { ++events; });
  REQUIRE(next.ok());
  CHECK(*next == Outcome::kReady);  // the event waited for the next call
  CHECK(events == 1);
}

TEST_CASE("InotifyWatch: Wake from another thread ends a wait without a timeout") {
  auto w = NewWatch();
  std::thread waker([&] {
    std::this_thread::sleep_for(milliseconds(50));
    w->Wake();
  });
  const auto start = std::chrono::steady_clock::now();
  auto out = w->Wait(milliseconds(-1), nullptr);
  waker.join();
  REQUIRE(out.ok());
  CHECK(*out == Outcome::kWoken);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("InotifyWatch: extra fds report which one is readable") {
  auto w = NewWatch();
  int a[2], b[2];
  REQUIRE(::pipe(a) == 0);
  REQUIRE(::pipe(b) == 0);
  REQUIRE(::write(b[1], "x", 1) == 1);
  std::vector<bool> ready;
  auto out = w->Wait(milliseconds(2000), nullptr, {a[0], b[0]}, &ready);
  REQUIRE(out.ok());
  CHECK(*out == Outcome::kReady);
  CHECK(ready == std::vector<bool>{false, true});
  for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
}

TEST_CASE("InotifyWatch: a missing path is NotFound naming it, a removed watch is silent") {
  netqos::testing::TempDir dir;
  auto w = NewWatch();
  auto missing = w->Add(dir.file("nope"), IN_CREATE);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains(dir.file("nope")));

  auto wd = w->Add(dir.path(), IN_CREATE);
  REQUIRE(wd.ok());
  w->Remove(*wd);
  std::ofstream(dir.file("after")) << "x";
  int events = 0;
  auto out = w->Wait(milliseconds(100), [&](const inotify_event& ev) {
    if (!(ev.mask & IN_IGNORED)) ++events;  // the kernel's note that the watch is gone
  });
  REQUIRE(out.ok());
  CHECK(events == 0);
}

}  // namespace
