// heterodyne slurm diff|sweep <its flags> --shards N [--partition P] [--gres G] [--time T] …
//                  [--dry-run] [--force] -o run.hdy
// Writes the job-array script of N shards and the merge job's (run/slurm_jobs.h) next to the
// output, submits both with sbatch (the merge afterok on the array) and says how to follow
// them. Slurm's own options may stand anywhere on the line, before or after the command's.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "kinds/registry.h"
#include "common/output_file.h"
#include "errors.h"
#include "run/shard.h"
#include "run/slurm_jobs.h"
#include "store/experiment.h"

extern char** environ;

namespace hd::cli {

namespace fs = std::filesystem;

namespace {

struct SlurmOpts {
  int shards = 0;
  std::string out, partition, gres, time, account, qos, mem, cpus;
  std::vector<std::string> sbatch_args;
  bool dry_run = false, force = false, allow_mixed_hosts = false;
};

// One option of slurm's own: a value (`value`), a repeated value (`many`) or a flag.
struct Owned {
  std::string names;  // CLI11's spelling: "-o,--output"
  std::string help;
  std::string* value = nullptr;
  std::vector<std::string>* many = nullptr;
  bool* flag = nullptr;
};

std::vector<Owned> owned_options(SlurmOpts& o, std::string& shards) {
  return {
      {"-o,--output", "the merged experiment; parts, scripts and logs go to <output>.parts/",
       &o.out},
      {"--shards", "how many shards (tasks of the job array)", &shards},
      {"--partition", "sbatch --partition for every job", &o.partition},
      {"--gres", "sbatch --gres for the shards (gpu:1): the merge needs none", &o.gres},
      {"--time", "sbatch --time for every job (2:00:00)", &o.time},
      {"--account", "sbatch --account", &o.account},
      {"--qos", "sbatch --qos", &o.qos},
      {"--mem", "sbatch --mem for every job", &o.mem},
      {"--cpus-per-task", "sbatch --cpus-per-task for the shards", &o.cpus},
      {"--sbatch-arg", "any other sbatch option for every job (--sbatch-arg=--exclusive)", nullptr,
       &o.sbatch_args},
      {"--dry-run", "print both scripts and submit nothing", nullptr, nullptr, &o.dry_run},
      {"--force", "replace an existing output, and the scripts and parts of another run",
       nullptr, nullptr, &o.force},
      {"--allow-mixed-hosts", "let the merge join parts from unlike hosts (recorded)", nullptr,
       nullptr, &o.allow_mixed_hosts},
  };
}

// Takes slurm's own options out of the command's flags, wherever they stand.
std::vector<std::string> take_owned(const std::vector<std::string>& args,
                                    const std::vector<Owned>& owned) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const Owned* hit = nullptr;
    for (const Owned& o : owned) {
      std::stringstream names(o.names);
      for (std::string n; std::getline(names, n, ',');) {
        if (n == name && name.size() > 1) hit = &o;
      }
    }
    if (!hit) {
      rest.push_back(a);
      continue;
    }
    if (hit->flag) {
      if (eq != std::string::npos) throw InputError(name + " takes no value");
      *hit->flag = true;
      continue;
    }
    std::string v;
    if (eq != std::string::npos) {
      v = a.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      v = args[++i];
    } else {
      throw InputError(name + " needs a value");
    }
    if (hit->many) {
      hit->many->push_back(v);
    } else {
      *hit->value = v;
    }
  }
  return rest;
}

// The flags whose values are paths, made absolute in the scripts: a node reads them at the
// path the submitting host gave, whatever folder the job starts in (docs/cluster.md).
bool names_a_path(const std::string& flag) {
  for (const char* f : {"--a", "--b", "-f", "--text-file", "--tokens"}) {
    if (flag == f) return true;
  }
  return false;
}
bool names_a_build(const std::string& flag) {
  return flag == "--llama-build" || flag == "--a-llama-build" || flag == "--b-llama-build";
}

std::string absolute(const std::string& path) {
  if (path.empty() || path == "-") return path;
  return fs::absolute(path).lexically_normal().string();
}

// A build spec's source, when it is a folder or a worker executable (not pinned, not npm:).
std::string absolute_build(const std::string& spec) {
  const size_t comma = spec.find(',');
  const std::string source = spec.substr(0, comma);
  if (source == "pinned" || source.rfind("npm:", 0) == 0 || source.empty()) return spec;
  return absolute(source) + (comma == std::string::npos ? "" : spec.substr(comma));
}

std::vector<std::string> with_absolute_paths(std::vector<std::string> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& a = args[i];
    const size_t eq = a.find('=');
    const std::string flag = a.substr(0, eq);
    const auto fix = [&](const std::string& v) {
      return names_a_build(flag) ? absolute_build(v) : absolute(v);
    };
    if (!names_a_path(flag) && !names_a_build(flag)) {
      if (a.size() > 2 && a.rfind("-f", 0) == 0 && a[2] != '-') a = "-f" + absolute(a.substr(2));
      continue;
    }
    if (eq != std::string::npos) {
      a = flag + "=" + fix(a.substr(eq + 1));
    } else if (i + 1 < args.size()) {
      args[i + 1] = fix(args[i + 1]);
      ++i;
    }
  }
  return args;
}

