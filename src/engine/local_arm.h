// An arm evaluated in this process by the llama.cpp this binary links: one llama_context on the
// model, its weights on the CPU or where the settings place them (a GPU, RPC servers).
#pragma once
#include <functional>
#include <memory>

#include "engine/arm.h"
#include "engine/server_schedule.h"

struct ggml_tensor;
struct llama_context;

namespace hd::engine {

class LocalArm : public ArmBackend {
 public:
  // Loads (or shares) the model's weights where the settings place them.
  LocalArm(std::shared_ptr<Model> model, const ArmSettings& settings, int n_ctx);
  ~LocalArm() override;

  void decode(const DecodeInput& in, Hook* hook, std::vector<float>& logits) override;
  // A plain decode's logits where llama.cpp wrote them, checked as decode checks a copy.
  std::span<const float> decode_view(const DecodeInput& in, Hook* hook) override;
  int n_threads() const override { return n_threads_; }
  nlohmann::json facts() const override;
  // false for a model without a KV cache: every batch is one ubatch, and there are no steps.
  bool splits_batches() const override;
  // A plain arm whose context's ubatch holds `ubatch` tokens: a split pass needs no context of
  // its own (DecodeInput::split).
  bool splits_in_place(int ubatch) const override;
  // Frees the context; the next decode makes it again (a server arm's stays: its slots' cache).
  void release_context() override;
  void share_vocabulary() override { model_->share_vocabulary(weights_); }

 private:
  void open_context();
  // The decode's rows first..first + count - 1 of logits, copied in order into view_.
  std::span<const float> gather(int32_t first, int32_t count);
  void hand_piece(int32_t pos, int32_t n_rows, int32_t lo, const float* first_row, bool in_order,
                  const DecodeInput::PieceFn& fn);
  void check_input(const DecodeInput& in) const;
  std::span<const float> decode_into(const DecodeInput& in, Hook* hook, std::vector<float>* copy);
  std::span<const float> end_decode(const DecodeInput& in, int32_t rc, const std::string& failure,
                                    const float* rows, size_t n_values, std::vector<float>* copy);
  int32_t decode_piece(const DecodeInput& in, int32_t lo, int32_t hi);
  static bool eval_callback(ggml_tensor* t, bool ask, void* self);
  // A server arm's decode (local_arm_server.cpp): the measured tokens among the other slots'.
  void decode_server(const DecodeInput& in, Hook* hook, std::vector<float>& logits);
  void run_server_batch(const ServerBatch& b, int first_output, std::vector<float>& logits);
  // One step of a server arm's decode: what is done to the cache first, then its batches.
  struct Phase {
    std::vector<ServerBatch> batches;
    std::function<void()> before;
  };
  std::vector<Phase> plan_phases(const DecodeInput& in);
  std::string server_refusal() const;

  std::shared_ptr<Model> model_;
  std::shared_ptr<Weights> weights_;
  ArmSettings settings_;
  int n_ctx_ = 0;
  int n_threads_ = 0;
  int n_ubatch_ = 0;  // the context's
  // "on" or "off": what llama.cpp ran (-fa auto resolved); "" where its log did not say.
  std::string flash_attn_resolved_;
  llama_context* ctx_ = nullptr;  // null after release_context, until the next decode
  bool has_memory_ = true;  // llama_get_memory: false for a model without a KV cache
  bool opened_ = false;     // a context was made once: a later failure is not the settings'
  Hook* hook_ = nullptr;
  std::unique_ptr<ServerComposer> composer_;  // a server arm's other slots; null for a plain arm
};

// The ggml_type of a KV cache type name (GGML_TYPE_COUNT when unknown), as an int so this
// header needs no ggml.h.
int cache_ggml_type(const std::string& name);

// "'m.gguf' keeps no KV cache, so llama.cpp evaluates a batch in one piece": the start of every
// refusal that follows from it.
std::string no_split_reason(const std::string& model);

// The placement the settings ask for (resolving device names, registering RPC servers).
Placement placement_of(const ArmSettings& s);

}  // namespace hd::engine
