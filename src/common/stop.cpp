#include "common/stop.h"

#include <atomic>

namespace hd {

static std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

void request_stop() { g_stop = true; }
bool stop_requested() { return g_stop; }

}  // namespace hd
