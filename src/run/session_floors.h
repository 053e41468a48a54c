// The pieces a diff's Session (run/session.h) is made of, besides its two arms: an arm with the
// buffers it reuses chunk after chunk, and the floor arms.
//
// The floor: A and B again, each re-split into other ubatches by the same rule from its own
// ubatch (run/config.h floor_arm): B's kernels (a quantized matmul, flash attention) can be
// split-sensitive where A's are bitwise stable, so a floor of A alone misses B's split noise.
// Where both arms have a second split, chunk c runs at split c % 2 (the floor of one split alone
// can be bitwise where another's is not).
//
// A floor arm runs in its arm's own context where it can (Arm::run_split: the same bits as a
// context of the floor's ubatch, tests/test_split_in_place.cpp): a second context costs its KV
// cache, compute and output buffers, 440 MiB for a 3B model of a 128k vocabulary at chunks of
// 512. Elsewhere (a worker or server arm, a --floor-ub above the arm's ubatch) it has a context
// of its own, made anew when the split changes, one per arm at a time.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/arm.h"
#include "run/config.h"

namespace hd::run {

// An arm with the hook and buffers it reuses chunk after chunk (no per-chunk allocations).
struct ArmRun {
  std::unique_ptr<engine::Arm> arm;  // its own context; null for a split in another's
  engine::Arm* host = nullptr;       // a floor split in this arm's context (run_split)
  int split = 0;                     // with a host: the ubatch
  engine::Hook hook;
  std::vector<float> logits;  // positions first_output..n-1, where they are copied
  // The chunk's logits: `logits`, or (run_in_place) where the arm holds them.
  std::span<const float> out;

  bool present() const { return arm != nullptr || host != nullptr; }
  const engine::Arm& runner() const { return arm ? *arm : *host; }
  // The chunk's pass: its logits copied into `logits`, the hook's captures.
  void run(std::span<const int32_t> tokens, int first_output);
  // The same pass read where the arm's llama.cpp wrote it (Arm::run_chunk_view): valid until
  // the arm's context decodes again. A 3B model's 128k vocabulary at 512 positions is 250 MiB.
  void run_in_place(std::span<const int32_t> tokens, int first_output);
  // Copies `out` into `logits` before the arm's context decodes again (patched passes).
  void keep();
};

class FloorArms {
 public:
  // How the session makes an arm (its hook told what to capture); with a null model, the hook
  // alone (a floor split in its arm's context).
  using MakeRun =
      std::function<ArmRun(std::shared_ptr<engine::Model>, const engine::ArmSettings&)>;

  FloorArms() = default;  // a run without a floor
  // Both floor arms at the first split; the second split's ubatches where both arms have one
  // and --floor-ub does not name the one split.
  // `main_a` and `main_b` are the arms the floor re-splits, which outlive it.
  FloorArms(const DiffConfig& config, std::shared_ptr<engine::Model> model_a,
            std::shared_ptr<engine::Model> model_b, MakeRun make, engine::Arm& main_a,
            engine::Arm& main_b);

  bool present() const { return ub_a_[0] > 0; }
  // The arms at chunk `chunk`'s split, made anew when it is not the current one: RuntimeError
  // when they cannot be (never a chunk without its floor).
  void at_chunk(int chunk);
  ArmRun& a() { return a_; }
  ArmRun& b() { return b_; }
  const ArmRun& a() const { return a_; }
  const ArmRun& b() const { return b_; }
  // Swaps the two floor runs' hooks and logits: B′ runs in the buffers A′ filled once A′'s rows
  // are compared and nothing reads them again (no analyses), so one set of a 128k vocabulary's
  // logits and residual rows is alive (250 + 170 MiB for a 3B model at chunks of 512), not two.
  // Called again after B′, the buffers go back to A′ for the next chunk.
  void swap_buffers();
  // The ubatch of A's (B's) floor at split 0 or 1; 0 where there is none.
  int ubatch_a(int split) const { return ub_a_[split]; }
  int ubatch_b(int split) const { return ub_b_[split]; }
  // Where the floor's ubatches now (both arms, both splits) are not those a stored run recorded
  // (provenance floor_ubatch, _b, _2, _b_2), a one-line description naming the first.
  std::optional<std::string> change(const nlohmann::json& provenance) const;

 private:
  void use_split(int split);
  // The floor of `main` at split `split`: in its context where it can be, else an arm of its own.
  ArmRun make_floor(const std::shared_ptr<engine::Model>& model, const engine::ArmSettings& arm,
                    engine::Arm* main, int split);

  DiffConfig config_;
  std::shared_ptr<engine::Model> model_a_, model_b_;
  MakeRun make_;
  engine::Arm* main_a_ = nullptr;
  engine::Arm* main_b_ = nullptr;
  ArmRun a_, b_;
  int ub_a_[2] = {0, 0}, ub_b_[2] = {0, 0};  // by split; [1] 0: one split
  int split_ = 0;                            // the split a_ and b_ are at
};

}  // namespace hd::run
