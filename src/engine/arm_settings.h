// An arm's settings and their one field table. The config JSON (run/config), the worker's Open
// message (worker_protocol), the CLI flags (kinds/command_line/arm_flags), a sweep's setting names, floor's
// config, capture's manifest and length-curve's output all walk kArmFields, so a new setting
// is one member below and one line in the table. No llama.cpp header: the worker's wire format
// and every layer above share it.
#pragma once
#include <climits>
#include <string>
#include <tuple>
#include <vector>

namespace hd::engine {

// The settings, spelled as llama.cpp's flags spell them (-ctk -ctv -fa -ub -t -dev -ngl
// --rpc), plus the llama.cpp build the arm runs in.
struct ArmSettings {
  std::string model;
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  std::string flash_attn = "auto";  // on | off | auto
  int n_ubatch = 512;
  int n_threads = 0;  // 0: default_threads() (engine/threads.h)
  std::string device = "cpu";  // cpu, cuda0, vulkan0, … (llama.cpp's -dev, lower case)
  int n_gpu_layers = -1;       // -ngl for a device or RPC servers; negative: every layer
  std::vector<std::string> rpc;  // llama.cpp RPC servers (host:port) holding the layers
  // "" : this binary's llama.cpp, in this process. Otherwise a build spec (see worker_build.h):
  // the arm runs in a worker process linked against that build.
  std::string llama_build;
  // How llama-server would hold the measured text (docs/server.md, server_schedule.h): its
  // slots (n_seq_max), whether they share one KV cache, the slot the text occupies, how many
  // other slots decode in the same batches, which composition they take, the logical batch
  // (0: the whole chunk in one llama_decode), and what the prompt cache already held. The
  // defaults are a plain arm: one sequence, one batch.
  int slots = 1;
  std::string kv_unified = "off";  // on | off
  int slot = 0;
  int neighbours = 0;
  int neighbour_seed = 0;
  int n_batch = 0;
  std::string prompt_cache = "miss";  // miss | hit | prefix
  int cache_reuse = 0;  // llama-server's --cache-reuse: J > 0 shifts a reused part J cells back

