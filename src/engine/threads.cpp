#include "engine/threads.h"

#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

namespace hd::engine {
namespace {

constexpr int kMaxThreads = 16;

struct CpuTimes {
  unsigned long long idle = 0, total = 0;
};

// /proc/stat's per-CPU lines ("cpu3 user nice system idle iowait irq softirq steal …"), by CPU.
std::map<int, CpuTimes> cpu_times() {
  std::map<int, CpuTimes> out;
  std::ifstream in("/proc/stat");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3])))
      continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    fields >> cpu;
    unsigned long long v = 0;
    CpuTimes t;
    for (int i = 0; fields >> v; ++i) {
      if (i == 3 || i == 4) t.idle += v;  // idle, iowait
      if (i < 8) t.total += v;            // guest time is counted in user already
    }
    out[cpu] = t;
  }
  return out;
}

// The CPUs of the affinity mask, or every CPU where it cannot be read.
std::optional<cpu_set_t> affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return set;
  return std::nullopt;
}

// CPUs of `set` that other processes kept busy over 50 ms, rounded: each CPU's share in [0, 1]
// (a counter that went backwards, as iowait may, counts as idle).
int busy_cpus(const cpu_set_t& set) {
  const auto before = cpu_times();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto after = cpu_times();
  double busy = 0;
  for (const auto& [cpu, t] : after) {
    const auto was = before.find(cpu);
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set) || was == before.end()) continue;
    if (t.total <= was->second.total || t.idle < was->second.idle) continue;
    const double total = static_cast<double>(t.total - was->second.total);
    const double idle = static_cast<double>(t.idle - was->second.idle);
    busy += std::clamp(1.0 - idle / total, 0.0, 1.0);
  }
  return static_cast<int>(std::lround(busy));
}

constexpr const char* kEveryCpu = "HETERODYNE_THREADS_EVERY_CPU";

// The CPUs this process may run on: its affinity mask's, or the machine's where that cannot be
// read.
int mask_cpus() {
  if (const auto set = affinity()) return CPU_COUNT(&*set);
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 4 : static_cast<int>(n);
}

// Measured once: the first arm's ask, before this process computes anything itself.
int busy_at_start() {
  static const int busy = [] {
    const auto set = affinity();
    return set && CPU_COUNT(&*set) > 1 ? busy_cpus(*set) : 0;
  }();
  return busy;
}

}  // namespace

int allowed_cpus() { return std::min(mask_cpus(), kMaxThreads); }

int default_threads() {
  if (std::getenv(kEveryCpu) != nullptr) return allowed_cpus();
  // Of every CPU the mask allows, not only the first 16: on a large machine with some busy, the
  // idle ones are still many.
  return std::clamp(mask_cpus() - busy_at_start(), 1, kMaxThreads);
}

void use_every_allowed_cpu() { setenv(kEveryCpu, "1", 1); }

std::string default_threads_note() {
  const int threads = default_threads(), mask = mask_cpus(), all = allowed_cpus();
  if (threads >= all) return "";
  return "threads: " + std::to_string(threads) + " (of the " + std::to_string(mask) +
         " CPUs this process may use, " + std::to_string(busy_at_start()) +
         " busy with other work as the run started; -t " + std::to_string(all) + " uses " +
         (mask > kMaxThreads ? "16" : "them all") + ")";
}

void wait_passively(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) {
    // Run again from /proc/self/exe, the kernel names the process "exe": its own name back, for
    // ps, top and pkill.
    if (argv[0] != nullptr) {
      const std::string name = std::filesystem::path(argv[0]).filename().string().substr(0, 15);
      if (!name.empty()) prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
    }
    return;
  }
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not run again (no /proc): on as it is, libgomp already loaded with its default policy.
}

}  // namespace hd::engine
