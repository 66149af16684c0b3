// Runtime: executes a Plan on actors (DESIGN.md section 7): one actor per
// task, one ActorThread per (rank, stream), registers of num_slots buffers
// allocated once per rank by that rank's device Allocator. Run(N) drives N
// iterations through the register handshake (runtime/actor.h) with no
// central scheduler and returns when every actor acted N times and every
// slot came back (end-of-stream draining), or on the first error.
//
// Thread safety: one call at a time (Run, SetVariable, GetVariable); the
// Runtime's own threads are internal.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "oneflow_lite/core/device_context.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/tensor.h"
#include "runtime/actor_kinds.h"
#include "runtime/run_context.h"

//   RuntimeOptions options;
//   options.timeout = std::chrono::seconds(5);
//   auto rt = Runtime::Create(plan, options).value();
//   rt->SetVariable("w", /*rank=*/0, w);
//   RunResult r = rt->Run(3, {{{"x", 0}, x}}, {"loss"}).value();
//   r.fetched[2].at({"loss", 0});  // iteration 2's loss on rank 0
//
// Kernel threads: C = options.num_threads (0: the machine's cores) are
// shared among the N ranks: rank r gets max(1, C / N) threads, plus one for
// r < C % N when C >= N (so the shares add up to C; with C < N every rank
// gets 1, and at most C kernels of all ranks run at once: runtime/
// kernel_slots.h, so N ranks on C < N cores never run N kernels on C cores).
// Each rank's kernels run in a oneTBB task_arena of that size (of
// max(share, k) when k > share streams of the rank run kernels: each such
// stream has a master slot of its own, so none waits for another), and each
// actor thread sets OpenMP (oneDNN) to its rank's share. OpenBLAS has
// one process-wide pool: during a run with N > 1 it is set to the smallest
// share and restored afterwards. ThreadSanitizer builds use one thread per
// rank (those pools are not instrumented).
//
// Waits: every actor thread fails the run when no message reached it for
// options.timeout: "rank 2: task 17 (matmul 'fc1') waited 5000 ms for input
// register 'fc1/out_0'"; collectives time out on their communicator's own
// timeout (keep it below options.timeout, so that a stuck collective is
// reported by its own error rather than by the ranks waiting behind it).
// options.timeout must exceed the longest single act. A failing kernel (it
// throws) or boxing step stops every thread and Run returns its Status; a
// thread blocked in a collective returns when the communicator gives up (its
// timeout, or an abort from on_failure). A kernel that never returns cannot
// be stopped.
//
// Transactional steps (options.transactional, on by default): a Run is
// all-or-nothing for the variables it updates in place (parameters and
// optimizer state). Every persistent register some task writes has an undo
// copy: in its rank's arena, saved by the writing act just before its
// kernel, where the memory plan finds bytes dead by then (host ranks, one
// slot, one writer, runs of one iteration), else in a buffer allocated once
// per rank by that rank's allocator and saved before the actors start (both
// counted in peak_bytes(); undo_bytes() per rank); when the run's outcome is
// an error, what the run saved is copied back after every actor thread
// stopped, iteration() does not advance (dropout replays the same
// masks when the step is retried), and the error of a plan that updates
// variables ends with "(variables and optimizer state restored to their
// values before this run)". The outcome is options.commit(local) when set
// (across processes: the outcome every process agrees on), else the local
// one. runtime/step_undo.h has the mechanism and why it is an undo copy.

