// The arms of one diff, built from its configuration: A, B and the floor arms (A and B again,
// each split into other ubatches: a floor of A alone misses B's own split noise). Computes a
// chunk's full result; diff, resume and verify all use this one path, which is what makes verify's
// bitwise comparison meaningful.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "analysis/kl.h"
#include "analysis/plugin.h"
#include "analysis/records.h"
#include "analysis/restore_points.h"
#include "engine/arm.h"
#include "engine/points.h"
#include "run/config.h"
#include "run/prefix.h"
#include "run/session_floors.h"
#include "run/text.h"

namespace hd::run {

class Session {
 public:
  // Loads the models (B quantized from A first when config.b_quant is set), checks that both
  // arms share one vocabulary, and creates the arms (with the floor: A and B each re-split, chunk
  // c at split c % 2, run/config.h floor_arm). Throws InputError / RuntimeError.
  explicit Session(DiffConfig config);
  Session(const Session&) = delete;  // its floor arms are made by its own make_run
  Session& operator=(const Session&) = delete;

  const DiffConfig& config() const { return config_; }
  const engine::Arm& arm_a() const { return *a_.arm; }
  const engine::Arm& arm_b() const { return *b_.arm; }
  int floor_ubatch() const { return floors_.ubatch_a(0); }
  int floor_ubatch_b() const { return floors_.ubatch_b(0); }
  // The second split's ubatches; 0 where the floor has one split.
  int floor_ubatch_2() const { return floors_.ubatch_a(1); }
  int floor_ubatch_b_2() const { return floors_.ubatch_b(1); }
  // A's points as the survey proved them (engine/point_survey.h): which analyses can run.
  const engine::PointMap& points() const { return map_; }

  // The text's chunks: tokenized as the model asks (BOS first when it wants one), cut into
  // whole chunks, each chunk's first token replaced by BOS (llama-perplexity's convention).
  std::vector<std::vector<int32_t>> chunks_of(const std::string& text) const;

  analysis::ChunkResult compute(int chunk, std::span<const int32_t> tokens);

  // The chunks whose floor compute() measures (analysis/floor_sample.h); every chunk until told.
  void measure_floor_on(const std::vector<int>& chunks) {
    floor_on_ = std::set<int>(chunks.begin(), chunks.end());
  }

  // Called after every patched pass of a chunk with (passes done, passes in the chunk).
  void on_pass(std::function<void(int, int)> fn) { on_pass_ = std::move(fn); }

  // Text of every token id that `c` mentions (inputs, targets, top-k).
  std::map<int32_t, std::string> pieces_of(const analysis::ChunkResult& c) const;

  // How many chunks compute() ran with one llama.cpp context at a time (run/session_lean.cpp).
  int lean_chunks() const { return lean_chunks_; }

  // Which starts prefix reuse proved per arm, and where it fell back (and why).
  nlohmann::json prefix_reuse_report() const;

  // Settings and model facts of the three arms, with each model file's sha256.
  nlohmann::json arms_provenance() const;

  // Where a model on disk is not the file a stored run used (`stored` is its provenance
  // "arms"), a one-line description; nullopt when both hash as recorded.
  std::optional<std::string> model_change(const nlohmann::json& stored) const;
  // Where the floor's ubatches now (both arms, both splits) are not those a stored run recorded
  // (provenance floor_ubatch, _b, _2, _b_2), a one-line description naming the first.
  std::optional<std::string> floor_change(const nlohmann::json& provenance) const {
    return floors_.change(provenance);
  }
  // Where the points proven now are not those a stored run recorded (provenance "points", absent
  // in files from before them), a one-line description naming the first key that differs.
  std::optional<std::string> points_change(const nlohmann::json& provenance) const;

 private:
  analysis::Comparison compare(const ArmRun& a, const ArmRun& b, std::span<const int32_t> tokens,
                               int first_output) const;
  ArmRun make_run(std::shared_ptr<engine::Model> model, const engine::ArmSettings& settings) const;
  analysis::Transplants transplant(std::span<const int32_t> tokens, int first_output);
  // The patched pass at points_[k]; its logits where the target arm holds them (until its next
  // decode).
  std::span<const float> patched_pass(bool denoise, size_t k, std::span<const int32_t> tokens,
                                      int first_output);
  std::string graph_name(const analysis::RestorePoint& p) const;
  const std::string& residual_name(int layer) const;
  void run_analyses(analysis::ChunkResult& r, std::span<const int32_t> tokens, int first_output);
  void same_widths(const std::vector<std::string>& points) const;
  // `target` ('a' or 'b') run on the chunk with `points` written from the other arm's pass.
  std::span<const float> rerun(char target, const std::vector<std::string>& points,
                               std::span<const int32_t> tokens, int first_output);
  std::span<const float> rewrite_own(char arm, const std::string& into, const std::string& from,
                                     std::span<const int32_t> tokens, int first_output);
  // `to`'s pass with `patch` written, asking for what its own pass asks for; the logits.
  std::span<const float> run_patched(ArmRun& to, engine::Hook& patch,
                                     std::span<const int32_t> tokens, int first_output);

  // The default diff's chunk with one llama.cpp context alive at a time (run/session_lean.cpp).
  bool lean_applies(bool floor_here) const;
  void compute_lean(analysis::ChunkResult& r, bool floor_here, std::span<const int32_t> tokens,
                    int first_output);
  // A hook handing every residual row to `each(layer, pos, row)`, keeping none.
  using RowFn = std::function<void(int, int, std::span<const float>)>;
  engine::Hook watch_residuals(RowFn each) const;
  // One arm's floor pass in its context, by piece, against the logits in lean_logits_ and the
  // rows in lean_rows_ (that arm's own).
  analysis::Comparison lean_floor(engine::Arm& arm, int ubatch, std::span<const int32_t> tokens,
                                  int first_output);

  DiffConfig config_;
  ArmRun a_, b_;
  // The lean pass's one copy of logits and one set of residual rows ([n][width] per layer).
  std::vector<float> lean_logits_;
  std::vector<std::vector<float>> lean_rows_;
  int lean_chunks_ = 0;
  FloorArms floors_;                                      // none without the floor
  std::optional<std::set<int>> floor_on_;                 // nullopt: every chunk
  std::vector<analysis::RestorePoint> points_;            // empty without --transplants
  std::vector<const analysis::ChunkAnalysis*> analyses_;  // the plug-ins asked for
  engine::PointMap map_;
  analysis::ModelPoints model_points_;  // map_'s points as analyses see them
  analysis::KlReference kl_from_a_;  // A's chunk, what every patched pass is scored against
  std::unique_ptr<PrefixReuse> reuse_a_, reuse_b_;  // with --transplants, --components
  std::function<void(int, int)> on_pass_;
  std::map<std::string, std::string> sha256_;  // model path -> file hash
};

}  // namespace hd::run
