// The tensors of a made-up model (model_maker): each one's name, shape and scale, and the
// deterministic stream of its values.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model_presets.h"

namespace hd::engine {

struct TensorPlan {
  std::string name;
  int64_t ne0;          // row length = fan-in of a matrix
  int64_t ne1;          // rows; 0 for a 1-D tensor
  double sigma;         // standard deviation of the random part
  bool norm_weight;     // 1-D RMS-norm weight: 1 + noise, always F32
  int64_t ne2 = 0;      // experts of a 3-D expert tensor (one matrix each); 0 otherwise
  double centre = 1.0;  // a norm weight's mean
  // Stored F32 whatever the weight type, as convert_hf_to_gguf.py stores MoE routers (and
  // llama_model_quantize leaves them).
  bool keep_f32 = false;

  int64_t n_values() const { return ne0 * std::max<int64_t>(ne1, 1) * std::max<int64_t>(ne2, 1); }
};

// Every tensor of preset `p` with a vocabulary of n_vocab tokens, in file order.
std::vector<TensorPlan> plan_tensors(const Preset& p, int64_t n_vocab);

// Streams one tensor's values in order, a block at a time (no tensor is held whole). Its own
// splitmix64 stream, seeded by splitmix64(seed) XOR FNV-1a(tensor name); one 64-bit draw gives
// one weight, the sum of its four 16-bit lanes (integer arithmetic, then one scaling).
class ValueStream {
 public:
  ValueStream(const TensorPlan& t, uint64_t seed);

  void next(float* out, size_t n);

 private:
  static int64_t centred_lane_sum(uint64_t r) {
    int64_t sum = 0;
    for (int lane = 0; lane < 4; ++lane) sum += static_cast<int64_t>((r >> (16 * lane)) & 0xffff);
    return sum - 2 * 65535;  // each lane's mean is 65535 / 2
  }

  bool norm_weight_;
  double centre_;
  uint64_t state_;
  double scale_;
};

}  // namespace hd::engine
