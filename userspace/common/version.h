// The netqos release version (CMake's project VERSION), for --version, GetStatus and netqosctl.
#pragma once

namespace netqos {

const char* Version();

}  // namespace netqos
