#include "engine/threads.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdlib>
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

// CPUs of `set` that other processes kept busy over 50 ms, rounded.
int busy_cpus(const cpu_set_t& set) {
  const auto before = cpu_times();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto after = cpu_times();
  double busy = 0;
  for (const auto& [cpu, t] : after) {
    const auto was = before.find(cpu);
    if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set) || was == before.end()) continue;
    const double total = static_cast<double>(t.total - was->second.total);
    if (total > 0) busy += 1.0 - static_cast<double>(t.idle - was->second.idle) / total;
  }
  return static_cast<int>(std::lround(busy));
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

int allowed_cpus() {
  if (const auto set = affinity()) return std::min(CPU_COUNT(&*set), kMaxThreads);
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 4 : static_cast<int>(std::min(n, static_cast<unsigned>(kMaxThreads)));
}

int default_threads() { return std::max(1, allowed_cpus() - busy_at_start()); }

std::string default_threads_note() {
  const int allowed = allowed_cpus(), threads = default_threads();
  if (threads >= allowed) return "";
  return "threads: " + std::to_string(threads) + " of " + std::to_string(allowed) + " CPUs (" +
         std::to_string(allowed - threads) + " busy with other work as the run started; -t " +
         std::to_string(allowed) + " uses them all)";
}

void wait_passively(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not run again (no /proc): on as it is, libgomp already loaded with its default policy.
}

}  // namespace hd::engine