  bool operator==(const ArmSettings&) const = default;
};

// What the layers above need to know of one setting to store, send and spell it.
struct ArmFieldInfo {
  // The name in config JSON, in capture's manifest and among a sweep's setting names.
  const char* key;
  // The flag's spellings without dashes or arm prefix, short first: "ctk,cache-type-k". A
  // short spelling of several letters is llama.cpp's single-dash form (-ctk); of one letter, a
  // short option of the shared flags only (-t; the arms' own are --a-t). "": no flag (the
  // model is each command's own option).
  const char* flags;
  // The flag's help, "{}" standing for whose setting it is ("both arms", "arm a only").
  const char* help;
  // In every file since the first format: a file without it is damaged. The others were added
  // later and read as the default when absent (files from before them ran on this binary's CPU).
  bool required = false;
  // Sent in the worker's Open. Not the llama.cpp build: the worker is that build.
  bool on_wire = true;
  // A flag's value is lower-cased (device names, as llama.cpp lists them).
  bool lower_case = false;
  // The smallest value a flag may give: 0 threads means "the default" inside, and a user who
  // types -t 0 made a mistake, not a request.
  int min_flag_value = INT_MIN;
  // How llama-server holds the text (server_schedule.h): a value other than the default makes
  // a server arm, and provenance spells it (server_flags).
  bool server = false;
};

template <class T>
struct ArmField {
  ArmFieldInfo info;
  T ArmSettings::*member;
  using Value = T;
};

// The order is stored: a sweep's setting names (and so its combination masks) and the Open
// message's body follow it. Append a new setting at the end.
inline constexpr auto kArmFields = std::make_tuple(
    ArmField<std::string>{{.key = "model", .flags = "", .help = "", .required = true},
                          &ArmSettings::model},
    ArmField<std::string>{{.key = "cache_type_k", .flags = "ctk,cache-type-k",
                           .help = "K cache type for {} (f16)", .required = true},
                          &ArmSettings::cache_type_k},
    ArmField<std::string>{{.key = "cache_type_v", .flags = "ctv,cache-type-v",
                           .help = "V cache type for {} (f16)", .required = true},
                          &ArmSettings::cache_type_v},
    ArmField<std::string>{{.key = "flash_attn", .flags = "fa,flash-attn",
                           .help = "flash attention on|off|auto for {} (auto)", .required = true},
                          &ArmSettings::flash_attn},
    ArmField<int>{{.key = "n_ubatch", .flags = "ub,ubatch-size",
                   .help = "physical batch size for {} (512)", .required = true},
                  &ArmSettings::n_ubatch},
    ArmField<int>{{.key = "n_threads", .flags = "t,threads",
                   .help = "threads for {} (default: the cores not busy with other work as the run starts)", .required = true,
                   .min_flag_value = 1},
                  &ArmSettings::n_threads},
    ArmField<std::string>{{.key = "device", .flags = "dev,device",
                           .help = "device for {}: cpu, cuda0, vulkan0, … (cpu)",
                           .lower_case = true},
                          &ArmSettings::device},
    ArmField<int>{{.key = "n_gpu_layers", .flags = "ngl,n-gpu-layers",
                   .help = "layers on the device or RPC servers for {} (all)"},
                  &ArmSettings::n_gpu_layers},
    ArmField<std::vector<std::string>>{
        {.key = "rpc", .flags = "rpc",
         .help = "llama.cpp RPC servers host:port[,host:port…] holding the layers of {}"},
        &ArmSettings::rpc},
    ArmField<std::string>{
        {.key = "llama_build", .flags = "llama-build",
         .help = "another llama.cpp for {}, run in a worker process: pinned[,OPT=V…], a "
                 "llama.cpp checkout, npm:node-llama-cpp@X.Y.Z or a heterodyne-worker executable",
         .on_wire = false},
        &ArmSettings::llama_build},
    ArmField<int>{{.key = "slots", .flags = "np,slots",
                   .help = "llama-server slots (-np, n_seq_max) for {} (1)", .min_flag_value = 1, .server = true},
                  &ArmSettings::slots},
    ArmField<std::string>{{.key = "kv_unified", .flags = "kvu,kv-unified",
                           .help = "one KV cache shared by the slots of {}: on|off (off)",
                           .lower_case = true, .server = true},
                          &ArmSettings::kv_unified},
    ArmField<int>{{.key = "slot", .flags = "slot",
                   .help = "the slot the measured text occupies for {} (0)", .min_flag_value = 0, .server = true},
                  &ArmSettings::slot},
    ArmField<int>{{.key = "neighbours", .flags = "neighbours",
                   .help = "other slots decoding in the same batches for {} (0)",
                   .min_flag_value = 0, .server = true},
                  &ArmSettings::neighbours},
    ArmField<int>{{.key = "neighbour_seed", .flags = "neighbour-seed",
                   .help = "neighbours' composition for {}: 0 all reading chunk-long prompts, "
                           "others drawn (0)",
                   .min_flag_value = 0, .server = true},
                  &ArmSettings::neighbour_seed},
    ArmField<int>{{.key = "n_batch", .flags = "batch-size,batch",
                   .help = "logical batch (llama-server's -b) for {} (the whole chunk)",
                   .min_flag_value = 1, .server = true},
                  &ArmSettings::n_batch},
    ArmField<std::string>{{.key = "prompt_cache", .flags = "prompt-cache",
                           .help = "prompt cache for {}: miss, hit (the same prompt again) or "
                                   "prefix (the first half cached) (miss)",
                           .lower_case = true, .server = true},
                          &ArmSettings::prompt_cache},
    ArmField<int>{{.key = "cache_reuse", .flags = "cache-reuse",
                   .help = "llama-server's KV shift for {}: a reused quarter of the chunk moved "
                           "back J cells (seq_rm + seq_add) (0: off)",
                   .min_flag_value = 0, .server = true},
                  &ArmSettings::cache_reuse});

// Calls f(field) for every entry of kArmFields, in order; f reads or writes s.*field.member of
// as many settings as it likes (one arm, two, the CLI's given values).
template <class F>
constexpr void for_each_arm_field(F&& f) {
  std::apply([&](const auto&... field) { (f(field), ...); }, kArmFields);
}

// The keys in table order: a sweep's setting names.
inline std::vector<std::string> arm_field_keys() {
  std::vector<std::string> keys;
  for_each_arm_field([&](const auto& field) { keys.emplace_back(field.info.key); });
  return keys;
}

}  // namespace hd::engine
