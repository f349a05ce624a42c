#include "common/format_stamp.h"

#include "common/version.h"

namespace netqos {

FormatStamp OwnFormatStamp() {
  FormatStamp s;
  s.generation = kFormatGeneration;
  s.min_reader = kFormatMinReader;
  s.release = ReleaseName();
  return s;
}

Status CheckFormatStamp(const FormatStamp& found, const std::string& where) {
  if (found.min_reader <= kFormatGeneration) return Status::Ok();
  const std::string writer = found.release.empty() ? "a newer netqosd" : "netqosd " + found.release;
  return FailedPrecondition(
      where + " was written by " + writer + " (format generation " +
      std::to_string(found.generation) + ", readable from generation " +
      std::to_string(found.min_reader) + " on); this netqosd " + ReleaseName() + " is generation " +
      std::to_string(kFormatGeneration) +
      " and would misread it, so it touches nothing. To go back to this release, run `netqosd "
      "--uninstall` with " +
      writer +
      " first (it removes its programs and pins and folds the journal), then start this one; "
      "or keep running " +
      writer + " (docs/upgrades.md)");
}

}  // namespace netqos
