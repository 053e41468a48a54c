// How llama-server feeds a prompt to llama_decode, for an arm with server settings
// (arm_settings.h: slots, kv_unified, slot, neighbours, neighbour_seed, n_batch, prompt_cache).
//
// The pinned server (tools/server/server-context.cpp, update_slots) builds each llama_decode's
// batch the same way: every generating slot adds its one sampled token (seq_id = its slot, with
// logits), then the slots still reading their prompts add prompt tokens in slot order until the
// batch holds n_batch tokens. A prompt longer than what is left spans several decodes. On a
// prompt-cache hit of the whole prompt the slot keeps all but the last token and decodes that
// one again (it needs its logits), often alone.
//
// The measured text is one slot's prompt. Its tokens get logits from first_output on (scored
// teacher-forced, as a plain arm's). The neighbours are the other slots: their texts are the
// measured chunk read from another offset (real text, no vocabulary guess), their lengths and
// states (reading a prompt, or generating after one) come from neighbour_seed. No llama.cpp
// header: the split rules below are the pinned llama.cpp's, proven by the tests (a neighbour
// batch with unified KV and FA off reproduces every captured residual row bit for bit).
#pragma once
#include <cstdint>
#include <climits>
#include <span>
#include <string>
#include <vector>

#include "engine/arm_settings.h"

namespace hd::engine {

// Whether the settings leave the plain path (one sequence, one llama_decode per chunk).
bool is_server_arm(const ArmSettings& s);
// The server settings that differ from a plain arm's, as flags: "--slots 4 --kv-unified on";
// "" for a plain arm. Provenance stores it and show prints it.
std::string server_flags(const ArmSettings& s);
// llama-server's defaults at the pin (tools/server, common/common.h): -np auto is 4 slots with
// unified KV, -b 2048, -ub 512; the prompt cache is on (a request misses until it repeats).
void apply_server_preset(ArmSettings& s);

// The plain arm: the settings without any server setting (-np 1, no prompt cache).
ArmSettings plain_arm(const ArmSettings& s);
// Trial t's composition of a server arm (server-floor, generate --trials): neighbour seed S + t,
// slot (K + t) mod slots.
ArmSettings server_trial(const ArmSettings& s, int t);

// Refuses server settings that no llama-server runs: a slot past the slots, neighbours without
// room for them, a context the model's training length cannot split into slots of a chunk.
// Throws InputError.
void check_server_settings(const ArmSettings& s, int n_ctx, int n_ctx_train);

// The KV cells each sequence may use: the measured chunk's context, and room for a neighbour to
// read a chunk-long prompt and generate after it.
int server_cells_per_slot(const ArmSettings& s, int n_ctx);

struct BatchToken {
  int32_t token = 0;
  int32_t pos = 0;
  int32_t seq = 0;
  bool output = false;
  int32_t measured = -1;  // the decode's row (the measured text); -1 for a neighbour's token
};
using ServerBatch = std::vector<BatchToken>;

// The slots around the measured one, carried from a chunk to its decode steps.
class ServerComposer {
 public:
  ServerComposer(const ArmSettings& s, int cells_per_slot);

  // Starts a chunk: the neighbours' texts are `tokens` read from their offsets. Generating
  // neighbours first decode the prompts they answered (one batch, as one earlier update).
  void start(std::span<const int32_t> tokens, std::vector<ServerBatch>& out);
  // The decodes that feed the decode's tokens [begin, end) (tokens[i] at position pos0 + i, row
  // i of the decode), wanting logits from row first_output on, after the decodes planned.
  // Tokens from measured_end on are fed as the server would (the last with logits) but are not
  // the measured ones: a request whose last token is decoded again (a prompt-cache hit).
  void feed(std::span<const int32_t> tokens, int32_t begin, int32_t end, int32_t pos0,
            int32_t first_output, std::vector<ServerBatch>& out, int32_t measured_end = INT32_MAX);

 private:
  struct Neighbour {
    int32_t seq = 0;
    size_t offset = 0;   // where its text starts in the chunk
    int32_t prompt = 0;  // its prompt's length
    int32_t pos = 0;     // its next position (tokens held in its cells)
    bool generating = false;
  };
  int32_t next_token(const Neighbour& n) const;
  void add_generated_tokens(ServerBatch& b);

  ArmSettings settings_;
  int cells_per_slot_ = 0;
  std::vector<int32_t> text_;
  std::vector<Neighbour> neighbours_;
};

// The ubatches llama.cpp splits one batch into (src/llama-batch.cpp at the pin), each the batch
// indices in row order: with one KV stream (one slot, or unified KV) the batch in order,
// n_ubatch at a time (split_simple); with a stream per slot, split_equal(sequential): the
// next consecutive run of sequence ids, the same number of tokens of each, at most n_ubatch.
std::vector<std::vector<int32_t>> ubatch_split(const ServerBatch& b, int n_ubatch,
                                               bool stream_per_slot);

}  // namespace hd::engine
