// Kernel times at the exact shapes plans run: every distinct compute kernel
// of some Plans (by graph/plan_task_cost.h KernelShapeKey: op type, the
// task's local input shapes and attributes) timed alone on one device, as
// the Cluster's shape entries (cluster.proto ComputeEntry.shape), which
// PriceTasks prefers to the FLOP curve. A split shard (a matmul [B, D] x
// [D, 4D / 2], a conv of a batch shard) runs at its own FLOP rate, which
// whole-tensor probes of the same FLOPs do not show.
//
// TimePlanKernels runs threads of its own (TimeKernels) and blocks; call it
// from one thread. AddShapeEntries is a pure function.
#pragma once

#include <string>
#include <vector>

#include "oneflow_lite/api/calibrate_kernels.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "search/cluster.h"

// TimePlanKernels: one single-op graph and session per distinct key (its
// inputs fed with TimeKernels' constants; one graph of many independent ops
// may run several at once, lengthening each act), the median of its act
// over `reps` runs after one warm-up. Inputs an op writes in place
// (optimizer state) are variables of value 0.5. A kernel without FLOPs is
// not timed (PriceTasks prices it by the bytes it moves); one that does not
// build or run alone is skipped with the reason (an attribute that holds a
// logical shape, e.g. conv2d_grad_weight's weight_shape on a channel
// shard). No contention: entries are one device alone, as the curve's;
// PriceTasks applies the Cluster's contention factor to both. Every input
// is in the cache in these repeated runs; the Cluster's cache model
// (WithCacheModel, graph/plan_cache_residency.h) adds what a task's cold
// inputs cost.

namespace ofl {

struct ShapeTimes {
  std::vector<proto::ComputeEntry> entries;  // op_type, dtype, flops, seconds, shape
  std::vector<std::string> skipped;          // "<op type> <key>: <why>"
};

// Errors: options out of range, a plan task whose key cannot be computed.
Maybe<ShapeTimes> TimePlanKernels(const std::vector<proto::Plan>& plans,
                                  const KernelTimingOptions& options);

// `cluster` with `entries` added; an entry replaces one of the same
// (op_type, dtype, shape). Errors: an entry ComputeTable::FromProto refuses
// (named by its index and field), an entry without a shape.
Maybe<Cluster> AddShapeEntries(const Cluster& cluster,
                               const std::vector<proto::ComputeEntry>& entries);

// The cache model of cluster.proto's DeviceSpec (graph/plan_cache_residency.h).
struct CacheModel {
  int64_t cache_bytes = 0;             // one device's cache
  double memory_read_bytes_per_s = 0;  // one device's reads from memory
};
// This host's: a core's L2 and its share of the L3 (size over the CPUs that
// share it, from sysfs for cpu0: glibc's sysconf reports a whole EPYC
// package's L3 in a guest), 8 MiB when sysfs says nothing; and one thread
// summing a buffer 4 x the L3 (at most 1 GiB; best of 3 passes). Blocks
// for a few hundred milliseconds; thread-safe.
CacheModel MeasureCacheModel();
// `cluster` with `model`. Errors: a figure <= 0 or not finite.
Maybe<Cluster> WithCacheModel(const Cluster& cluster, const CacheModel& model);

}  // namespace ofl
