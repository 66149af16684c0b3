// Collective calibration across processes (calibrate_processes.h).
#include "oneflow_lite/api/calibrate_processes.h"

#include <chrono>
#include <cstdlib>

#include "runtime/gloo_communicator.h"
#include "runtime/process_world.h"

namespace ofl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr CollectiveKind kKinds[] = {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter,
                                     CollectiveKind::kAllGather, CollectiveKind::kAllToAll};

// Median seconds of `reps` calls after a warm-up, and the bytes this process sent per call.
Maybe<CollectivePoint> TimeCalls(Communicator* comm, CollectiveKind kind, int64_t count, int reps,
                                 const std::string& level) {
  std::vector<float> in(count, 1.0f), out(count, 0.0f);
  std::vector<double> seconds;
  int64_t before = comm->bytes_sent();
  for (int rep = -1; rep < reps; ++rep) {
    if (rep == 0) before = comm->bytes_sent();
    const std::string tag =
        StrCat("calibrate_", level, "_", CollectiveKindName(kind), "_", count, "_", rep);
    const auto start = Clock::now();
    OFL_RETURN_IF_ERROR(RunCollective(comm, kind, count, &in, &out, tag));
    if (rep >= 0) seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  CollectivePoint point;
  point.buffer_bytes = count * 4;
  point.bytes_sent = static_cast<double>(comm->bytes_sent() - before) / reps;
  point.seconds = Median(seconds);
  return point;
}

struct LevelGroup {
  std::string level;
  std::vector<int64_t> members;
};

// This process's group on each level, innermost first (calibrate_processes.h).
Maybe<std::vector<LevelGroup>> GroupsOf(int64_t process, int64_t processes) {
  const char* local = std::getenv("LOCAL_WORLD_SIZE");
  const int64_t per_node = local != nullptr ? std::atoll(local) : processes;
  OFL_ENSURE(per_node >= 1 && processes % per_node == 0,
             "calibrate: LOCAL_WORLD_SIZE=", local != nullptr ? local : "",
             " does not divide WORLD_SIZE=", processes);
  const int64_t node = process / per_node, local_rank = process % per_node;
  std::vector<LevelGroup> groups;
  if (per_node >= 2) {
    LevelGroup g{"node", {}};
    for (int64_t i = 0; i < per_node; ++i) g.members.push_back(node * per_node + i);
    groups.push_back(std::move(g));
  }
  if (processes / per_node >= 2) {
    LevelGroup g{"network", {}};
    for (int64_t n = 0; n < processes / per_node; ++n) {
      g.members.push_back(n * per_node + local_rank);
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

Status CheckSizes(const std::vector<int64_t>& sizes, int64_t processes, int reps) {
  OFL_ENSURE(sizes.size() >= 2, "calibrate: ", sizes.size(),
             " message size(s) given (a latency-bandwidth fit needs >= 2)");
  for (size_t i = 0; i < sizes.size(); ++i) {
    OFL_ENSURE(sizes[i] >= 4 * processes, "calibrate: size ", sizes[i],
               " bytes (needs one float32 per process, ", 4 * processes, ")");
    OFL_ENSURE(i == 0 || sizes[i] > sizes[i - 1], "calibrate: sizes are not ascending at ",
               sizes[i]);
  }
  OFL_ENSURE(reps >= 1, "calibrate: reps=", reps, " (needs >= 1)");
  return Status::OK();
}

}  // namespace

Maybe<std::vector<LevelCollective>> CalibrateProcessLevels(const std::vector<int64_t>& sizes,
                                                           int reps) {
  OFL_ASSIGN_OR_RETURN(std::shared_ptr<ProcessWorld> world, ProcessWorld::FromEnv());
  const int64_t processes = world->num_processes();
  OFL_ENSURE(processes >= 2,
             "calibrate: collectives across processes need a job of >= 2 "
             "processes (WORLD_SIZE=",
             processes,
             "); start it with python -m "
             "oneflow_lite.distributed.launch");
  OFL_RETURN_IF_ERROR(CheckSizes(sizes, processes, reps));
  OFL_ASSIGN_OR_RETURN(std::vector<LevelGroup> groups, GroupsOf(world->process(), processes));
  std::vector<LevelCollective> results;
  for (const LevelGroup& group : groups) {
    OFL_RETURN_IF_ERROR(world->Barrier(world->Key("calibrate/" + group.level)));
    const int64_t p = static_cast<int64_t>(group.members.size());
    OFL_ASSIGN_OR_RETURN(
        std::unique_ptr<GlooCommunicator> comm,
        GlooCommunicator::Create(
            world->store(), world->Key(StrCat("calibrate/", group.level, "/", group.members[0])),
            group.members, world->process(), world->options().gloo));
    for (CollectiveKind kind : kKinds) {
      LevelCollective r{group.level, p, kind, {}, {}};
      for (int64_t bytes : sizes) {
        // Every group of the level starts each size together (they share links).
        OFL_RETURN_IF_ERROR(world->Barrier(world->Key(
            StrCat("calibrate/", group.level, "/", CollectiveKindName(kind), "/", bytes))));
        const int64_t count = std::max<int64_t>(p, bytes / 4 / p * p);
        OFL_ASSIGN_OR_RETURN(CollectivePoint point,
                             TimeCalls(comm.get(), kind, count, reps, group.level));
        r.points.push_back(point);
      }
      r.figure = FitCollectivePoints(kind, p, r.points);
      OFL_ENSURE(r.figure.bandwidth_bytes_per_s > 0, "calibrate: ", CollectiveKindName(kind),
                 " on the ", group.level, " level measured bandwidth ",
                 r.figure.bandwidth_bytes_per_s, " B/s");
      results.push_back(std::move(r));
    }
  }
  // Process 0 hosts the store: nobody leaves before every level is done.
  OFL_RETURN_IF_ERROR(world->Barrier(world->Key("calibrate/done")));
  return results;
}

}  // namespace ofl
