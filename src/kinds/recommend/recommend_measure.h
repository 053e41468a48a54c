// What `recommend` measures: A's logits on the calibration and held-out chunks once, then for
// each variant (the base file type with one tensor group moved to one type) its file
// (recommend_variants.h), its tensor types read back, and its mean KL against A on both texts
// (recommend_passes.h). The models are touched here and in those files and recommend_proof;
// the choice itself is analysis/recipe.h.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/recipe.h"
#include "common/progress.h"
#include "engine/gguf_tensors.h"
#include "engine/model.h"
#include "engine/quantize.h"
#include "kinds/recommend/recommend_passes.h"
#include "kinds/recommend/recommend_rows.h"

namespace hd::run {

// The tensors the base quantizes, grouped, with what each group weighs in each type.
struct RecipePlan {
  std::string base_path;  // the base file type's model (cached, engine/quantize.h)
  engine::GgufLayout base;
  std::vector<analysis::TensorGroup> groups;
  std::map<std::string, std::string> base_types;  // tensor -> its type in the base
  uint64_t fixed_bytes = 0;  // everything but the grouped tensors (metadata, norms, padding)
  // Per group, per candidate type (config order): its bytes, or 0 where the type's blocks do
  // not divide the rows.
  std::vector<std::vector<uint64_t>> bytes;
  std::map<std::string, engine::GgufTensor> tensors;  // the grouped ones, by name
};

// Where a round of measurements starts: every grouped tensor's type, and per group its bytes
// and its type(s) ("Q4_K", or "Q4_K+Q6_K" where Q4_K_M gives some layers' ffn_down more bits).
// Round 0 starts at the base; each later round at the recipe the round before it chose, so that
// the additive prediction is made again close to where the recipe is.
struct Start {
  std::map<std::string, std::string> types;
  std::vector<uint64_t> bytes;
  std::vector<std::string> label;
};
Start start_at(const RecipePlan& plan, const std::map<std::string, std::string>& types);

RecipePlan plan_recipe(const std::string& model, const std::string& base_type,
                       const std::vector<std::string>& types, int layers_per_group,
                       int n_threads);

class VariantMaker;

class Measurer {
 public:
  // reuse: variants spliced from their start and passes started at their first changed layer
  // (recommend_variants.h, recommend_passes.h); false: every variant quantized whole and every
  // pass from the tokens. The figures are the same bits either way (tested).
  Measurer(std::shared_ptr<engine::Model> a, int chunk, ScoredText calibration,
           ScoredText held_out, bool reuse = true);
  ~Measurer();

  // A's logits on `chunks`, for a ScoredText.
  static ScoredText score_a(const std::shared_ptr<engine::Model>& a, int chunk,
                            std::vector<std::vector<int32_t>> chunks);

  TextScore score(const std::string& model_path, const ScoredText& text) const;
  const ScoredText& calibration() const { return calibration_; }
  const ScoredText& held_out() const { return held_out_; }

  // The rows of round `round`'s group g (plan.groups[g - 1] moved from `start` to each type;
  // g = 0: `start` itself, the stock base in round 0), each made, read back and scored.
  // `scratch` is where variants are written (never kept). RuntimeError when llama.cpp changed a
  // tensor outside the group: an override that matched more than it should.
  std::vector<store::SensitivityRow> group_rows(int round, int g, const RecipePlan& plan,
                                                const Start& start,
                                                const std::string& model_a,
                                                const std::string& base_type,
                                                const std::vector<std::string>& types,
                                                const std::string& scratch,
                                                const ProgressFn& progress);

  // Drops the type files and the round's start (disk and memory) once every group is measured.
  void release();

 private:
  // A round's start: its file, its scores, and its rows where the round's variants start.
  struct RoundStart {
    int round = -1;
    std::unique_ptr<OutputFile> file;  // rounds after the first: the spliced start
    std::string path;
    TextScore calibration, held_out;
    StartRows calibration_rows, held_out_rows;
    std::map<int, std::string> group_proofs;  // group -> "" where its start held, else why not
  };
  const RoundStart& round_start(int round, const RecipePlan& plan, const Start& start,
                                const std::string& scratch, const ProgressFn& progress);
  store::SensitivityRow variant_row(int round, int g, const RecipePlan& plan, const Start& start,
                                    size_t t, const std::vector<std::string>& types,
                                    const std::string& scratch, const ProgressFn& progress);

  std::shared_ptr<engine::Model> a_;
  bool reuse_;
  ScoredText calibration_, held_out_;
  PassRunner runner_;
  std::unique_ptr<VariantMaker> maker_;
  RoundStart round_;
};

// One override per tensor the base quantizes, in file order, each pinning its exact name
// (`^blk\.0\.attn_v\.weight$`) to its type in `types`. Every tensor is pinned, not only those
// that change: at the pinned commit the file types' mixes count tensors as they go (Q4_K_M's
// more bits for some layers' attn_v follow a counter that a manual override skips), so
// overriding blk.0.attn_v alone moves blk.2.attn_v from Q6_K to Q4_K. Pinned, every type is
// what it says, in llama-quantize as here.
std::vector<engine::TensorTypeOverride> pinned_overrides(
    const RecipePlan& plan, const std::map<std::string, std::string>& types);

// Every tensor of the file at `path` whose type is not what `expected` says (tensor -> type),
// as "name is X, not Y" lines; empty when every one took.
std::vector<std::string> types_not_taken(const std::string& path,
                                         const std::map<std::string, std::string>& expected);

}  // namespace hd::run
