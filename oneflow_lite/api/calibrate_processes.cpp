// Collective calibration across processes (calibrate_processes.h).
#include "oneflow_lite/api/calibrate_processes.h"

#include <algorithm>
#include <chrono>

#include "oneflow_lite/api/calibrate.h"
#include "oneflow_lite/api/calibrate_runs.h"
#include "runtime/gloo_communicator.h"
#include "runtime/process_world.h"

namespace ofl {
namespace {

using Clock = std::chrono::steady_clock;

// Median seconds of `reps` calls after a warm-up, and the bytes this process sent per call.
Maybe<std::pair<double, double>> TimeCalls(Communicator* comm, CollectiveKind kind,
                                           int64_t count, int reps) {
  std::vector<float> in(count, 1.0f), out(count, 0.0f);
  std::vector<double> seconds;
  int64_t before = comm->bytes_sent();
  for (int rep = -1; rep < reps; ++rep) {
    if (rep == 0) before = comm->bytes_sent();
    const std::string tag = StrCat("calibrate_", CollectiveKindName(kind), "_", count, "_", rep);
    const auto start = Clock::now();
    OFL_RETURN_IF_ERROR(RunCollective(comm, kind, count, &in, &out, tag));
    if (rep >= 0) seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return std::make_pair(Median(seconds),
                        static_cast<double>(comm->bytes_sent() - before) / reps);
}

}  // namespace

Maybe<std::vector<proto::CollectiveFigure>> CalibrateProcessCollectives(int64_t bytes, int reps) {
  OFL_ASSIGN_OR_RETURN(std::shared_ptr<ProcessWorld> world, ProcessWorld::FromEnv());
  OFL_ENSURE(world->num_processes() >= 2, "calibrate: collectives across processes need a job of "
             ">= 2 processes (WORLD_SIZE=", world->num_processes(),
             "); start it with python -m oneflow_lite.distributed.launch");
  const int64_t p = world->num_processes();
  OFL_ENSURE(bytes >= 4 * p, "calibrate: bytes=", bytes, " (needs one float32 per process, ",
             4 * p, ")");
  OFL_ENSURE(reps >= 1, "calibrate: reps=", reps, " (needs >= 1)");
  std::vector<int64_t> members(p);
  for (int64_t i = 0; i < p; ++i) members[i] = i;
  OFL_ASSIGN_OR_RETURN(std::unique_ptr<GlooCommunicator> comm,
                       GlooCommunicator::Create(world->store(), world->Key("calibrate"), members,
                                                world->process(), world->options().gloo));
  std::vector<proto::CollectiveFigure> figures;
  for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter,
                              CollectiveKind::kAllGather, CollectiveKind::kAllToAll}) {
    OFL_ASSIGN_OR_RETURN(const auto tiny, TimeCalls(comm.get(), kind, p, reps));
    OFL_ASSIGN_OR_RETURN(const auto big, TimeCalls(comm.get(), kind, bytes / 4, reps));
    const CollectiveFigure fit =
        FitCollectiveFigure(kind, p, tiny.first, big.first, big.second);
    OFL_ENSURE(fit.bandwidth_bytes_per_s > 0 && fit.latency_s > 0, "calibrate: ",
               CollectiveKindName(kind), " across processes measured bandwidth ",
               fit.bandwidth_bytes_per_s, " B/s, latency ", fit.latency_s, " s");
    proto::CollectiveFigure f;
    f.set_kind(CollectiveKindName(kind));
    f.set_bandwidth_gbps(fit.bandwidth_bytes_per_s / 1e9);
    f.set_latency_us(fit.latency_s * 1e6);
    figures.push_back(std::move(f));
  }
  // Process 0's figures on every process.
  proto::Cluster carrier;  // the figures as one message: a level holding them
  for (const proto::CollectiveFigure& f : figures) *carrier.add_levels()->add_collectives() = f;
  const std::string text = carrier.SerializeAsString();
  OFL_ASSIGN_OR_RETURN(auto all, world->AllGather(world->Key("calibrate/figures"),
                                                  std::vector<char>(text.begin(), text.end())));
  proto::Cluster first;
  OFL_ENSURE(first.ParseFromArray(all[0].data(), static_cast<int>(all[0].size())),
             "calibrate: process 0's collective figures do not parse");
  figures.clear();
  for (const proto::LinkLevel& level : first.levels()) {
    figures.push_back(level.collectives(0));
  }
  return figures;
}

}  // namespace ofl
