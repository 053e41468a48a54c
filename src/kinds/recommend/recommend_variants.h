// How recommend makes the models it measures. Every model is the base file type with every
// quantized tensor pinned to a type (pinned_overrides). llama.cpp's quantizer made each one
// whole, quantizing every tensor again for a change to one group; a pinned tensor's bytes depend
// only on its own values and type, so now the quantizer makes one file per candidate type (every
// tensor at that type) and each model is spliced (engine/gguf_splice.h): its round's start with
// the group's tensors from the file of their new type. Before any splice is used, one variant is
// made both ways and must be the same bytes; where it is not (or with --no-reuse) every model is
// quantized whole, as before.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/output_file.h"
#include "common/progress.h"
#include "kinds/recommend/recommend_measure.h"

namespace hd::run {

// The temporary files' names in the recommendation's directory (removed when a killed run left
// them): variant.gguf, start.gguf, proof.gguf, and types-<TYPE>.gguf for every offered type.
std::vector<std::string> variant_file_names();

class VariantMaker {
 public:
  // Makes the type files in `dir` and proves a splice on the first group (reuse = false: makes
  // nothing; every model is quantized whole).
  VariantMaker(const RecipePlan& plan, std::string model, std::string base_type,
               const std::vector<std::string>& types, const std::string& dir, bool reuse,
               const ProgressFn& progress);

  // Writes to `out` the model whose quantized tensors have `types` (tensor -> type), the file
  // `from` holding `from_types`: spliced where proven, else quantized whole.
  void make(const std::string& from, const std::map<std::string, std::string>& from_types,
            const std::map<std::string, std::string>& types, const std::string& out) const;

  bool splices() const { return why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }  // why every model is quantized whole

 private:
  void quantize(const std::map<std::string, std::string>& types, const std::string& out) const;

  const RecipePlan& plan_;
  std::string model_, base_type_;
  std::map<std::string, std::unique_ptr<OutputFile>> type_files_;  // type -> every tensor at it
  std::string why_not_;
};

}  // namespace hd::run
