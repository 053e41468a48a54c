// The arms of a run, checked once for every command: B made by quantizing A when asked, and the
// one test of whether two models can be compared, at the depth the run needs.
#pragma once
#include "engine/model.h"
#include "run/config.h"

namespace hd::run {

// What a comparison pairs between the arms: the logits (one vocabulary), or also the residual
// stream layer by layer and row by row (architecture, layer count and width too).
enum class Pairing { kLogits, kLayers };

// InputError, naming both models' facts, when A and B cannot be compared as `pairing` needs.
void check_comparable(const engine::Model& a, const engine::Model& b, Pairing pairing);

// With config.b_quant set, B's model becomes A's quantized to that type (made once, cached and
// checked: engine/quantize.h); a no-op otherwise.
void resolve_quantized_b(DiffConfig& config);

}  // namespace hd::run
