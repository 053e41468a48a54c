#include "engine/system.h"

#include <sched.h>
#include <sys/utsname.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "common/fatal.h"
#include "ggml.h"
#include "llama.h"

namespace hd::engine {

static std::mutex g_log_mutex;
static std::string g_last_error;
static std::string g_previous_error;  // the error line before it
static std::atomic<size_t> g_copy_buffers{0};

// llama.cpp names every buffer a load puts weights in ("load_tensors:   CPU_REPACK model buffer
// size =   204.75 MiB"). Only a *_Mapped one (CPU_Mapped; Metal's MTL0_Mapped) is the file's
// own mapping; any other holds copies.
static void count_copy_buffer(const char* text) {
  const char* at = std::strstr(text, " model buffer size = ");
  if (at == nullptr) return;
  const char* name = at;
  while (name > text && name[-1] != ' ') --name;
  const std::string buffer(name, at);
  const bool mapped = buffer.size() >= 7 && buffer.compare(buffer.size() - 7, 7, "_Mapped") == 0;
  if (!mapped && std::strtod(at + std::strlen(" model buffer size = "), nullptr) > 0) {
    ++g_copy_buffers;
  }
}

// The lines llama_init_from_model logs where it settles flash attention (llama-context.cpp at
// the pinned commit): resolve_fused_ops for -fa auto, the Grok override, a quantized V cache.
static thread_local bool t_watch_fa = false;
static thread_local std::string t_fa_logged;

static void note_flash_attn(const char* text) {
  if (!t_watch_fa) return;
  if (std::strstr(text, "Flash Attention enabled") != nullptr ||
      std::strstr(text, "enabling flash_attn since it is required") != nullptr) {
    t_fa_logged = "on";
  } else if (std::strstr(text, "Flash Attention not supported, set to disabled") != nullptr ||
             std::strstr(text, "flash_attn is not compatible with") != nullptr) {
    t_fa_logged = "off";
  }
}

FlashAttnLogWatch::FlashAttnLogWatch() {
  t_watch_fa = true;
  t_fa_logged.clear();
}

FlashAttnLogWatch::~FlashAttnLogWatch() { t_watch_fa = false; }

std::string FlashAttnLogWatch::logged() const { return t_fa_logged; }

static void log_filter(ggml_log_level level, const char* text, void*) {
  static const bool verbose = std::getenv("HETERODYNE_LLAMA_LOG") != nullptr;
  if (verbose) fputs(text, stderr);
  count_copy_buffer(text);
  note_flash_attn(text);
  if (level == GGML_LOG_LEVEL_ERROR) {
    // The last two error lines: llama.cpp says why ("unknown model architecture: 'x'") the line
    // before it says that it failed ("failed to load model"). Older ones are dropped.
    std::string line = text;
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    if (line.empty()) return;
    std::lock_guard lock(g_log_mutex);
    g_previous_error = std::move(g_last_error);
    g_last_error = std::move(line);
  }
}

void system_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    llama_log_set(log_filter, nullptr);
    llama_backend_init();
  });
}

static void on_ggml_abort(const char* message) {
  // "<file>:<line>: GGML_ASSERT(x) failed": the assertion is the part users can search for.
  std::string line = "llama.cpp stopped on a failed internal check (";
  line += message;
  line += "); the model file may be malformed";
  fatal::exit_with(line.c_str());
}

void install_abort_handler() {
  ::setenv("GGML_NO_BACKTRACE", "1", 1);  // no gdb attached to print on stdout
  ggml_set_abort_callback(on_ggml_abort);
}

size_t weight_copy_buffers_logged() { return g_copy_buffers.load(); }

std::mutex& model_load_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::string last_llama_error() {
  std::lock_guard lock(g_log_mutex);
  std::string e;
  e.swap(g_last_error);
  if (!g_previous_error.empty() && !e.empty()) e = g_previous_error + "; " + e;
  g_previous_error.clear();
  return e;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string cpu_features() {
  system_init();
  std::string s = llama_print_system_info();
  while (!s.empty() && (s.back() == ' ' || s.back() == '|')) s.pop_back();
  return s;
}

std::string os_description() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

}  // namespace hd::engine
