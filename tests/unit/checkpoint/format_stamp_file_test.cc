// The state directory's format stamp file (checkpoint/format_stamp_file.h): written durably, read
// back exactly, and anything that is not a stamp refused as damage naming the file.
#include "checkpoint/format_stamp_file.h"

#include <catch2/catch.hpp>
#include <string>

#include "support/files.h"
#include "support/temp_dir.h"

namespace netqos::checkpoint {
namespace {

using netqos::testing::TempDir;
using netqos::testing::WriteFile;

TEST_CASE("format stamp file: a stamp is read back as written, and a missing one is none") {
  TempDir dir;
  auto none = ReadFormatStampFile(dir.path());
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  FormatStamp s;
  s.generation = 7;
  s.min_reader = 3;
  s.release = "1.2.3+0123456789ab";
  REQUIRE(WriteFormatStampFile(dir.path(), s).ok());
  auto back = ReadFormatStampFile(dir.path());
  REQUIRE(back.ok());
  REQUIRE(back->has_value());
  CHECK((*back)->generation == 7);
  CHECK((*back)->min_reader == 3);
  CHECK((*back)->release == "1.2.3+0123456789ab");
  REQUIRE(RemoveFormatStampFile(dir.path()).ok());
  CHECK_FALSE(ReadFormatStampFile(dir.path())->has_value());
  CHECK(RemoveFormatStampFile(dir.path()).ok());  // a missing one is fine
}

TEST_CASE("format stamp file: what is not a stamp is damage naming the file") {
  TempDir dir;
  const std::string path = dir.path() + "/" + kFormatStampFile;
  for (const std::string& text :
       {std::string("{\"generation\": 1"), std::string("[]"),
        std::string("{\"generation\": -1, \"min_reader\": 1, \"release\": \"x\"}"),
        std::string("{\"generation\": 4294967296, \"min_reader\": 1, \"release\": \"x\"}"),
        std::string("{\"generation\": 1, \"release\": \"x\"}"),
        std::string("{\"generation\": 1, \"min_reader\": 1, \"release\": 5}"),
        std::string("{\"generation\": 1, \"min_reader\": 1, \"release\": \"") +
            std::string(56, 'r') + "\"}",
        std::string(5000, ' ')}) {
    INFO(text.substr(0, 80));
    WriteFile(path, text);
    auto got = ReadFormatStampFile(dir.path());
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == StatusCode::kDataLoss);
    CHECK_THAT(got.status().message(), Catch::Contains(path));
  }
}

TEST_CASE("format stamp file: a release name with control characters is escaped") {
  TempDir dir;
  WriteFile(dir.path() + "/" + kFormatStampFile,
            "{\"generation\": 1, \"min_reader\": 1, \"release\": \"x\\u001b[2J\\nok\"}");
  auto got = ReadFormatStampFile(dir.path());
  REQUIRE(got.ok());
  CHECK((*got)->release.find('\x1b') == std::string::npos);
  CHECK((*got)->release.find('\n') == std::string::npos);
}

}  // namespace
}  // namespace netqos::checkpoint
