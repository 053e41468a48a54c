// heterodyne merge parts/run.*.hdy -o run.hdy [--allow-mixed-hosts] [--force]
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "kinds/registry.h"
#include "run/merge.h"

namespace hd::cli {

void add_merge(CLI::App& app, Context& ctx) {
  auto rq = std::make_shared<run::MergeRequest>();
  CLI::App* cmd = app.add_subcommand(
      "merge", "join the parts of a sharded run (diff --shard K/N) into one experiment");
  cmd->add_option("parts", rq->parts, "every part: one file per shard")->required();
  cmd->add_option("-o,--output", rq->out, "the merged experiment")->required();
  cmd->add_flag("--force", rq->replace, "replace an existing output");
  cmd->add_flag("--allow-mixed-hosts", rq->allow_mixed_hosts,
                "merge parts from hosts whose CPUs, threads or devices differ (recorded)");
  cmd->callback([rq, &ctx] {
    rq->command_line = ctx.command_line;
    rq->sharding_of = [](const std::string& kind) -> const run::Sharding* {
      const kinds::RunKind* k = kinds::kind_named(kind);
      return k ? k->sharding() : nullptr;
    };
    const run::MergeResult r = run::merge_parts(*rq, progress_line);
    for (const auto& m : r.mixed) progress_line("mixed hosts, allowed: " + m);
    std::cout << fmt::format("merged {} parts ({} chunks) into {}\nrows sha256 {}\n", r.parts,
                             r.chunks, rq->out, r.rows_sha256);
  });
}

}  // namespace hd::cli
