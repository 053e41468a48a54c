// A per-tensor quantization recipe (`recommend`): which tensors move together, and which type
// each group takes so that the predicted KL is least within a size, or the size least within a
// KL. Pure: the bytes come from the GGUF (engine/gguf_tensors.h), the KLs from measurement.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hd::analysis {

// Tensors that change type together, and the regex llama-quantize's --tensor-type matches them
// by (anchored at both ends, dots escaped: `^blk\.1\.ffn_down\.weight$` matches neither
// blk.11.ffn_down.weight nor blk.1.ffn_down_exps.weight, which an unanchored one would).
struct TensorGroup {
  std::string name;  // "blk.12.ffn_down", "blk.0-3.attn_q" or "token_embd"
  std::vector<std::string> tensors;
  std::string pattern;
};

// Groups the tensors by class and layer: `blk.N.CLASS.weight` joins the group of CLASS over
// layers [k * layers_per_group, (k + 1) * layers_per_group); every other tensor (token_embd,
// output) is a group of its own. Groups are ordered by first tensor, as `names` lists them.
std::vector<TensorGroup> tensor_groups(const std::vector<std::string>& names,
                                       int layers_per_group);

// `s` with every ECMAScript regex metacharacter escaped.
std::string regex_escape(const std::string& s);
// The regex that matches the tensor name `name` and nothing else: "^" escaped "$".
std::string exact_name_pattern(const std::string& name);

// One type a group may take: its bytes in the file (alignment padding included) and the change
// in mean KL measured when that group alone takes it, the rest at the base (0 for the base).
struct GroupOption {
  std::string type;
  uint64_t bytes = 0;
  double delta_kl = 0;
};

struct GroupChoices {
  std::string group;
  std::vector<GroupOption> options;  // at least one
};

struct Allocation {
  bool feasible = false;
  std::vector<size_t> choice;  // an option index per group
  uint64_t bytes = 0;          // sum of the chosen options' bytes
  double delta_kl = 0;         // sum of their delta_kl: the additive prediction
};

// The multiple-choice knapsack, solved exactly by dynamic programming over bytes counted in
// units of 1/32768 of the widest span the groups allow (coarser past 2048 groups: 2^26 table
// entries at most) (each option's bytes above its
// group's smallest rounded up to a unit, so a chosen total never exceeds the budget; an
// allocation can miss the true optimum only by those roundings).
// The least predicted KL with bytes <= budget; infeasible when even the smallest options exceed it.
Allocation allocate_within_bytes(const std::vector<GroupChoices>& groups, uint64_t budget);
// The fewest bytes with predicted delta KL <= max_delta; infeasible when no allocation reaches it.
Allocation allocate_within_kl(const std::vector<GroupChoices>& groups, double max_delta);

// The least and greatest total bytes and the least delta any allocation has.
uint64_t smallest_bytes(const std::vector<GroupChoices>& groups);
uint64_t largest_bytes(const std::vector<GroupChoices>& groups);
double least_delta(const std::vector<GroupChoices>& groups);

// Spearman's rank correlation (ties take their mean rank); NaN for fewer than 2 values or a
// constant series.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace hd::analysis
