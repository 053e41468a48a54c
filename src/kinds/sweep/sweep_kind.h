// The sweep kind (kinds/kind.h): its command, its summary as show prints it, its verify.
#pragma once
#include <string_view>

#include "kinds/sweep/sweep.h"
#include "kinds/summary_kind.h"

namespace hd::kinds {

class SweepKind : public SummaryKind {
 public:
  std::string_view name() const override { return kSweepKind; }
  std::string_view description() const override {
    return "every combination of the settings two arms differ in: how much each causes";
  }
  void add_command(CLI::App& app, cli::Context& ctx) const override;  // sweep_command.cpp
  void verify(const std::string& path, const run::VerifyOptions& options,
              const ProgressFn& progress) const override;
  const run::Sharding* sharding() const override;

 protected:
  void print(std::ostream& out, const report::LoadedResult& l) const override;
};

}  // namespace hd::kinds
