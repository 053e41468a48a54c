// KL and top-1 changes by arm A's confidence (its top-1 probability), as exllamav3's
// model_diff buckets them: "the quant only hurts where the model was unsure" is read from it.
// Buckets [0, .2), [.2, .4), [.4, .6), [.6, .8), [.8, .95), [.95, 1]; the run's floor (the
// larger of A vs A′ and B vs B′, named) in the same buckets beside each, to read a bucket's KL
// against.
#pragma once
#include <memory>

#include "analysis/plugin.h"

namespace hd::analysis {

// The bucket of a top-1 probability p (0..5; p of 1 falls in the last).
int confidence_bucket(double p);

std::unique_ptr<ChunkAnalysis> make_confidence_analysis();

}  // namespace hd::analysis
