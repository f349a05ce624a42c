// TenantPolicyFile: the tenant policy read from --tenant-policy-file, the built-in one until a file
// validates, a bad file reported with the last good policy kept, a ConfigMap-style update (a
// symlink swapped to a new directory) picked up, the listener told of each new policy only.
// A real file in a temporary directory; Check() is called directly (the poll period is long).
#include "app/tenant_policy_file.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace {

using netqos::app::CheckTenantPolicyFile;
using netqos::app::TenantPolicyFile;
using netqos::testing::TempDir;

constexpr auto kNoPoll = std::chrono::hours(1);

void Write(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  std::filesystem::rename(tmp, path);
}

const char kBorrow[] = R"({"version": 1, "namespaces": {"media": {"borrow": true}}})";

}  // namespace

TEST_CASE("tenant policy file: no file is the built-in policy", "[app][tenant]") {
  TenantPolicyFile f("", kNoPoll);
  const auto s = f.State();
  CHECK(s.source == "built-in default");
  CHECK(s.error.empty());
  CHECK(s.generation == 0);
  CHECK(*f.Policy() == netqos::enforce::TenantPolicy{});
  CHECK_FALSE(f.Check());
}

TEST_CASE("tenant policy file: a bad file keeps the last good policy, a good one replaces it",
          "[app][tenant]") {
  TempDir dir;
  const std::string path = dir.file("policy.json");
  Write(path, R"({"version": 1, "default": {"borrow": 1}})");
  TenantPolicyFile f(path, kNoPoll);
  std::vector<bool> heard;
  f.SetListener(
      [&](const netqos::enforce::TenantPolicy& p) { heard.push_back(p.For("media").borrow); });
  // Bad at start: the built-in policy, and the error names the file and the key.
  auto s = f.State();
  CHECK(s.generation == 0);
  CHECK_THAT(s.error, Catch::Contains(path) && Catch::Contains("default.borrow"));
  CHECK(s.load_errors_total == 1);
  CHECK_FALSE(f.Check());  // unchanged: not read again, not counted again
  CHECK(f.State().load_errors_total == 1);

  Write(path, kBorrow);
  CHECK(f.Check());
  s = f.State();
  CHECK(s.error.empty());
  CHECK(s.generation == 1);
  CHECK(f.Policy()->For("media").borrow);
  CHECK(heard == std::vector<bool>{true});

  Write(path, "{\"version\": 1, \"namespaces\": {\"media\": {\"borrow\": true}}");  // cut short
  CHECK_FALSE(f.Check());
  s = f.State();
  CHECK_THAT(s.error, Catch::Contains("not valid JSON"));
  CHECK(f.Policy()->For("media").borrow);  // the last good one
  CHECK(s.generation == 1);

  // The file goes away: reported, the policy stays.
  std::filesystem::remove(path);
  CHECK_FALSE(f.Check());
  CHECK_THAT(f.State().error, Catch::Contains("No such file"));
  CHECK(f.Policy()->For("media").borrow);

  Write(path, R"({"version": 1})");
  CHECK(f.Check());
  CHECK_FALSE(f.Policy()->For("media").borrow);
  CHECK(heard == std::vector<bool>{true, false});
  CHECK(f.State().generation == 2);
}

TEST_CASE("tenant policy file: a ConfigMap update (a symlink swapped to a new directory) is read",
          "[app][tenant]") {
  // The kubelet's layout: policy.json -> ..data/policy.json, ..data -> ..<timestamp>/.
  TempDir dir;
  std::filesystem::create_directory(dir.file("..v1"));
  Write(dir.file("..v1/policy.json"), R"({"version": 1})");
  std::filesystem::create_directory_symlink("..v1", dir.file("..data"));
  std::filesystem::create_symlink("..data/policy.json", dir.file("policy.json"));
  TenantPolicyFile f(dir.file("policy.json"), kNoPoll);
  CHECK(f.State().generation == 1);
  CHECK_FALSE(f.Policy()->For("media").borrow);

  std::filesystem::create_directory(dir.file("..v2"));
  Write(dir.file("..v2/policy.json"), kBorrow);
  std::filesystem::create_directory_symlink("..v2", dir.file("..data.tmp"));
  std::filesystem::rename(dir.file("..data.tmp"), dir.file("..data"));
  CHECK(f.Check());
  CHECK(f.Policy()->For("media").borrow);
}

TEST_CASE("tenant policy file: the poll thread picks up a change by itself", "[app][tenant]") {
  TempDir dir;
  const std::string path = dir.file("policy.json");
  Write(path, R"({"version": 1})");
  TenantPolicyFile f(path, std::chrono::milliseconds(20));
  Write(path, kBorrow);
  bool seen = false;
  for (int i = 0; i < 500 && !seen; ++i) {
    seen = f.Policy()->For("media").borrow;
    if (!seen) ::usleep(10000);
  }
  CHECK(seen);
}

TEST_CASE("tenant policy file: --check-tenant-policy prints the policy or the error",
          "[app][tenant]") {
  TempDir dir;
  const std::string path = dir.file("policy.json");
  Write(path, kBorrow);
  std::ostringstream out, err;
  CHECK(CheckTenantPolicyFile(path, out, err) == 0);
  CHECK_THAT(out.str(), Catch::Contains("\"borrow\": true") && Catch::Contains("\"media\""));
  CHECK(err.str().empty());
  Write(path, R"({"version": 1, "namespaces": {"media": {"dscp": ["AF51"]}}})");
  std::ostringstream out2, err2;
  CHECK(CheckTenantPolicyFile(path, out2, err2) == 1);
  CHECK_THAT(err2.str(), Catch::Contains("namespaces.media.dscp[0]"));
  CHECK(out2.str().empty());
}
