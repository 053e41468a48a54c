// How many threads an arm computes with by default, and how they wait for one another.
//
// On a machine where other work holds cores, threads that spin-wait at every barrier for a core
// another process holds made the default diff 2-5× slower than one thread (issue 45, measured in
// bench/bench_load.cpp). Results are bitwise the same at every thread count and wait policy
// (Threads.ResultsAreBitwiseTheSameAtEveryThreadCountAndWaitPolicy), so both are chosen for time
// alone.
#pragma once
#include <string>

namespace hd::engine {

// The CPUs this process may run on now (affinity: taskset, a cgroup's cpuset, Slurm's
// --cpus-per-task), at most 16: what a setting that must not change from run to run (a floor's
// threads, the demo model's training, a gate reference) takes for 0.
int allowed_cpus();

// What an arm's -t defaults to: allowed_cpus() fewer the CPUs other processes kept busy as this
// process first asked (their share of /proc/stat over 50 ms, rounded; measured once), at least 1.
int default_threads();

// From now on, in this process and the workers it starts, default_threads() is allowed_cpus():
// the parts of a sharded run are merged only where their hosts' threads match (docs/cluster.md),
// so a part's must not follow the load it happened to meet.
void use_every_allowed_cpu();

// Where default_threads() left CPUs to other work: "threads: 1 (of the 2 CPUs this process may
// use, 1 busy with other work as the run started; -t 2 uses them all)"; "" where it did not.
std::string default_threads_note();

// llama.cpp's CPU backend runs its threads with OpenMP (GGML_OPENMP, on in the pinned build),
// whose threads spin at each barrier before they sleep; libgomp reads how long from the
// environment when it loads, before main. So, once, at the start of main: where neither
// OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, the process executes itself again with
// OMP_WAIT_POLICY=passive (threads sleep at once: as fast on an idle machine, and no collapse
// when other work takes a core mid-run). A user's own setting is kept. Returns only when it
// does not execute itself again (set already, or /proc/self/exe cannot be run).
void wait_passively(char** argv);

}  // namespace hd::engine
