// Kernel-time calibration: how long each op's kernel takes on one device of
// this machine, measured on real graphs through a Session (the runtime's own
// act records: the start and end of each compute task), and how much slower
// they run when several devices compute at once on the shared cores. Feeds are
// constants (floating inputs 0.5, integer inputs 0: valid ids and labels);
// variables take their initial values. Every op with FLOPs (OpDef cost) > 0
// gives one time per run; TimeKernels returns each op's median over `reps` runs
// after one warm-up.
//
// TimeKernels runs threads of its own and blocks; call it from one thread.
#pragma once

#include <string>
#include <vector>

#include "graph/op_graph.h"
#include "oneflow_lite/core/proto/cluster.pb.h"
#include "oneflow_lite/core/status.h"

// ToComputeEntries turns the times into the Cluster's compute table
// (cluster.proto ComputeEntry): per (op type, dtype), the times at FLOPs within
// 10 % of each other are one point (median FLOPs, median seconds), and the
// points are made non-decreasing in seconds (pool adjacent violators: a kernel
// never gets faster for more work; what breaks that is noise).

namespace ofl {

struct KernelTimingOptions {
  int num_threads = 1;  // kernel threads of each device (>= 1)
  int reps = 5;         // timed runs (>= 1), after one warm-up
  int concurrent = 1;   // devices running the graph at once (>= 1), each its own Session
};

struct KernelTime {
  std::string op;  // op name
  std::string op_type;
  DataType dtype = DataType::kFloat32;  // the cost model's compute dtype for it
  double flops = 0;                     // OpDef cost on the whole tensors
  double seconds = 0;                   // median over the runs (device 0 when concurrent)
};

// Errors: options out of range, a graph that does not compile or run.
Maybe<std::vector<KernelTime>> TimeKernels(const OpGraph& graph,
                                           const KernelTimingOptions& options);

std::vector<proto::ComputeEntry> ToComputeEntries(const std::vector<KernelTime>& times);

// Sum of seconds over ops present in both (by op name): concurrent / alone.
// 1 when they share none.
double SlowdownRatio(const std::vector<KernelTime>& alone,
                     const std::vector<KernelTime>& concurrent);

}  // namespace ofl
