#include "run/session_floors.h"

#include <tuple>

#include "errors.h"

namespace hd::run {

void ArmRun::run(std::span<const int32_t> tokens, int first_output) {
  if (arm) {
    arm->run_chunk(tokens, &hook, logits, first_output);
  } else {
    host->run_split(tokens, split, &hook, logits, first_output);
  }
  out = logits;
}

void ArmRun::run_in_place(std::span<const int32_t> tokens, int first_output) {
  out = arm->run_chunk_view(tokens, &hook, first_output);
}

void ArmRun::keep() {
  if (out.data() == logits.data()) return;
  logits.assign(out.begin(), out.end());
  out = logits;
}

FloorArms::FloorArms(const DiffConfig& config, std::shared_ptr<engine::Model> model_a,
                     std::shared_ptr<engine::Model> model_b, MakeRun make, engine::Arm& main_a,
                     engine::Arm& main_b)
    : config_(config),
      model_a_(std::move(model_a)),
      model_b_(std::move(model_b)),
      make_(std::move(make)),
      main_a_(&main_a),
      main_b_(&main_b) {
  a_ = make_floor(model_a_, config_.a, main_a_, 0);
  ub_a_[0] = floor_arm(config_, config_.a).n_ubatch;
  b_ = make_floor(model_b_, config_.b, main_b_, 0);
  ub_b_[0] = floor_arm(config_, config_.b).n_ubatch;
  // --floor-ub names the one split (run/config.h second_floor_ubatch).
  const int second_a = floor_arm(config_, config_.a, 1).n_ubatch;
  const int second_b = floor_arm(config_, config_.b, 1).n_ubatch;
  if (config_.floor_ubatch == 0 && second_a > 0 && second_b > 0) {
    ub_a_[1] = second_a;
    ub_b_[1] = second_b;
  }
}

ArmRun FloorArms::make_floor(const std::shared_ptr<engine::Model>& model,
                             const engine::ArmSettings& arm, engine::Arm* main, int split) {
  const engine::ArmSettings s = floor_arm(config_, arm, split);
  if (!main->splits_in_place(s.n_ubatch)) return make_(model, s);
  // The hook asks for what an arm of its own would (make_), without its context.
  ArmRun r = make_(nullptr, s);
  r.host = main;
  r.split = s.n_ubatch;
  return r;
}

void FloorArms::at_chunk(int chunk) {
  use_split(ub_a_[1] > 0 ? chunk % 2 : 0);
  if (!a_.present() || !b_.present())
    throw RuntimeError("the floor's arms could not be made for chunk " + std::to_string(chunk));
}

void FloorArms::use_split(int split) {
  if (split == split_) return;
  split_ = -1;  // until both are made: a failure leaves no arm at a stale split
  for (auto [run, model, arm, main] : {std::tuple{&a_, &model_a_, &config_.a, main_a_},
                                       std::tuple{&b_, &model_b_, &config_.b, main_b_}}) {
    const int ubatch = floor_arm(config_, *arm, split).n_ubatch;
    if (run->host != nullptr && main->splits_in_place(ubatch)) {
      run->split = ubatch;  // no context to make: its hook and buffers stay, chunk after chunk
      continue;
    }
    // The old context goes before the new one is made: one floor context per arm at a time.
    *run = {};
    *run = make_floor(*model, *arm, main, split);
  }
  split_ = split;
}

void FloorArms::swap_buffers() {
  std::swap(a_.hook, b_.hook);
  std::swap(a_.logits, b_.logits);
  std::swap(a_.out, b_.out);
}

std::optional<std::string> FloorArms::change(const nlohmann::json& provenance) const {
  // The keys a run records (kinds/diff/diff_run.cpp), each 0 where it has none.
  const std::pair<const char*, int> now[] = {{"floor_ubatch", ub_a_[0]},
                                             {"floor_ubatch_b", ub_b_[0]},
                                             {"floor_ubatch_2", ub_a_[1]},
                                             {"floor_ubatch_b_2", ub_b_[1]}};
  for (const auto& [key, value] : now) {
    const auto& stored = provenance.value(key, nlohmann::json(0));
    if (!stored.is_number_integer() || stored.get<int>() != value) {
      return "the run's floor has " + std::string(key) + " " + stored.dump() + ", this build's " +
             std::to_string(value);
    }
  }
  return std::nullopt;
}

}  // namespace hd::run
