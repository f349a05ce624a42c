// Force-included (proto/CMakeLists.txt) before NRI's generated api.pb.h, in the generated code
// and in everything that links it. NRI's enum LinuxSchedulerPolicy names its values SCHED_OTHER,
// SCHED_FIFO, ..., which glibc's <sched.h> (reached through protobuf's own headers) defines as
// macros, with other numbers: the generated enum would not compile. <sched.h> is included here
// once, its include guard keeps it from coming back, and the macros are removed, so these names
// mean NRI's enum values in these translation units.
#pragma once

#include <sched.h>

#undef SCHED_OTHER
#undef SCHED_FIFO
#undef SCHED_RR
#undef SCHED_BATCH
#undef SCHED_ISO
#undef SCHED_IDLE
#undef SCHED_DEADLINE
