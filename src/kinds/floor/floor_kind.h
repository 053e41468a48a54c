// The floor kind (kinds/kind.h): its command, its summary as show prints it, its verify.
#pragma once
#include <string_view>

#include "kinds/floor/floor.h"
#include "kinds/summary_kind.h"

namespace hd::kinds {

class FloorKind : public SummaryKind {
 public:
  std::string_view name() const override { return kFloorKind; }
  std::string_view description() const override {
    return "which ubatch splits (threads, flash attention) reproduce a run bit for bit";
  }
  void add_command(CLI::App& app, cli::Context& ctx) const override;  // floor_command.cpp
  void verify(const std::string& path, const run::VerifyOptions& options,
              const ProgressFn& progress) const override;
 protected:
  void print(std::ostream& out, const report::LoadedResult& l) const override;
  report::AddRows add_rows() const override;
};

}  // namespace hd::kinds
