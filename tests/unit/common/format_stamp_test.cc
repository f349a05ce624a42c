// The rollback guard's rule (common/format_stamp.h): state may be used by every generation from
// its min_reader on; a netqosd below that refuses it, naming where, who wrote it and the way back.
#include "common/format_stamp.h"

#include <catch2/catch.hpp>

#include "common/version.h"

namespace netqos {
namespace {

FormatStamp Stamp(uint32_t generation, uint32_t min_reader, std::string release = "9.9.9+abc") {
  FormatStamp s;
  s.generation = generation;
  s.min_reader = min_reader;
  s.release = std::move(release);
  return s;
}

TEST_CASE(
    "format stamp: this build reads its own, older generations' and newer ones that allow it") {
  CHECK(CheckFormatStamp(OwnFormatStamp(), "x").ok());
  CHECK(CheckFormatStamp(Stamp(0, 0), "x").ok());
  CHECK(CheckFormatStamp(Stamp(kFormatGeneration + 5, kFormatGeneration), "x").ok());
  CHECK(OwnFormatStamp().min_reader <= OwnFormatStamp().generation);
  CHECK(OwnFormatStamp().release.rfind(Version(), 0) == 0);
}

TEST_CASE(
    "format stamp: a newer generation's state this build must not read is refused with the way "
    "back") {
  const Status st =
      CheckFormatStamp(Stamp(kFormatGeneration + 1, kFormatGeneration + 1), "the pin directory /p");
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(st.message(),
             Catch::StartsWith("the pin directory /p was written by netqosd 9.9.9+abc"));
  CHECK_THAT(st.message(), Catch::Contains("generation " + std::to_string(kFormatGeneration + 1)));
  CHECK_THAT(st.message(), Catch::Contains("this netqosd " + ReleaseName()));
  CHECK_THAT(st.message(), Catch::Contains("`netqosd --uninstall` with netqosd 9.9.9+abc"));
  // Without a release name the message still says what to do.
  const Status anonymous =
      CheckFormatStamp(Stamp(kFormatGeneration + 1, kFormatGeneration + 1, ""), "d");
  CHECK_THAT(anonymous.message(), Catch::Contains("written by a newer netqosd"));
}

}  // namespace
}  // namespace netqos
