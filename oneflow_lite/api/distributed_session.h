// DistributedSession: the one session class. A logical graph compiled for a
// placement under a Strategy (graph/distributed_lowering.h, the one lowering)
// and run by the actor runtime on every rank: virtual devices of this process,
// CPU or CUDA, and of other processes (options.world). One device is the
// one-rank case (api/session.h: Session). The caller speaks in logical tensors:
// feeds and variables are sliced per rank by their NdSbp, fetches and variables
// are assembled back (S parts placed, P addends summed, B taken once). It also
// reports the bytes each rank's communicators sent and each rank's peak bytes.
// One call at a time (a Run while another is in progress fails with an
// error); the runtime's threads are internal.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/distributed_lowering.h"
#include "graph/strategy.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/slicing.h"
#include "runtime/boxing.h"
#include "runtime/runtime.h"

// Pipelines: the Strategy may put ops on several placements (stages);
// micro_batches = k > 1 runs k micro-batches per optimizer step with the
// gradients accumulated (their mean) before the update: the graph is built for
// one micro-batch, RunStep takes the k micro-batches' feeds of a step and
// returns each micro-batch's fetches. Dropout and other random ops draw per
// micro-batch (the kernel's iteration is the micro-batch counter). A run that
// fails on one rank (a kernel rejecting a value) stops every rank: the
// communicators are aborted, and reset before the next run, and (transactional,
// the default) every variable is as before the run. Several processes
// (options.world): every process creates the same session (same graph,
// strategy, fetches and options, in the same order as its other sessions);
// Create compares the plans' hashes and fails on every process naming the first
// task that differs. Each process builds and runs only its own ranks; feeds are
// the logical values (every process feeds the same global batch; each slices
// its ranks' parts); fetches and GetVariable come back whole on every process
// (the parts travel through the world's store), so Run, RunStep and GetVariable
// are collective: every process calls them alike. A step commits only when
// every process succeeded (a vote through the store after the run); a lost
// process or a failure anywhere fails the step on every process, naming it.
// Sharded checkpoints use the per-rank view: LocalRanks, VariableLayoutOf
// (every rank's slice of a variable, whichever process holds it) and
// Get/SetVariableSlice (one local rank's slice, no gathering).

namespace ofl {

struct DistributedOptions {
  int num_threads = 0;  // kernel threads shared by all ranks; 0 = every core
  std::chrono::milliseconds timeout{60000};
  std::string trace_path;  // non-empty: write a Chrome trace of each run
  int64_t num_slots = 2;
  int64_t micro_batches = 1;  // k: micro-batches per optimizer step
  // The processes the placement spans (runtime/process_world.h): process p
  // owns ranks [p*K, (p+1)*K), K = devices_per_process. Null: a world of
  // one process that owns every rank (N virtual devices).
  std::shared_ptr<ProcessWorld> world;
  // A failed run restores every variable (RuntimeOptions::transactional).
  bool transactional = true;
  // Several processes: each feeds only its part of every input's axis 0
  // (process p: balanced part p of the global batch over the processes), not
  // the global batch; the layout must keep each rank's rows inside its
  // process's part (a batch split over the ranks in process order).
  bool local_feeds = false;
  // Data-parallel gradients' all-reduces fused into buckets of this many
  // bytes (LoweringOptions::gradient_bucket_bytes); 0: each on its own.
  int64_t gradient_bucket_bytes = int64_t{25} << 20;
  // Registers the dataflow orders share one arena (RuntimeOptions::plan_memory).
  bool plan_memory = true;
  // Every run keeps its acts for last_acts() (RuntimeOptions::record_acts).
  bool record_acts = false;
  // Single-rank ops: a matmul and the bias_add that alone reads it run as one
  // matmul_bias task (LoweringOptions::fuse_matmul_bias).
  bool fuse_matmul_bias = false;
};

// The lowering DistributedSession::Create uses for `options` (also what
// api/memory_estimate.h lowers, so the two plans cannot differ).
LoweringOptions SessionLowering(const DistributedOptions& options);

// This process's world from the launcher's environment (WORLD_SIZE, RANK,
// MASTER_ADDR, MASTER_PORT, OFL_JOB_ID, OFL_DEVICES_PER_PROCESS, ...): made
// once per process (process 0 then hosts the store) and shared by its
// sessions; a world of one process when WORLD_SIZE is unset or 1.
Maybe<std::shared_ptr<ProcessWorld>> WorldFromEnvironment();
// Where a variable lives: logical shape and dtype, NdSbp, placement, and the
// slice of every rank of the placement (SliceOf), in placement order.
// primary[i]: rank i's slice is the one copy a checkpoint stores (coordinate
// 0 on every B axis, as Assemble takes it); P slices are all primary (addends).
struct VariableLayout {
  Shape shape;
  DataType dtype = DataType::kFloat32;
  NdSbp nd_sbp;
  Placement placement;
  std::vector<TensorSlice> slices;
  std::vector<bool> primary;
};

class DistributedSession {
 public:
  // `fetches`: the tensors a SINK task takes as the step runs (a variable
  // named here: its value as the step read it).
  static Maybe<std::unique_ptr<DistributedSession>> Create(const OpGraph& graph,
                                                           const Strategy& strategy,
                                                           const std::vector<std::string>& fetches,
                                                           const DistributedOptions& options = {});
  virtual ~DistributedSession();

