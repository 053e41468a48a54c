#include "common/fatal.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

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

void on_sigbus(int) {
  // The mapping that faulted is one of the model files: the one now shorter than when it was
  // mapped is the one that was cut.
  for (const Slot& m : g_mapped) {
    if (!m.used) continue;
    struct stat st {};
    if (::stat(m.path, &st) == 0 && st.st_size < m.size) {
      static char line[kPathMax + 256];
      char now[24], was[24];
      line[0] = '\0';
      std::strcat(line, "'");
      std::strncat(line, m.path, kPathMax);
      std::strcat(line, "' was cut short while it was in use (SIGBUS): it has ");
      std::strcat(line, decimal(static_cast<long long>(st.st_size), now));
      std::strcat(line, " bytes, it had ");
      std::strcat(line, decimal(m.size, was));
      exit_with(line);
    }
  }
  exit_with("a file mapped in memory was cut short or removed while it was in use (SIGBUS)");
}

}  // namespace

void add_temporary(const std::string& path) {
  std::lock_guard lock(g_mu);
  for (Slot& s : g_temporaries) {
    if (!s.used) {
      copy_into(s.path, kPathMax, path);
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
      s.used = 1;
      return;
    }
  }
}

void exit_with(const char* what) {
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

void install_sigbus_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_sigbus;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NODEFER;
  ::sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace hd::fatal
