// Task times of a Plan from a Cluster: what plan_simulation.h is fed with
// (DESIGN.md section 6): compute from the kernel table or FLOP/s, ops without
// FLOPs by the bytes they move over memory bandwidth, collectives by
// search/'s CollectiveSeconds, a fixed cost per boxing act. No correction
// factor. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/status.h"
#include "search/cluster.h"

// Task times of a Plan from a Cluster: what plan_simulation.h is fed with
// (DESIGN.md section 6). Per task, one act's seconds:
//  - COMPUTE: the kernel's own measured time when the Cluster's kernel
//    table holds an entry of its shape key (KernelShapeKey: the op type's
//    entry at exactly these input shapes and attributes; a split shard runs
//    at its own FLOP rate, not the whole tensor's), else the op's FLOPs on
//    its physical shapes (the registry's estimate, OpDef::EstimateCost on
//    the task's input registers) priced by the kernel table's curve
//    (search/compute_table.h) when it lists the op type and dtype, else by
//    the FLOP/s figure; an op without FLOPs
//    (reshape, transpose, slice, concat, cast, copies) reads and writes its
//    output's bytes once each (2 x its output registers' bytes) over
//    `memory_bandwidth`, plus `kernel_overhead_s`. Then x the Cluster's
//    contention factor for the ranks of the plan that compute in one
//    innermost group. (A reshape the runtime's memory plan turns into a
//    view copies nothing: api/step_simulation.h knows which.) With the
//    Cluster's cache model (cache_bytes > 0), a kernel with FLOPs also
//    reads its cold inputs (plan_cache_residency.h) from memory: their
//    bytes over the Cluster's memory_read_bytes_per_s (the table's times
//    are of repeated runs, every input in the cache).
//  - BOXING: a collective (group of 2 or more) takes
//    search/'s CollectiveSeconds(kind, bytes this rank sends, group size,
//    the innermost level whose groups hold the whole group), the bytes by
//    DESIGN.md section 5's ring rules from the task's registers (a
//    SEND_RECV: its sends' boxes to other ranks); local steps (slice,
//    zero-fill, identity) copy their bytes over `memory_bandwidth`; every
//    boxing act adds `boxing_overhead_s` (its actor, a bucket's pack).
//  - SOURCE, ACC: bytes over `memory_bandwidth` (a copy, a sum); VARIABLE,
//    SINK: 0.
// No correction factor. Category of a task, for the explain breakdown: the
// op type, "boxing <kind>" ("boxing all_reduce"), or the kind ("source").
// Pure functions; thread-safe.

namespace ofl {

struct TaskCostOptions {
  double memory_bandwidth = 10e9;  // bytes per second a copy moves (read + write counted)
  double boxing_overhead_s = 0;    // fixed seconds per boxing act
  double kernel_overhead_s = 0;    // fixed seconds per kernel priced by memory bandwidth
};

struct TaskCost {
  double seconds = 0;
  std::string category;
  double flops = 0;        // COMPUTE: the op's FLOPs on this rank's shapes
  int64_t bytes = 0;       // BOXING: bytes this rank sends; copies: bytes moved
  bool tabled = false;     // priced from the kernel table
  bool exact = false;      // ... from an entry of its own shape key
  int64_t cold_bytes = 0;  // COMPUTE: inputs read from memory (the Cluster's cache model)
};

// A compute task's shape key: its inputs' dtypes and shapes, in argument
// order, then its complete attributes, e.g.
// "float32(512, 128) float32(128, 192) {transpose_a=false, transpose_b=false}".
// The key of ComputeEntry.shape; api/calibrate_kernels.h times kernels by it.
// Errors: not a COMPUTE task, an op type the registry does not know, a
// register desc that does not parse.
Maybe<std::string> KernelShapeKey(const proto::Plan& plan, const proto::TaskProto& task);
// A compute task's FLOPs as PriceTasks counts them (0: priced by bytes).
// Errors as KernelShapeKey's.
Maybe<double> KernelFlops(const proto::Plan& plan, const proto::TaskProto& task);

// Errors: an op type the registry does not know, a register desc that does
// not parse, a cluster that cannot run the plan's group sizes, all named
// with the task.
Maybe<std::vector<TaskCost>> PriceTasks(const proto::Plan& plan, const Cluster& cluster,
                                        const TaskCostOptions& options);

// The categories of PriceTasks without pricing (for a measured trace).
std::string TaskCategory(const proto::TaskProto& task);

}  // namespace ofl
