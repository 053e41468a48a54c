#include "engine/server_schedule.h"

#include <algorithm>
#include <climits>
#include <random>
#include <type_traits>

#include "errors.h"

namespace hd::engine {

bool is_server_arm(const ArmSettings& s) { return !server_flags(s).empty(); }

std::string server_flags(const ArmSettings& s) {
  const ArmSettings plain;
  std::string out;
  for_each_arm_field([&](const auto& field) {
    using T = typename std::decay_t<decltype(field)>::Value;
    if (!field.info.server || s.*field.member == plain.*field.member) return;
    const std::string spellings = field.info.flags;
    std::string value;
    if constexpr (std::is_same_v<T, std::string>) {
      value = s.*field.member;
    } else if constexpr (std::is_same_v<T, int>) {
      value = std::to_string(s.*field.member);
    }
    out += (out.empty() ? "--" : " --") + spellings.substr(spellings.rfind(',') + 1) + " " + value;
  });
  return out;
}

ArmSettings plain_arm(const ArmSettings& s) {
  const ArmSettings defaults;
  ArmSettings p = s;
  for_each_arm_field([&](const auto& field) {
    if (field.info.server) p.*field.member = defaults.*field.member;
  });
  return p;
}

ArmSettings server_trial(const ArmSettings& s, int t) {
  ArmSettings a = s;
  a.neighbour_seed = s.neighbour_seed + t;
  a.slot = (s.slot + t) % s.slots;
  return a;
}

void apply_server_preset(ArmSettings& s) {
  s.slots = 4;
  s.kv_unified = "on";
  s.n_batch = 2048;
  s.n_ubatch = 512;
}

void check_server_settings(const ArmSettings& s, int n_ctx, int n_ctx_train) {
  if (s.kv_unified != "on" && s.kv_unified != "off") {
    throw InputError("kv-unified must be on or off, not '" + s.kv_unified + "'");
  }
  if (s.prompt_cache != "hit" && s.prompt_cache != "prefix" && s.prompt_cache != "miss") {
    throw InputError("prompt-cache must be miss, hit or prefix, not '" + s.prompt_cache + "'");
  }
  if (s.slots < 1 || s.slots > 256) {
    throw InputError("slots must be between 1 and 256, not " + std::to_string(s.slots));
  }
  if (s.slot < 0 || s.slot >= s.slots) {
    throw InputError("slot " + std::to_string(s.slot) + " is not one of the " +
                     std::to_string(s.slots) + " slots (0 to " + std::to_string(s.slots - 1) +
                     "): give --slots above it");
  }
  if (s.neighbours < 0 || s.neighbours > s.slots - 1) {
    throw InputError(std::to_string(s.neighbours) + " neighbours need " +
                     std::to_string(s.neighbours + 1) + " slots, and the arm has " +
                     std::to_string(s.slots) + ": give --slots " +
                     std::to_string(s.neighbours + 1) + " or more");
  }
  if (s.neighbour_seed < 0) throw InputError("the neighbour seed must be 0 or more");
  if (s.n_batch < 0) throw InputError("the batch must be at least 1 token");
  // The reused run is a quarter of the chunk: a server given --cache-reuse J reuses runs of at
  // least J tokens, so J may not pass it.
  if (s.cache_reuse < 0 || s.cache_reuse > n_ctx / 4) {
    throw InputError("cache-reuse " + std::to_string(s.cache_reuse) + " needs a reused run of as " +
                     "many tokens, and the run is a quarter of the chunk (" +
                     std::to_string(n_ctx / 4) + ")");
  }
  if (s.cache_reuse > 0 && s.prompt_cache != "miss") {
    throw InputError("cache-reuse is a prompt-cache state of its own: give it with --prompt-cache "
                     "miss (the default), not " + s.prompt_cache);
  }
  // llama-server gives each slot n_ctx / slots cells, n_ctx being the training context by
  // default: a chunk longer than that is a request the server would refuse (or shift).
  if (s.slots > 1 && static_cast<int64_t>(n_ctx) * s.slots > n_ctx_train) {
    throw InputError("a server of " + std::to_string(s.slots) + " slots holds " +
                     std::to_string(n_ctx_train / s.slots) + " tokens per slot of this model's " +
                     std::to_string(n_ctx_train) + "-token context, less than the chunk's " +
                     std::to_string(n_ctx) + ": give fewer slots or a shorter --chunk");
  }
}

int server_cells_per_slot(const ArmSettings& s, int n_ctx) {
  return s.neighbours > 0 ? 2 * n_ctx + 2 : n_ctx;
}

ServerComposer::ServerComposer(const ArmSettings& s, int cells_per_slot)
    : settings_(s), cells_per_slot_(cells_per_slot) {}

// Seed 0: every neighbour reads a chunk-long prompt beside the measured one (the heaviest
// prompt processing, the case DESIGN.md §9 measured). Another seed draws each neighbour's state
// and length from std::mt19937's raw output, which the standard fixes on every platform.
void ServerComposer::start(std::span<const int32_t> tokens, std::vector<ServerBatch>& out) {
  text_.assign(tokens.begin(), tokens.end());
  neighbours_.clear();
  const auto n = static_cast<uint32_t>(text_.size());
  std::mt19937 draw(static_cast<uint32_t>(settings_.neighbour_seed));
  for (int seq = 0, j = 0; j < settings_.neighbours; ++seq) {
    if (seq == settings_.slot) continue;
    Neighbour nb;
    nb.seq = seq;
    if (settings_.neighbour_seed == 0) {
      nb.offset = static_cast<size_t>(j + 1) * n / static_cast<size_t>(settings_.neighbours + 1);
      nb.prompt = static_cast<int32_t>(n);
    } else {
      nb.generating = draw() % 2 == 1;
      nb.prompt = static_cast<int32_t>(1 + draw() % n);
      // Never offset 0: a neighbour reading the measured text itself would hide a row map that
      // took its rows for the measured ones (the tests compare the embedding rows).
      nb.offset = n > 1 ? 1 + draw() % (n - 1) : 0;
    }
    neighbours_.push_back(nb);
    ++j;
  }
  ServerBatch earlier;  // the generating neighbours' prompts, as one earlier update decoded them
  for (auto& nb : neighbours_) {
    if (!nb.generating) continue;
    for (int32_t p = 0; p < nb.prompt; ++p) {
      earlier.push_back({next_token(nb), nb.pos, nb.seq, p + 1 == nb.prompt, -1});
      ++nb.pos;
    }
  }
  if (!earlier.empty()) out.push_back(std::move(earlier));
}

int32_t ServerComposer::next_token(const Neighbour& n) const {
  if (text_.empty()) throw RuntimeError("a server arm decoded a step before any chunk");
  return text_[(n.offset + static_cast<size_t>(n.pos)) % text_.size()];
}

// Every generating neighbour adds its one token, logits wanted as for sampling, until its cells
// are full.
void ServerComposer::add_generated_tokens(ServerBatch& b) {
  for (auto& nb : neighbours_) {
    if (!nb.generating || nb.pos + 1 >= cells_per_slot_) continue;
    b.push_back({next_token(nb), nb.pos, nb.seq, true, -1});
    ++nb.pos;
  }
}

// Each update: the generated tokens, then prompt tokens slot by slot (the measured slot at its
// id) while the batch holds fewer than n_batch. A neighbour whose prompt ends in an update
// generates from the next one. Where the generated tokens alone fill the batch, the measured slot
// still adds one token (the server's batch is max(n_batch, slots) long), so they cannot stall it;
// neighbours reading prompts in lower slots may take a whole update, as they do in the server.
void ServerComposer::feed(std::span<const int32_t> tokens, int32_t begin, int32_t end,
                          int32_t pos0, int32_t first_output, std::vector<ServerBatch>& out,
                          int32_t measured_end) {
  const size_t limit = settings_.n_batch > 0 ? static_cast<size_t>(settings_.n_batch) : SIZE_MAX;
  int32_t fed = begin;
  while (fed < end) {
    ServerBatch b;
    add_generated_tokens(b);
    const size_t generated = b.size();
    for (int32_t seq = 0; seq < settings_.slots; ++seq) {
      if (seq == settings_.slot) {
        while (fed < end && (b.size() < limit || b.size() == generated)) {
          const bool measured = fed < measured_end;
          b.push_back({tokens[static_cast<size_t>(fed)], pos0 + fed, seq,
                       measured ? fed >= first_output : fed + 1 == end, measured ? fed : -1});
          ++fed;
        }
        continue;
      }
      for (auto& nb : neighbours_) {
        if (nb.seq != seq || nb.generating) continue;
        while (nb.pos < nb.prompt && b.size() < limit) {
          b.push_back({next_token(nb), nb.pos, nb.seq, nb.pos + 1 == nb.prompt, -1});
          ++nb.pos;
        }
      }
    }
    for (auto& nb : neighbours_) {
      if (!nb.generating && nb.pos >= nb.prompt) nb.generating = true;
    }
    out.push_back(std::move(b));
  }
}

std::vector<std::vector<int32_t>> ubatch_split(const ServerBatch& b, int n_ubatch,
                                               bool stream_per_slot) {
  const auto n = static_cast<int32_t>(b.size());
  const auto cap = static_cast<size_t>(std::max(n_ubatch, 1));
  std::vector<std::vector<int32_t>> out;
  if (!stream_per_slot) {
    for (int32_t i = 0; i < n; i += static_cast<int32_t>(cap)) {
      std::vector<int32_t> u;
      for (int32_t k = i; k < std::min<int32_t>(n, i + static_cast<int32_t>(cap)); ++k) u.push_back(k);
      out.push_back(std::move(u));
    }
    return out;
  }
  std::vector<bool> used(b.size(), false);
  for (;;) {
    // The sequences of this ubatch: from the first unused token, each next one whose id is the
    // last one's plus 1 (split_equal's sequential rule), one more than n_ubatch at most.
    std::vector<int32_t> seqs;
    for (int32_t i = 0; i < n; ++i) {
      if (used[static_cast<size_t>(i)]) continue;
      const int32_t s = b[static_cast<size_t>(i)].seq;
      if (std::find(seqs.begin(), seqs.end(), s) != seqs.end()) continue;
      if (!seqs.empty() && s != seqs.back() + 1) continue;
      seqs.push_back(s);
      if (seqs.size() > cap) break;
    }
    if (seqs.empty()) return out;
    // Each sequence's unused tokens in batch order.
    std::vector<std::vector<int32_t>> left(seqs.size());
    for (size_t k = 0; k < seqs.size(); ++k) {
      for (int32_t i = 0; i < n; ++i) {
        if (!used[static_cast<size_t>(i)] && b[static_cast<size_t>(i)].seq == seqs[k]) left[k].push_back(i);
      }
    }
    std::vector<std::vector<int32_t>> per_seq(seqs.size());
    for (size_t taken = 0;; ++taken) {
      bool can_expand = true;
      for (const auto& l : left) can_expand = can_expand && taken < l.size();
      if (!can_expand) break;
      for (size_t k = 0; k < seqs.size(); ++k) {
        per_seq[k].push_back(left[k][taken]);
        used[static_cast<size_t>(left[k][taken])] = true;
      }
      if ((per_seq[0].size() + 1) * seqs.size() > cap) break;
    }
    std::vector<int32_t> u;
    for (const auto& p : per_seq) u.insert(u.end(), p.begin(), p.end());
    out.push_back(std::move(u));
  }
}

}  // namespace hd::engine
