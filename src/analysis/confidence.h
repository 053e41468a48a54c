// KL and top-1 changes by arm A's confidence (its top-1 probability), as exllamav3's
// model_diff buckets them: "the quant only hurts where the model was unsure" is read from it.
// Buckets [0, .2), [.2, .4), [.4, .6), [.6, .8), [.8, .95), [.95, 1]; the floor (A re-split)
// in the same buckets beside each, so that a bucket's KL can be read against its noise.
#pragma once
#include <memory>

#include "analysis/plugin.h"

namespace hd::analysis {

// The bucket of a top-1 probability p (0..5; p of 1 falls in the last).
int confidence_bucket(double p);

std::unique_ptr<ChunkAnalysis> make_confidence_analysis();

}  // namespace hd::analysis
