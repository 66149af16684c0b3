// What a DistributedSession exchanges with the other processes of its world
// besides tensor traffic (which goes through the boxing communicators):
// rank tensors (fetched values, variables read back) packed into bytes and
// gathered through the world's store, and the plan-hash check at start.
// Free functions; thread safety as ProcessWorld's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/tensor.h"
#include "runtime/process_world.h"
#include "runtime/runtime.h"

namespace ofl {

std::vector<char> PackTensors(const TensorMap& tensors);
Maybe<TensorMap> UnpackTensors(const std::vector<char>& bytes);

// Every process's `mine`, merged (keys are (name, rank): no two processes
// hold the same). `name` must be new (see ProcessWorld::AllGather).
Maybe<TensorMap> GatherTensors(ProcessWorld* world, const std::string& name, const TensorMap& mine,
                               const std::string& scope = "");

// One hash per task (deterministic serialisation), then one for the
// registers and the rank-to-process map.
std::vector<uint64_t> PlanHashes(const proto::Plan& plan);

// Every process compares its plan's hashes with process 0's; a mismatch is
// the same error on every process, naming the first process and task that
// differ ("plan mismatch: process 1's plan differs from process 0's at task
// 17 (matmul 'fc1' on rank 2) ..."). `name` must be new.
Status CheckSamePlan(ProcessWorld* world, const std::string& name, const proto::Plan& plan);

// Every process compares a hash of each variable's initial value with
// process 0's (a checksum, not a broadcast: processes that build different
// weights, e.g. from another seed, are a bug to report, and hashing costs no
// traffic); a mismatch is the same error on every process, naming the first
// variable and process that differ. `name` must be new.
Status CheckSameValues(ProcessWorld* world, const std::string& name,
                       const std::vector<std::pair<std::string, Tensor>>& values);

// Sets the failure key of the job `options` names (its store, job id and
// timeout) to `reason` unless a loss is recorded there already: the
// launcher's report of a child that died (ProcessWorld::ReportLost).
Status ReportLostProcess(const WorldOptions& options, const std::string& reason);

}  // namespace ofl
