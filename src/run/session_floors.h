// The pieces a diff's Session (run/session.h) is made of, besides its two arms: an arm with the
// buffers it reuses chunk after chunk, and the floor arms.
//
// The floor: A and B again, each re-split into other ubatches by the same rule from its own
// ubatch (run/config.h floor_arm): B's kernels (a quantized matmul, flash attention) can be
// split-sensitive where A's are bitwise stable, so a floor of A alone misses B's split noise.
// Where both arms have a second split, chunk c runs at split c % 2 (the floor of one split alone
// can be bitwise where another's is not); the arms are made anew when the split changes, one
// context per arm at a time.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/arm.h"
#include "run/config.h"

namespace hd::run {

// An arm with the hook and buffers it reuses chunk after chunk (no per-chunk allocations).
struct ArmRun {
  std::unique_ptr<engine::Arm> arm;
  engine::Hook hook;
  std::vector<float> logits;  // positions first_output..n-1
};

class FloorArms {
 public:
  // How the session makes an arm (its hook told what to capture).
  using MakeRun =
      std::function<ArmRun(std::shared_ptr<engine::Model>, const engine::ArmSettings&)>;

  FloorArms() = default;  // a run without a floor
  // Both floor arms at the first split; the second split's ubatches where both arms have one
  // and --floor-ub does not name the one split.
  FloorArms(const DiffConfig& config, std::shared_ptr<engine::Model> model_a,
            std::shared_ptr<engine::Model> model_b, MakeRun make);

  bool present() const { return ub_a_[0] > 0; }
  // The arms at chunk `chunk`'s split, made anew when it is not the current one: RuntimeError
  // when they cannot be (never a chunk without its floor).
  void at_chunk(int chunk);
  ArmRun& a() { return a_; }
  ArmRun& b() { return b_; }
  const ArmRun& a() const { return a_; }
  const ArmRun& b() const { return b_; }
  // The ubatch of A's (B's) floor at split 0 or 1; 0 where there is none.
  int ubatch_a(int split) const { return ub_a_[split]; }
  int ubatch_b(int split) const { return ub_b_[split]; }
  // Where the floor's ubatches now (both arms, both splits) are not those a stored run recorded
  // (provenance floor_ubatch, _b, _2, _b_2), a one-line description naming the first.
  std::optional<std::string> change(const nlohmann::json& provenance) const;

 private:
  void use_split(int split);

  DiffConfig config_;
  std::shared_ptr<engine::Model> model_a_, model_b_;
  MakeRun make_;
  ArmRun a_, b_;
  int ub_a_[2] = {0, 0}, ub_b_[2] = {0, 0};  // by split; [1] 0: one split
  int split_ = 0;                            // the split a_ and b_ are at
};

}  // namespace hd::run
