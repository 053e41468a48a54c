// Finding a model's points in its own graph, and proving each before it is used.
//
// A candidate (points.h) holds a role only when it passes the swap test on this model: take
// the tensor from a pass over one token sequence and write it into a pass over another; a point
// that carries the whole state makes the second pass give the first pass's logits, bit for bit.
// That is what a transplant assumes of a point, and what a name cannot promise. Passing is
// necessary, not sufficient: what is added later and does not depend on the tokens (a learned
// position embedding, a bias) is the same in both passes and goes unseen, which is why the
// candidates are ordered latest first where a model names such a sum (inpL). Where in the layer
// a mid-layer point sits is its name's claim (after attention, before the MLP); the swap test
// proves it carries the whole state there. Failing is conclusive:
// jamba's ffn_inp-N is its mixer's output without the residual, gemma3n's layers also read
// per-layer token embeddings, and a layer that reads an earlier layer's KV cache or state
// leaves any single point incomplete. All three fail the swap; a point that fails is not used.
//
// The survey runs in this process on the CPU, on short sequences (a few passes of 8 tokens per
// layer), with the llama.cpp this binary links: an arm on another build (--llama-build) uses
// the names proven here, and a name that build's graph lacks fails its first decode by name.
#pragma once
#include <memory>

#include "engine/hook.h"
#include "engine/model.h"
#include "engine/points.h"

namespace hd::engine {

// Throws RuntimeError when the model does not decode (llama.cpp's reason). `nodes`, when
// given, gets every node of the graph in the order asked, with its shape (and the survey runs
// again); without it a map this build kept for the same file is used (point_cache.h).
PointMap survey_points(const std::shared_ptr<Model>& model,
                       std::vector<Hook::Node>* nodes = nullptr);

}  // namespace hd::engine
