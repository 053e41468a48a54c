#include "common/fatal.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace hd::fatal {
namespace {

constexpr size_t kPathMax = 4096;
constexpr int kSlots = 16;

struct Slot {
  char path[kPathMax];
  long long size;  // for mapped files
  volatile sig_atomic_t used;
};

Slot g_temporaries[kSlots];
Slot g_mapped[kSlots];
// Several threads can fault at once (every compute thread reads the cut file): the first one
// writes the line and exits, the others wait for the exit.
std::atomic_flag g_exiting = ATOMIC_FLAG_INIT;

[[noreturn]] void wait_for_the_exit() {
  for (;;) ::pause();
}

char g_activity[kPathMax + 64];
char g_hint[kPathMax + 256];
std::mutex g_mu;  // writers only; the exit reads without it (it never returns)

void copy_into(char* dst, size_t cap, const std::string& s) {
  const size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

void put(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// Appends `s` to the string of length `at` in `buf` (capacity `cap`), cut to fit; returns the
// new length. (strcat without its overflow.)
size_t append(char* buf, size_t cap, size_t at, const char* s) {
  while (*s != '\0' && at + 1 < cap) buf[at++] = *s++;
  buf[at] = '\0';
  return at;
}

// Decimal digits of v into buf (async-signal-safe: no printf).
const char* decimal(long long v, char (&buf)[24]) {
  char* p = buf + sizeof buf - 1;
  *p = '\0';
  const bool negative = v < 0;
  unsigned long long u = negative ? 0ULL - static_cast<unsigned long long>(v)
                                  : static_cast<unsigned long long>(v);
  do {
    *--p = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u > 0);
  if (negative) *--p = '-';
  return p;
}

// The line, the temporaries removed, _exit(1): by the one thread that got there first.
[[noreturn]] void write_and_exit(const char* what) {
  put("heterodyne: error: ");
  put(what);
  if (g_activity[0] != '\0') {
    put(" (while ");
    put(g_activity);
    put(")");
  }
  if (g_hint[0] != '\0') {
    put("; ");
    put(g_hint);
  }
  put("\n");
  for (Slot& s : g_temporaries) {
    if (s.used) ::unlink(s.path);
  }
  ::_exit(1);
}

void on_sigbus(int) {
  if (g_exiting.test_and_set()) wait_for_the_exit();
  // The mapping that faulted is one of the model files: the one now shorter than when it was
  // mapped is the one that was cut.
  for (const Slot& m : g_mapped) {
    if (!m.used) continue;
    struct stat st {};
    if (::stat(m.path, &st) == 0 && st.st_size < m.size) {
      static char line[kPathMax + 256];
      char now[24], was[24];
      size_t at = 0;
      for (const char* part : {"'", static_cast<const char*>(m.path),
                               "' was cut short while it was in use (SIGBUS): it has ",
                               decimal(static_cast<long long>(st.st_size), now), " bytes, it had ",
                               decimal(m.size, was)}) {
        at = append(line, sizeof line, at, part);
      }
      write_and_exit(line);
    }
  }
  write_and_exit("a file mapped in memory was cut short or removed while it was in use (SIGBUS)");
}

}  // namespace

void add_temporary(const std::string& path) {
  std::lock_guard lock(g_mu);
  for (Slot& s : g_temporaries) {
    if (!s.used) {
      copy_into(s.path, kPathMax, path);
      std::atomic_signal_fence(std::memory_order_release);  // the path before the flag
      s.used = 1;
      return;
    }
  }
}

void remove_temporary(const std::string& path) {
  std::lock_guard lock(g_mu);
  for (Slot& s : g_temporaries) {
    if (s.used && path == s.path) {
      s.used = 0;
      return;
    }
  }
}

void set_activity(const std::string& activity) {
  std::lock_guard lock(g_mu);
  copy_into(g_activity, sizeof g_activity, activity);
}

void set_resume_hint(const std::string& hint) {
  std::lock_guard lock(g_mu);
  copy_into(g_hint, sizeof g_hint, hint);
}

void add_mapped_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  std::lock_guard lock(g_mu);
  for (Slot& s : g_mapped) {
    if (s.used && path == s.path) return;
  }
  for (Slot& s : g_mapped) {
    if (!s.used) {
      copy_into(s.path, kPathMax, path);
      s.size = static_cast<long long>(st.st_size);
      std::atomic_signal_fence(std::memory_order_release);  // the path before the flag
      s.used = 1;
      return;
    }
  }
}

void exit_with(const char* what) {
  if (g_exiting.test_and_set()) wait_for_the_exit();
  write_and_exit(what);
}


void install_sigbus_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_sigbus;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // SIGBUS stays blocked in the handler's thread while it writes
  ::sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace hd::fatal