namespace ofl {

struct RuntimeOptions {
  // Longest wait for a message (an input, a free slot) before the run fails.
  std::chrono::milliseconds timeout{60000};
  // Non-empty: every Run writes a Chrome trace (chrome://tracing, Perfetto)
  // here: one pid per rank, one tid per stream, one "X" event per act.
  std::string trace_path;
  // Fill RunResult::acts (implied by trace_path).
  bool record_acts = false;
  // Fail the run at the first COMPUTE task whose output holds a NaN or Inf,
  // naming the op and the element (a scan of every output: off by default).
  // Runtime::set_detect_anomaly changes it between runs.
  bool detect_anomaly = false;
  // Kernel threads for all ranks of this process together; 0 = every core.
  int num_threads = 0;
  // The process this runtime is (DESIGN.md section 7b): it allocates, builds
  // and runs only the ranks Plan.process_of_rank gives it; the other ranks'
  // tasks run in their own processes and meet this one's only through the
  // communicators of BOXING tasks.
  int64_t process = 0;
  // How long an idle actor thread polls its mailbox before it sleeps.
  int spin_us = 0;
  // Runs BOXING tasks; required when the plan has any.
  BoxingFn boxing;
  // Makes the DeviceContext of each local rank's device (the Plan's); empty:
  // CreateDeviceContext (oneflow_lite/core/device_backend.h: CPU, and every
  // backend the build registered, CUDA where it is compiled). Tests that
  // watch the streams and events plug in here.
  std::function<Maybe<std::unique_ptr<DeviceContext>>(const Device&)> make_device;
  // Called once when a run fails, on the thread that failed it, with the
  // error: e.g. to abort the communicators, so that ranks blocked in a
  // collective return now rather than at the collective's timeout.
  std::function<void(const Status&)> on_failure;
  // Keep an undo copy of the updated variables and restore it when a run
  // fails (see the notes before the namespace). Off: no undo bytes, and a failed run
  // may leave some variables updated; its error then ends with "(state may
  // be partially updated: transactional steps are off)".
  bool transactional = true;
  // Called once per Run that started its actors (not when feeds or fetches
  // are refused first), after every local actor thread stopped, with this
  // process's outcome; returns the outcome all processes agree on (e.g. a
  // vote through the rendezvous store). An error restores the undo copy even
  // when the local run succeeded, and Run returns it (no fetched values); an
  // OK for a failed local run keeps the local error. Empty: the local outcome.
  std::function<Status(const Status& local)> commit;
  // Registers of a host rank that the dataflow orders share one arena
  // (runtime/memory_plan.h); off: every register has its own buffer.
  bool plan_memory = true;
};

// A tensor of one rank: a fed input, a fetched value, a variable.
struct TensorKey {
  std::string name;
  int64_t rank = 0;
  bool operator<(const TensorKey& o) const {
    return rank != o.rank ? rank < o.rank : name < o.name;
  }
  bool operator==(const TensorKey& o) const { return rank == o.rank && name == o.name; }
};
using TensorMap = std::map<TensorKey, Tensor>;

struct RunResult {
  // fetched[i][{name, rank}]: iteration i's value on every rank that has it.
  std::vector<TensorMap> fetched;
  std::vector<int64_t> peak_bytes;  // per rank: every register slot's bytes
  std::vector<int64_t> act_counts;  // per task (task ids are plan positions), in this run
  std::vector<ActRecord> acts;      // when recorded: every act, by start time
};

class Runtime {
 public:
  // Validates the plan (register producers, task arity, kernels, boxing
  // hook), allocates every register and starts the actor threads.
  static Maybe<std::unique_ptr<Runtime>> Create(const proto::Plan& plan,
                                                RuntimeOptions options = {});
  ~Runtime();

  // Runs `num_iterations` iterations (iteration() advances by that many when
  // the run succeeds; a failed run restores the variables and leaves
  // iteration() as it was when transactional, see the notes before the namespace;
  // otherwise iteration() advances and variables may hold a partial
  // update). `feeds`:
  // one map per iteration, or one map reused for every iteration (or none
  // when the plan has no SOURCE); every SOURCE task (name = op_conf.name,
  // rank) must be fed a tensor of its register's shape and dtype. `fetches`
  // name SINK tasks (their op_conf name or their input register's name) or
  // non-persistent registers; each is fetched on every rank that has it.
  Maybe<RunResult> Run(int64_t num_iterations, const std::vector<TensorMap>& feeds,
                       const std::vector<std::string>& fetches);

  Status SetVariable(const std::string& name, int64_t rank, const Tensor& value);
  Maybe<Tensor> GetVariable(const std::string& name, int64_t rank) const;  // a copy
  std::vector<TensorKey> VariableKeys() const;

  void set_detect_anomaly(bool on);  // between runs (RuntimeOptions::detect_anomaly)

  int64_t num_ranks() const { return plan_.num_ranks(); }
  const std::vector<int64_t>& local_ranks() const;  // this process's ranks
  int64_t iteration() const { return iteration_; }  // iterations run so far
  // Sets iteration() between runs (not during one): where the random ops'
  // stream continues, e.g. a checkpoint's saved position. Must be >= 0.
  Status SetIteration(int64_t iteration);
  int kernel_threads(int64_t rank) const { return shares_.at(rank); }  // 0: not local
  std::vector<int64_t> peak_bytes() const;
  std::vector<int64_t> live_bytes() const;
  // Per rank: the bytes the undo copy adds (0 when not transactional): its
  // own buffers plus what it grew the arena by; part of peak_bytes() and
  // live_bytes().
  std::vector<int64_t> undo_bytes() const;

 private:
  struct Impl;
  Runtime();
  Status Build(RuntimeOptions options);
  Status PrepareFeeds(int64_t num_iterations, const std::vector<TensorMap>& feeds);
  Status PrepareFetches(const std::vector<std::string>& fetches, int64_t num_iterations);

  proto::Plan plan_;
  std::vector<int> shares_;
  int64_t iteration_ = 0;
  std::unique_ptr<Impl> impl_;
};

// Rank `rank`'s share of `cores` kernel threads among `num_ranks` ranks.
int KernelShare(int cores, int64_t num_ranks, int64_t rank);

}  // namespace ofl
