// Collective calibration across processes (calibrate_processes.h).
#include "oneflow_lite/api/calibrate_processes.h"

#include <chrono>
#include <cstdlib>
#include <functional>

#include "runtime/gloo_communicator.h"
#include "runtime/process_world.h"

namespace ofl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr CollectiveKind kKinds[] = {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter,
                                     CollectiveKind::kAllGather, CollectiveKind::kAllToAll};

// Every size of `kind` timed `reps` times in interleaved rounds, after a
// warm-up call of each: round r calls the sizes in order from size r mod n,
// so that a disturbance of the machine (a descheduled peer, another job's
// burst) spreads over the sizes instead of shifting every call of one size.
// Per size: the median seconds and the bytes this process sent per call.
// `round_barrier` runs before each round (every group of the level starts it
// together).
Maybe<std::vector<CollectivePoint>> TimeInRounds(Communicator* comm, CollectiveKind kind,
                                                 const std::vector<int64_t>& counts, int reps,
                                                 const std::string& level,
                                                 const std::function<Status(int)>& round_barrier) {
  const size_t n = counts.size();
  int64_t max_count = 0;
  for (int64_t c : counts) max_count = std::max(max_count, c);
  std::vector<float> in(max_count, 1.0f), out(max_count, 0.0f);
  std::vector<std::vector<double>> seconds(n);
  std::vector<int64_t> sent(n, 0);
  for (int round = -1; round < reps; ++round) {
    OFL_RETURN_IF_ERROR(round_barrier(round));
    for (size_t j = 0; j < n; ++j) {
      const size_t i = round < 0 ? j : (j + static_cast<size_t>(round)) % n;
      const std::string tag =
          StrCat("calibrate_", level, "_", CollectiveKindName(kind), "_", counts[i], "_", round);
      const int64_t before = comm->bytes_sent();
      const auto start = Clock::now();
      OFL_RETURN_IF_ERROR(RunCollective(comm, kind, counts[i], &in, &out, tag));
      if (round < 0) continue;  // the warm-up
      seconds[i].push_back(std::chrono::duration<double>(Clock::now() - start).count());
      sent[i] += comm->bytes_sent() - before;
    }
  }
  std::vector<CollectivePoint> points(n);
  for (size_t i = 0; i < n; ++i) {
    points[i].buffer_bytes = counts[i] * 4;
    points[i].bytes_sent = static_cast<double>(sent[i]) / reps;
    points[i].seconds = Median(seconds[i]);
  }
  return points;
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
    std::vector<int64_t> counts;
    for (int64_t bytes : sizes) counts.push_back(std::max<int64_t>(p, bytes / 4 / p * p));
    for (CollectiveKind kind : kKinds) {
      LevelCollective r{group.level, p, kind, {}, {}};
      const auto round_barrier = [&](int round) {
        return world->Barrier(world->Key(
            StrCat("calibrate/", group.level, "/", CollectiveKindName(kind), "/", round)));
      };
      OFL_ASSIGN_OR_RETURN(
          std::vector<CollectivePoint> points,
          TimeInRounds(comm.get(), kind, counts, reps, group.level, round_barrier));
      // The table the cost model interpolates rises with the size; the fit
      // reads the same points.
      r.points = MonotoneInSize(std::move(points));
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
