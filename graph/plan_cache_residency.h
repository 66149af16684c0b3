// Which inputs of a Plan's compute tasks are still in the cache when they
// act: a reuse-distance model over the plan's order. A kernel reads an
// activation its producer wrote moments before from the cache, and the
// weights, optimizer state and saved activations it last touched long
// before from memory; the two take very different times for the same
// shapes (an AdamW update 2.5-4 x its time in repeated runs on an AVX2
// EPYC with 2 processes: in-step acts of the fidelity bench's GPT against
// the kernel alone). plan_task_cost.h adds a cold input's bytes over the
// memory bandwidth to the kernel's time. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oneflow_lite/core/proto/plan.pb.h"

// The model. Per rank, the rank's tasks in plan order (the order the
// lowering emits and each actor thread follows: forward, backward, update)
// each touch their input and output registers' bytes. The reuse distance
// of input register R of task T is the bytes the rank's tasks touched
// between R's last touch before T (its producer's act, or an earlier
// reader's) and T; with no touch before T in the step (a variable read
// first in the forward pass, whose last writer is the previous step's
// update), it wraps around the step: the bytes after R's last touch to the
// step's end, then those before T. R is hot when that distance plus R's own
// bytes fit in `cache_bytes` (the cache one device's kernels have), else
// cold. Each task's residency is one letter per input, in argument order:
// 'h' hot, 'c' cold; "" for a task that is not COMPUTE.

namespace ofl {

// Per task id. cache_bytes > 0.
std::vector<std::string> InputResidency(const proto::Plan& plan, int64_t cache_bytes);

}  // namespace ofl