// "diff or a sweep": the kinds whose runs shard, as the message names them.
std::string sharded_kind_names() {
  std::vector<std::string> names;
  for (const auto& k : kinds::run_kinds()) {
    if (k->sharding()) names.emplace_back(k->name());
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or a " : ", a ") + names[i];
  return out;
}

// The command's flags, parsed and checked as the command would (nothing runs).
void check_command(const std::string& command, std::vector<std::string> args,
                   const std::string& part, int shards) {
  for (const auto& a : args) {
    const std::string name = a.substr(0, a.find('='));
    if (name == "--shard" || name == "--resume") {
      throw InputError(name + ": heterodyne slurm sets it for every task itself");
    }
  }
  CLI::App app;
  Context ctx;
  ctx.plan_only = true;
  kinds::kind_named(command)->add_command(app, ctx);
  args.insert(args.begin(), {"heterodyne", command});
  for (const char* a : {"-o", part.c_str(), "--shard"}) args.push_back(a);
  args.push_back("0/" + std::to_string(shards));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    throw InputError(command + ": " + e.what());
  }
}

// Runs a program (sbatch) and returns its exit status and what it printed, both streams.
std::pair<int, std::string> run_program(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) throw RuntimeError("cannot make a pipe for " + args[0]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0].c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; rc == 0 && (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(fds[0]);
  if (rc != 0) {
    throw InputError(args[0] + " not found: is this a Slurm login node? (--dry-run prints the "
                     "scripts without submitting them)");
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, out};
}

// sbatch --parsable: "<id>[;cluster]"; the job id.
std::string submit(std::vector<std::string> args) {
  args.insert(args.begin(), {"sbatch", "--parsable"});
  const auto [status, out] = run_program(args);
  const std::string first = out.substr(0, out.find('\n'));
  if (status != 0 || first.empty()) {
    throw RuntimeError("sbatch " + args.back() + " failed: " + (first.empty() ? "no job id" : first));
  }
  return first.substr(0, first.find(';'));
}

run::SlurmPlan plan_of(const SlurmOpts& o, const std::string& command,
                       const std::vector<std::string>& args) {
  run::SlurmPlan p;
  p.heterodyne = fs::canonical("/proc/self/exe").string();
  p.command = command;
  p.args = with_absolute_paths(args);
  p.shards = o.shards;
  p.out = fs::absolute(o.out).lexically_normal().string();
  p.workdir = fs::current_path().string();
  for (const auto& [flag, v] : {std::pair{"--partition", o.partition}, {"--time", o.time},
                                {"--account", o.account}, {"--qos", o.qos}, {"--mem", o.mem}}) {
    if (!v.empty()) p.sbatch.push_back(std::string(flag) + "=" + v);
  }
  for (const auto& a : o.sbatch_args) p.sbatch.push_back(a);
  if (!o.gres.empty()) p.shard_only.push_back("--gres=" + o.gres);
  if (!o.cpus.empty()) p.shard_only.push_back("--cpus-per-task=" + o.cpus);
  p.force = o.force;
  p.allow_mixed_hosts = o.allow_mixed_hosts;
  return p;
}

// The parts folder, with this run's scripts. A run is its scripts without their #SBATCH lines:
// the same run with other scheduling (a longer --time after a TIMEOUT, another partition) keeps
// its parts. Another run's: refused, or with --force replaced, its parts removed.
void write_scripts(const run::SlurmPlan& p, const std::string& shards, const std::string& merge,
                   bool force) {
  const std::string dir = run::parts_dir(p);
  const std::string script = dir + "/shards.sbatch";
  if (fs::exists(script)) {
    std::ifstream in(script);
    const std::string was((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const bool another_run = run::run_lines(was) != run::run_lines(shards);
    if (another_run && !force) {
      throw InputError("'" + dir + "' holds the jobs of another run (its shards.sbatch runs "
                       "other commands): --force replaces them and removes their parts");
    }
    if (another_run) {
      for (const auto& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("part-", 0) == 0 && e.is_regular_file()) fs::remove(e.path());
      }
    }
  }
  fs::create_directories(dir + "/logs");
  write_output_file(script, shards, OutputPolicy(true));
  write_output_file(dir + "/merge.sbatch", merge, OutputPolicy(true));
}

// The shards whose parts still have work, as sbatch's --array takes them ("1,4-6"); "" when
// every part is complete and verified.
std::string shards_to_run(const run::SlurmPlan& p) {
  std::vector<int> todo;
  for (int k = 0; k < p.shards; ++k) {
    if (run::part_needs_work(run::part_path(p, k), {k, p.shards})) todo.push_back(k);
  }
  std::string list;
  for (size_t i = 0; i < todo.size();) {
    size_t j = i;
    while (j + 1 < todo.size() && todo[j + 1] == todo[j] + 1) ++j;
    list += (list.empty() ? "" : ",") + std::to_string(todo[i]) +
            (j > i ? "-" + std::to_string(todo[j]) : "");
    i = j + 1;
  }
  return list;
}

}  // namespace

