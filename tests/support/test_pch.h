// The headers most test translation units include, precompiled once per build and reused by every
// Catch2 test executable (tests/CMakeLists.txt, netqos_test_pch): catch.hpp alone is about a
// second of parsing in each of some 150 files. Each test file still includes what it uses; this
// list only decides what is parsed ahead. Only headers that are stable and not ours: a header of
// userspace/ here would rebuild every test on each of its edits.
#pragma once

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
