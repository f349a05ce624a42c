// PluginServer over real unix sockets: serving, permissions, and re-serving after the socket or
// its directory is removed behind its back.
#include "grpc/plugin_server.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "core/constants.h"
#include "grpc/registration_service.h"
#include "support/temp_dir.h"
#include "unit/grpc/grpc_test_util.h"

namespace netqos::grpcadapter {
namespace {

using namespace std::chrono_literals;
using netqos::testing::CallGetInfo;
using netqos::testing::IsSocket;
using netqos::testing::TempDir;
using netqos::testing::WaitFor;

std::unique_ptr<PluginServer> MustServe(const std::vector<std::string>& dirs,
                                        RegistrationService& reg) {
  auto server = PluginServer::Create(dirs, {&reg});
  INFO(server.status().message());
  REQUIRE(server.ok());
  return std::move(server).value();
}

// rm -rf as an operator would run it; it can race with the server re-creating the directory
// ("Directory not empty"), in which case it is simply repeated.
void WipeDir(const std::string& dir) {
  for (int i = 0; i < 100; ++i) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (!ec) return;
  }
  FAIL("cannot remove " << dir);
}

bool Answers(const std::string& path) {
  ::pluginregistration::PluginInfo info;
  return CallGetInfo(path, &info, 500ms).ok() && info.name() == core::kResourceName;
}

}  // namespace

TEST_CASE("serves GetInfo on a 0600 socket", "[grpc][server]") {
  TempDir tmp;
  RegistrationService reg;
  const std::string dir = tmp.path() + "/plugins";
  auto server = MustServe({dir}, reg);
  const std::string path = dir + "/" + core::kSocketFileName;
  REQUIRE(server->SocketPaths() == std::vector<std::string>{path});

  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 0777) == 0600);
  struct stat dst {};
  REQUIRE(::stat(dir.c_str(), &dst) == 0);
  CHECK((dst.st_mode & 0777) == 0700);

  ::pluginregistration::PluginInfo info;
  auto s = CallGetInfo(path, &info);
  REQUIRE(s.ok());
  CHECK(info.type() == "ResourcePlugin");
  CHECK(info.name() == core::kResourceName);
  CHECK(info.endpoint().empty());
  REQUIRE(info.supported_versions_size() == 1);
  CHECK(info.supported_versions(0) == "v1alpha1");

  // Only the final name is visible: the hidden temporary bind name was renamed away.
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  CHECK(entries == 1);

  server->Stop();
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("a stale socket file is replaced", "[grpc][server]") {
  TempDir tmp;
  const std::string path = tmp.path() + "/" + core::kSocketFileName;
  std::ofstream(path) << "stale";
  RegistrationService reg;
  auto server = MustServe({tmp.path()}, reg);
  CHECK(IsSocket(path));
  CHECK(Answers(path));
}

TEST_CASE("a deleted socket is served again within a second", "[grpc][server]") {
  TempDir tmp;
  RegistrationService reg;
  auto server = MustServe({tmp.path()}, reg);
  const std::string path = server->SocketPaths().at(0);
  ino_t before = 0;
  REQUIRE(IsSocket(path, &before));

  REQUIRE(::unlink(path.c_str()) == 0);
  auto took = WaitFor([&] { return IsSocket(path); }, 1000ms);
  CHECK(took <= 1000ms);
  CHECK(Answers(path));
  // Counted once the re-serve (including its own dial check) has completed.
  CHECK(WaitFor([&] { return server->reserve_count() == 1; }, 1000ms) <= 1000ms);
}

TEST_CASE("a replaced socket file is served again", "[grpc][server]") {
  TempDir tmp;
  RegistrationService reg;
  auto server = MustServe({tmp.path()}, reg);
  const std::string path = server->SocketPaths().at(0);
  REQUIRE(::unlink(path.c_str()) == 0);
  std::ofstream(path) << "not a socket";
  auto took = WaitFor([&] { return IsSocket(path); }, 1000ms);
  CHECK(took <= 1000ms);
  CHECK(Answers(path));
}

TEST_CASE("a wiped socket directory is recreated and served within a second", "[grpc][server]") {
  TempDir tmp;
  RegistrationService reg;
  const std::string dir = tmp.path() + "/a/b";
  auto server = MustServe({dir}, reg);
  const std::string path = server->SocketPaths().at(0);

  // First the whole tree moves away at once, then it is deleted file by file.
  std::filesystem::rename(tmp.path() + "/a", tmp.path() + "/gone");
  auto took = WaitFor([&] { return IsSocket(path); }, 1000ms);
  CHECK(took <= 1000ms);
  CHECK(Answers(path));

  // And once more: the watches follow the recreated directory.
  WipeDir(tmp.path() + "/a");
  took = WaitFor([&] { return IsSocket(path); }, 1000ms);
  CHECK(took <= 1000ms);
  CHECK(Answers(path));
}

TEST_CASE("two directories are served, the same directory twice is served once", "[grpc][server]") {
  TempDir tmp;
  RegistrationService reg;
  const std::string d1 = tmp.path() + "/one";
  const std::string d2 = tmp.path() + "/two";
  std::filesystem::create_directories(d1);
  std::filesystem::create_symlink(d1, tmp.path() + "/alias");
  auto server = MustServe({d1, d2, d1 + "/", tmp.path() + "/alias"}, reg);
  const auto paths = server->SocketPaths();
  REQUIRE(paths.size() == 2);
  CHECK(paths[0] == d1 + "/" + core::kSocketFileName);
  CHECK(paths[1] == d2 + "/" + core::kSocketFileName);
  CHECK(Answers(paths[0]));
  CHECK(Answers(paths[1]));

  // Each socket is re-served on its own.
  REQUIRE(::unlink(paths[1].c_str()) == 0);
  CHECK(WaitFor([&] { return IsSocket(paths[1]); }, 1000ms) <= 1000ms);
  CHECK(Answers(paths[0]));
  CHECK(Answers(paths[1]));
}

TEST_CASE("an unusable socket directory fails with its name", "[grpc][server]") {
  TempDir tmp;
  const std::string file = tmp.path() + "/file";
  std::ofstream(file) << "x";
  RegistrationService reg;
  auto server = PluginServer::Create({file}, {&reg});
  REQUIRE_FALSE(server.ok());
  CHECK_THAT(server.status().message(), Catch::Contains(file));
}

}  // namespace netqos::grpcadapter
