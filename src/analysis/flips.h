// Top-1 flips and where they form: the version report. A llama.cpp upgrade can leave
// perplexity flat while the greedy answer changes at a few positions (llama.cpp #22706);
// those positions, not the mean, are what a user acts on.
#pragma once
#include <string>
#include <vector>

#include "analysis/records.h"

namespace hd::analysis {

struct Flip {
  int chunk = 0, pos = 0;
  int32_t target = 0;      // the next token in the text
  int32_t top_a = 0, top_b = 0;
  double p_top_a = 0;      // A's probability of its own top-1
  double margin_a = 0;     // A's top-1 minus top-2 probability: how sure A was
  double kl = 0;
};

struct FlipLayer {
  int layer = 0;
  double rel_err_flipped = 0;  // mean relative residual error at the flipped positions
  double rel_err_other = 0;    // and at the scored positions that did not flip
};

struct FlipDenoise {
  std::string point;         // "none", "inp_embd", "l_out-N"
  double kl_flipped = 0;     // mean KL at the flipped positions with A's residual restored there
};

struct FlipReport {
  int n_scored = 0;
  std::vector<Flip> flips;              // in text order
  double median_margin_flipped = 0;     // flips happen where A was unsure:
  double median_margin_all = 0;         // compare with every scored position
  std::vector<FlipLayer> layers;        // empty when the file has no residual rows
  int grows_most_at = -1;               // layer with the largest rise of rel_err_flipped
  std::vector<FlipDenoise> denoise;     // empty without transplants
  std::string carried_most_by;          // the restore point removing most flipped-position KL
};

FlipReport flip_report(const std::vector<ChunkResult>& chunks);

}  // namespace hd::analysis