  // One step of one micro-batch (micro_batches must be 1).
  Status Run(const std::map<std::string, Tensor>& feeds, const std::vector<std::string>& fetches,
             std::vector<Tensor>* results);
  // One optimizer step: feeds[m] feeds micro-batch m (micro_batches maps: every
  // input, by name, of its logical shape and dtype); (*results)[m][f] is fetch
  // f of micro-batch m (an empty tensor for a tensor made once per step, except
  // in the last micro-batch). A fetch is any tensor of the graph: one named at
  // Create from its SINK task, another variable as it is after the step, any
  // other tensor from the task that made it.
  Status RunStep(const std::vector<std::map<std::string, Tensor>>& feeds,
                 const std::vector<std::string>& fetches,
                 std::vector<std::vector<Tensor>>* results);
  int64_t micro_batches() const { return micro_batches_; }
  // The random stream's position: micro-batches run so far (failed steps not
  // counted when transactional), from which dropout draws its masks. A
  // checkpoint saves it; SetIteration (not during a run; each process sets its
  // own, to the same value) makes the next step draw what a session that had
  // run that many micro-batches would.
  int64_t iteration() const { return runtime_->iteration(); }
  Status SetIteration(int64_t iteration);
  // Runs fail at the first op whose output holds a NaN or Inf, naming it.
  void set_detect_anomaly(bool on) { runtime_->set_detect_anomaly(on); }
  Maybe<Tensor> GetVariable(const std::string& name) const;          // collective (see above)
  Status SetVariable(const std::string& name, const Tensor& value);  // this process's ranks
  // This process's ranks of the plan (every rank in a world of one process).
  const std::vector<int64_t>& LocalRanks() const { return runtime_->local_ranks(); }
  ProcessWorld* world() const { return world_.get(); }
  Maybe<VariableLayout> VariableLayoutOf(const std::string& name) const;
  // One local rank's slice of a variable (its physical tensor), and setting
  // it; errors name the variable, the rank, and the expected and given
  // shape and dtype.
  Maybe<Tensor> GetVariableSlice(const std::string& name, int64_t rank) const;
  Status SetVariableSlice(const std::string& name, int64_t rank, const Tensor& value);

  const proto::Plan& plan() const { return plan_; }
  const Strategy& strategy() const { return strategy_; }
  const OpGraph& graph() const { return graph_; }
  std::string StrategyDot() const;  // the strategy as Graphviz DOT (graph/strategy_dot.h)
  std::map<int64_t, int64_t> BytesSentByRank() const { return groups_->BytesSentByRank(); }
  std::vector<int64_t> PeakBytes() const { return runtime_->peak_bytes(); }
  // Per rank: the undo copy of transactional steps (part of PeakBytes).
  std::vector<int64_t> UndoBytes() const { return runtime_->undo_bytes(); }
  int kernel_threads(int64_t rank) const { return runtime_->kernel_threads(rank); }
  // The acts of the last run when DistributedOptions::record_acts (task ids
  // index plan().tasks()); else empty.
  const std::vector<ActRecord>& last_acts() const { return last_acts_; }

 protected:
  DistributedSession() = default;
  // Create's steps, in order: lowers, joins the world, starts the runtime,
  // sets the variables' initial values.
  Status Init(const OpGraph& graph, const Strategy& strategy,
              const std::vector<std::string>& fetches, const DistributedOptions& options);

 private:
  // Several processes: each rank's process in the plan, this session's name
  // in the store, and the plans' hashes compared.
  Status JoinWorld(const DistributedOptions& options);
  Status StartRuntime(const DistributedOptions& options);
  Status SetInitialVariables();
  // The feeds of every micro-batch, checked, as each local rank's parts.
  Maybe<std::vector<TensorMap>> SliceFeeds(
      const std::vector<std::map<std::string, Tensor>>& feeds) const;
  // (*results)[m]: `fetches` of micro-batch m, assembled from the run's
  // parts (`run`) or, for variables read after the step, GetVariable.
  Status AssembleFetches(const std::vector<std::string>& fetches, RunResult* run,
                         std::vector<std::vector<Tensor>>* results);
  bool ReadAfterStep(const std::string& fetch) const;
  Maybe<Tensor> Assemble(const std::string& name, const std::map<int64_t, Tensor>& parts) const;
  // Runs the steps' iterations with the world's failure watch (the runtime's
  // commit hook votes).
  Status Vote(const Status& local);  // the commit point across processes
  Maybe<RunResult> RunAndVote(const std::vector<TensorMap>& feeds,
                              const std::vector<std::string>& fetches);
  bool IsLocal(int64_t rank) const;
  // This process's ranks' parts of `given`: the logical value, or with
  // local_rows this process's rows of it (DistributedOptions::local_feeds).
  Maybe<std::map<int64_t, Tensor>> Slice(const std::string& name, const Tensor& given,
                                         bool local_rows) const;
  // The register of `name`'s slice on local `rank`; errors name both.
  Maybe<const proto::RegisterDesc*> VariableRegister(const std::string& name, int64_t rank) const;

  OpGraph graph_;
  Strategy strategy_;
  proto::Plan plan_;
  std::vector<std::string> fetches_;
  int64_t micro_batches_ = 1;
  std::shared_ptr<ProcessWorld> world_;  // null: one process
  std::string name_;                     // "s<k>": this session's keys in the world's store
  bool local_feeds_ = false;
  std::unique_ptr<BoxingGroups> groups_;
  std::unique_ptr<Runtime> runtime_;
  std::map<std::string, std::vector<const proto::RegisterDesc*>> source_registers_;
  std::mutex run_mutex_;  // held by RunStep: a second thread's run fails
  std::mutex scope_mu_;   // guards scope_ (read by the runtime's failure hook)
  std::string scope_;     // the running step's key scope
  std::vector<ActRecord> last_acts_;
};

}  // namespace ofl
