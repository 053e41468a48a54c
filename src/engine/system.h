// Process-wide llama.cpp set-up and the facts about this machine and build that provenance
// records.
#pragma once
#include <mutex>
#include <string>

namespace hd::engine {

// Initialises llama.cpp's backends once and installs a log filter: llama.cpp's chatter is
// hidden (HETERODYNE_LLAMA_LOG=1 shows it), its last error line is kept for our messages.
void system_init();
std::string last_llama_error();  // "" when llama.cpp logged no error since the last call
// How many weight buffers other than the file's mapping (CPU_REPACK, a GPU's) llama.cpp's loads
// have reported so far: a load that raised it copied tensors out of the mapping.
size_t weight_copy_buffers_logged();
// Held around every llama_model_load_from_file: the count above is process-wide, so a load that
// reads it before and after must not overlap another (a training load copies every tensor).
std::mutex& model_load_mutex();

// What llama.cpp decided about flash attention while this thread created a context: it
// resolves -fa auto per model and device, and turns it off for Grok whatever was asked; it says
// so only in its log. Held around llama_init_from_model; logged() is "on", "off" or "" where
// the log said nothing of it. Watching stops when it goes, also when the call throws.
class FlashAttnLogWatch {
 public:
  FlashAttnLogWatch();
  ~FlashAttnLogWatch();
  FlashAttnLogWatch(const FlashAttnLogWatch&) = delete;
  FlashAttnLogWatch& operator=(const FlashAttnLogWatch&) = delete;
  std::string logged() const;
};

// A failed GGML_ASSERT (a malformed model can reach one) becomes a fatal exit (common/fatal.h):
// one line naming the assertion and what was being done, no gdb backtrace, temporaries removed,
// exit 1. For the CLI; the worker keeps ggml's own abort, which its parent reports.
void install_abort_handler();

std::string cpu_model();       // /proc/cpuinfo "model name"
std::string cpu_features();    // llama_print_system_info()
std::string os_description();  // uname

}  // namespace hd::engine
