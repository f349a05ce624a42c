// ErrnoStatus: one mapping from errno to a Status, keeping the errno in the message.
#include "common/errno_status.h"

#include <catch2/catch.hpp>
#include <cerrno>

namespace netqos {
namespace {

TEST_CASE("errno status: the message names the call, the error and its number") {
  Status st = ErrnoStatus("setns(/run/netns/x)", EINVAL);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message() == "setns(/run/netns/x): Invalid argument (errno 22)");
  // libbpf hands back negative errnos.
  CHECK(ErrnoStatus("bpf_obj_get(/sys/fs/bpf/x)", -ENOENT).message() ==
        "bpf_obj_get(/sys/fs/bpf/x): No such file or directory (errno 2)");
}

TEST_CASE("errno status: codes callers branch on") {
  CHECK(ErrnoCode(ENOENT) == StatusCode::kNotFound);
  CHECK(ErrnoCode(-ENOENT) == StatusCode::kNotFound);
  CHECK(ErrnoCode(EPERM) == StatusCode::kPermissionDenied);
  CHECK(ErrnoCode(EACCES) == StatusCode::kPermissionDenied);
  CHECK(ErrnoCode(ENOSPC) == StatusCode::kResourceExhausted);
  CHECK(ErrnoCode(E2BIG) == StatusCode::kResourceExhausted);
  CHECK(ErrnoCode(ENOMEM) == StatusCode::kResourceExhausted);
  CHECK(ErrnoCode(ENOTDIR) == StatusCode::kInvalidArgument);
  CHECK(ErrnoCode(EBUSY) == StatusCode::kUnavailable);
  CHECK(ErrnoCode(EAGAIN) == StatusCode::kUnavailable);
  CHECK(ErrnoCode(EIO) == StatusCode::kInternal);
}

}  // namespace
}  // namespace netqos
