#include "run/arms.h"

#include "engine/quantize.h"
#include "errors.h"

namespace hd::run {

void check_comparable(const engine::Model& a, const engine::Model& b, Pairing pairing) {
  if (auto why = engine::vocab_difference(a, b)) {
    throw InputError("the arms have different vocabularies (" + *why + ")");
  }
  if (pairing == Pairing::kLogits) return;
  // Residuals and transplants pair the arms layer by layer and row by row.
  const auto& ia = a.info();
  const auto& ib = b.info();
  if (ia.architecture != ib.architecture || ia.n_layer != ib.n_layer || ia.n_embd != ib.n_embd) {
    throw InputError("the arms must share architecture, layer count and width: A is " +
                     ia.architecture + " " + std::to_string(ia.n_layer) + " layers × " +
                     std::to_string(ia.n_embd) + ", B is " + ib.architecture + " " +
                     std::to_string(ib.n_layer) + " layers × " + std::to_string(ib.n_embd));
  }
}

void resolve_quantized_b(DiffConfig& config) {
  if (config.b_quant.empty()) return;
  // A file llama.cpp cannot read is the user's to fix: its one line before llama.cpp's quantizer
  // fails on it less clearly.
  engine::model_load(config.a.model);
  const int threads = config.a.n_threads > 0 ? config.a.n_threads : 2;
  config.b.model = engine::ensure_quantized(config.a.model, config.b_quant, threads);
}

}  // namespace hd::run