void add_slurm(CLI::App& app, Context& /*ctx*/) {
  auto o = std::make_shared<SlurmOpts>();
  auto shards = std::make_shared<std::string>();
  auto owned = std::make_shared<std::vector<Owned>>(owned_options(*o, *shards));
  CLI::App* cmd = app.add_subcommand(
      "slurm", "run a diff, sweep or generate as shards of a Slurm job array, merged by a job after them");
  for (const Owned& w : *owned) {
    if (w.flag) cmd->add_flag(w.names, *w.flag, w.help);
    else if (w.many) cmd->add_option(w.names, *w.many, w.help);
    else cmd->add_option(w.names, *w.value, w.help);
  }
  cmd->prefix_command();  // from the command on, the words are the command's (and slurm's)
  cmd->footer("Example: heterodyne slurm diff --a f16.gguf --b-quant Q4_K_M -f t.txt --components "
              "--shards 16 --gres gpu:1 -o run.hdy (docs/cluster.md)");
  cmd->callback([o, shards, owned, cmd] {
    std::vector<std::string> words = cmd->remaining();
    const kinds::RunKind* kind = words.empty() ? nullptr : kinds::kind_named(words.front());
    if (kind == nullptr || kind->sharding() == nullptr) {
      throw InputError("heterodyne slurm runs a " + sharded_kind_names() +
                       ": heterodyne slurm diff <diff's flags> --shards N -o run.hdy");
    }
    const std::string command = words.front();
    const auto args = take_owned({words.begin() + 1, words.end()}, *owned);
    if (shards->empty()) throw InputError("slurm needs --shards N");
    const size_t bad = shards->find_first_not_of("0123456789");
    if (bad != std::string::npos || shards->size() > 6 || std::stoi(*shards) < 1) {
      throw InputError("--shards '" + *shards + "': a whole number from 1 to 100000");
    }
    o->shards = std::stoi(*shards);
    if (o->shards > run::kMaxSlurmShards) {
      throw InputError(fmt::format(
          "--shards {}: at most {}, because the merged file keeps a record of every part (about "
          "1 KB each) and a reader takes at most {} MiB from one stored field",
          o->shards, run::kMaxSlurmShards, store::kMaxFieldBytes >> 20));
    }
    if (o->out.empty()) throw InputError("slurm needs -o FILE.hdy, the merged experiment");
    const run::SlurmPlan p = plan_of(*o, command, args);
    check_command(command, args, run::part_path(p, 0), p.shards);
    check_output_path(p.out, OutputPolicy(o->force));
    const std::string shard_text = run::shards_script(p), merge_text = run::merge_script(p);
    if (o->dry_run) {
      std::cout << "# " << run::parts_dir(p) << "/shards.sbatch\n" << shard_text << "\n# "
                << run::parts_dir(p) << "/merge.sbatch\n" << merge_text;
      return;
    }
    write_scripts(p, shard_text, merge_text, o->force);
    const std::string dir = run::parts_dir(p);
    // Only the shards with work left: a complete, verified part is never run or touched again.
    const std::string todo = shards_to_run(p);
    if (todo.empty()) {
      const std::string merge = submit({dir + "/merge.sbatch"});
      std::cout << fmt::format("every part of the {} shards is complete and verified\n"
                               "submitted job {}: merge into {}\nfollow: squeue -j {}   logs: {}/logs/\n",
                               p.shards, merge, p.out, merge, dir);
      return;
    }
    const std::string array = submit({"--array=" + todo, dir + "/shards.sbatch"});
    const std::string merge = submit({"--dependency=afterok:" + array, "--kill-on-invalid-dep=yes",
                                      dir + "/merge.sbatch"});
    const std::string which =
        todo == fmt::format("0-{}", p.shards - 1) || (p.shards == 1 && todo == "0")
            ? fmt::format("{} shards", p.shards)
            : fmt::format("shards {} of {} (the others are complete)", todo, p.shards);
    std::cout << fmt::format(
        "submitted job {}: {} of heterodyne {} (array {})\n"
        "submitted job {}: merge into {} once every shard has succeeded\n"
        "follow: squeue -j {},{}   logs: {}/logs/\n"
        "a shard that fails or is cancelled cancels the merge: run this command again to "
        "resubmit the shards with work left (stored chunks are kept)\n",
        array, which, command, todo, merge, p.out, array, merge, dir);
  });
}

}  // namespace hd::cli
