// FUZZ_CHECK: the invariant assertion of the fuzz targets. A violated invariant aborts, which
// libFuzzer reports as a crash and saves the input (scripts/fuzz.sh keeps it).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                               \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: invariant violated: %s (%s)\n", __FILE__, __LINE__, what, \
                   #cond);                                                                   \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)
