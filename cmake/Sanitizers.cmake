# Sanitizers apply to every userspace target when NETQOS_SANITIZE is set (BPF objects never see them:
# they are built by a custom command, not through the compile options).
#   -DNETQOS_SANITIZE="address;undefined"   ASan + UBSan (+ LeakSanitizer), scripts/test.sh stage asan
#   -DNETQOS_SANITIZE=thread                ThreadSanitizer, scripts/test.sh stage tsan
# Run-time options (halt on error, leak checks, suppressions) are set by
# tests/sanitizers/run_sanitized.sh, which CTest puts in front of every test executable.
if(NETQOS_SANITIZE)
  if("thread" IN_LIST NETQOS_SANITIZE AND "address" IN_LIST NETQOS_SANITIZE)
    message(FATAL_ERROR "NETQOS_SANITIZE: thread and address cannot be combined")
  endif()
  string(REPLACE ";" "," _netqos_san "${NETQOS_SANITIZE}")
  add_compile_options(-fsanitize=${_netqos_san} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_netqos_san})
  # GCC's -Wmaybe-uninitialized misfires on instrumented code (inside libstdc++'s <regex>, which
  # ctl/cgroup_explain.cc and the tests' Prometheus parser use); builds without sanitizers keep it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
  if("undefined" IN_LIST NETQOS_SANITIZE)
    # Without this UBSan prints a finding and carries on, and the test still passes.
    add_compile_options(-fno-sanitize-recover=undefined)
    add_link_options(-fno-sanitize-recover=undefined)
    if("address" IN_LIST NETQOS_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      # GCC's libubsan, next to libasan, writes its reports to stderr whatever log_path says, and
      # a daemon's stderr is a log file the test may never read. Trapping instead turns a finding
      # into SIGILL, which ASan (handle_sigill=1, set by run_sanitized.sh) reports with the
      # offending line's stack into log_path like any other error.
      add_compile_options(-fsanitize-undefined-trap-on-error)
    endif()
  endif()
endif()

# libFuzzer (NETQOS_FUZZ=ON, clang only; scripts/fuzz.sh): the product's objects (proto/,
# userspace/) and the targets in fuzz/ get the coverage instrumentation libFuzzer steers by, each
# of those directories through netqos_fuzz_coverage(); only the executables in fuzz/ link its
# driver. The tests and benchmarks that share such a build (scripts/test.sh's asan build also
# makes the fuzz targets) are left uninstrumented: they would compile and run slower for nothing.
if(NETQOS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "NETQOS_FUZZ needs clang: -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
endif()
# A macro: add_compile_options must act on the calling directory (and the ones it adds after).
macro(netqos_fuzz_coverage)
  if(NETQOS_FUZZ)
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
endmacro()
