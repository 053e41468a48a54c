// heterodyne points --model m.gguf [--json]
// The model's points as the survey found and proved them in its graph (engine/point_survey.h),
// and what each analysis can do on it.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "engine/model.h"
#include "engine/point_survey.h"

namespace hd::cli {

void add_points(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string model;
    bool json = false, nodes = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "points", "find a model's points in its graph, prove them, and say what each analysis can do");
  cmd->add_option("--model,-m", o->model, "the GGUF")->required();
  cmd->add_flag("--json", o->json, "the point map as JSON");
  cmd->add_flag("--nodes", o->nodes,
                "also list every node the graph computes, with the shape a point reads");
  cmd->callback([o, &ctx] {
    const auto model = engine::model_load(o->model);
    std::vector<engine::Hook::Node> nodes;
    const engine::PointMap m = engine::survey_points(model, &nodes);
    if (o->json) {
      nlohmann::json j = engine::to_json(m);
      j["analyses"] = engine::capability_lines(m);
      if (o->nodes) {
        j["nodes"] = nlohmann::json::array();
        for (const auto& n : nodes) {
          j["nodes"].push_back({{"name", n.name}, {"readable", n.readable}, {"width", n.width},
                                {"rows", n.rows}});
        }
      }
      std::cout << j.dump(2) << "\n";
      ctx.exit_code = 0;
      return;
    }
    std::cout << fmt::format("{}: {}, {} layers\n", o->model, m.architecture, m.n_layer);
    for (const std::string& line : m.proofs) std::cout << "  " << line << "\n";
    for (const std::string& line : engine::capability_lines(m)) std::cout << line << "\n";
    if (o->nodes) {
      std::cout << "\nnodes of an 8-token batch with 4 outputs (width x rows; - : no point "
                   "can be read there):\n";
      for (const auto& n : nodes) {
        std::cout << fmt::format("  {:<32} {}\n", n.name,
                                 n.readable ? fmt::format("{} x {}", n.width, n.rows) : "-");
      }
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
