// The recommend kind (kinds/kind.h): its command, its summary as show prints it, its verify.
#pragma once
#include <string_view>

#include "kinds/recommend/recommend.h"
#include "kinds/summary_kind.h"

namespace hd::kinds {

class RecommendKind : public SummaryKind {
 public:
  std::string_view name() const override { return kRecommendKind; }
  std::string_view description() const override {
    return "per-tensor quantization types chosen by measured KL, and proven on held-out text";
  }
  void add_command(CLI::App& app, cli::Context& ctx) const override;  // recommend_command.cpp
  void verify(const std::string& path, const run::VerifyOptions& options,
              const ProgressFn& progress) const override;
 protected:
  void print(std::ostream& out, const report::LoadedResult& l) const override;
  report::AddRows add_rows() const override;
};

}  // namespace hd::kinds
