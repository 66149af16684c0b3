// Kernel-time calibration (calibrate_kernels.h).
#include "oneflow_lite/api/calibrate_kernels.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <thread>

#include "oneflow_lite/api/calibrate_runs.h"
#include "oneflow_lite/api/session.h"

namespace ofl {
namespace {

std::map<std::string, Tensor> ConstantFeeds(const OpGraph& graph) {
  std::map<std::string, Tensor> feeds;
  for (const std::string& in : graph.input_names()) {
    const TensorDesc d = graph.Desc(in).value();
    feeds.emplace(in, IsFloating(d.dtype) ? Tensor::Full(d.shape, d.dtype, 0.5)
                                          : Tensor::Zeros(d.shape, d.dtype));
  }
  return feeds;
}

// Per op with FLOPs > 0: its type, compute dtype and FLOPs (as the cost model prices it).
std::map<std::string, KernelTime> CostedOps(const OpGraph& graph) {
  std::map<std::string, KernelTime> ops;
  for (const OpNode& op : graph.ops()) {
    const OpContext ctx = graph.ContextOf(op);
    std::vector<TensorDesc> outs;
    for (const std::string& o : op.outputs) outs.push_back(graph.Desc(o).value());
    const double flops = OpRegistry::Find(op.type).value()->EstimateCost(ctx, outs).flops;
    if (!(flops > 0)) continue;
    DataType dtype = outs.empty() ? ctx.input(0).dtype : outs[0].dtype;
    if (!IsFloating(dtype)) dtype = DataType::kFloat32;
    ops[op.name] = KernelTime{op.name, op.type, dtype, flops, 0.0};
  }
  return ops;
}

// One device's runs: per op name, its act's seconds in every timed run.
Status RunAndRecord(Session* session, const std::map<std::string, Tensor>& feeds, int reps,
                    std::map<std::string, std::vector<double>>* seconds) {
  const auto& tasks = session->plan().tasks();
  for (int rep = -1; rep < reps; ++rep) {
    std::vector<Tensor> results;
    OFL_RETURN_IF_ERROR(session->Run(feeds, {}, &results));
    if (rep < 0) continue;
    for (const ActRecord& act : session->last_acts()) {
      CHECK(act.task >= 0 && act.task < tasks.size()) << act.task;
      const auto& task = tasks.Get(static_cast<int>(act.task));
      if (task.kind() != proto::TaskProto::COMPUTE) continue;
      (*seconds)[task.op_conf().name()].push_back(static_cast<double>(act.end_ns - act.start_ns) *
                                                  1e-9);
    }
  }
  return Status::OK();
}

}  // namespace

Maybe<std::vector<KernelTime>> TimeKernels(const OpGraph& graph,
                                           const KernelTimingOptions& options) {
  OFL_ENSURE(options.num_threads >= 1, "calibrate: num_threads=", options.num_threads,
             " (needs >= 1)");
  OFL_ENSURE(options.reps >= 1, "calibrate: reps=", options.reps, " (needs >= 1)");
  OFL_ENSURE(options.concurrent >= 1, "calibrate: concurrent devices=", options.concurrent,
             " (needs >= 1)");
  SessionOptions so;
  so.num_threads = options.num_threads;
  so.record_acts = true;
  so.transactional = false;
  so.fuse_matmul_bias = false;  // each op's own time, as the distributed plans run them
  std::vector<std::unique_ptr<Session>> sessions;
  for (int d = 0; d < options.concurrent; ++d) {
    OFL_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, Session::Create(graph, so));
    sessions.push_back(std::move(s));
  }
  const std::map<std::string, Tensor> feeds = ConstantFeeds(graph);
  std::vector<std::map<std::string, std::vector<double>>> seconds(sessions.size());
  std::vector<Status> statuses(sessions.size());
  std::vector<std::thread> threads;
  for (size_t d = 0; d < sessions.size(); ++d) {
    threads.emplace_back([&, d] {
      statuses[d] = RunAndRecord(sessions[d].get(), feeds, options.reps, &seconds[d]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& s : statuses) OFL_RETURN_IF_ERROR(s);
  std::vector<KernelTime> out;
  for (auto& [name, time] : CostedOps(graph)) {
    auto it = seconds[0].find(name);
    if (it == seconds[0].end() || it->second.empty()) continue;
    time.seconds = Median(it->second);
    if (time.seconds > 0) out.push_back(time);
  }
  return out;
}

std::vector<proto::ComputeEntry> ToComputeEntries(const std::vector<KernelTime>& times) {
  std::map<std::pair<std::string, DataType>, std::vector<std::pair<double, double>>> curves;
  for (const KernelTime& t : times) curves[{t.op_type, t.dtype}].push_back({t.flops, t.seconds});
  std::vector<proto::ComputeEntry> entries;
  for (auto& [key, samples] : curves) {
    std::sort(samples.begin(), samples.end());
    // Points: runs of samples within 10 % of the run's first FLOPs; each
    // point's weight is its sample count (for pooling below).
    struct Point {
      double flops, seconds, weight;
    };
    std::vector<Point> points;
    for (size_t i = 0; i < samples.size();) {
      size_t j = i;
      std::vector<double> f, s;
      while (j < samples.size() && samples[j].first <= samples[i].first * 1.1) {
        f.push_back(samples[j].first);
        s.push_back(samples[j].second);
        ++j;
      }
      points.push_back({Median(f), Median(s), static_cast<double>(f.size())});
      i = j;
    }
    // Pool adjacent violators: a point slower than the next one is pooled
    // with it (weighted mean of seconds, at the larger FLOPs' position kept
    // for each), until seconds never decrease with FLOPs.
    std::vector<Point> blocks;   // pooled seconds per block
    std::vector<size_t> counts;  // points per block
    for (const Point& p : points) {
      blocks.push_back(p);
      counts.push_back(1);
      while (blocks.size() >= 2 && blocks[blocks.size() - 2].seconds > blocks.back().seconds) {
        Point& a = blocks[blocks.size() - 2];
        const Point& b = blocks.back();
        a.seconds = (a.seconds * a.weight + b.seconds * b.weight) / (a.weight + b.weight);
        a.weight += b.weight;
        counts[counts.size() - 2] += counts.back();
        blocks.pop_back();
        counts.pop_back();
      }
    }
    size_t index = 0;
    for (size_t b = 0; b < blocks.size(); ++b) {
      for (size_t k = 0; k < counts[b]; ++k, ++index) {
        proto::ComputeEntry e;
        e.set_op_type(key.first);
        e.set_dtype(DataTypeName(key.second));
        e.set_flops(points[index].flops);
        e.set_seconds(blocks[b].seconds);
        entries.push_back(std::move(e));
      }
    }
  }
  return entries;
}

double SlowdownRatio(const std::vector<KernelTime>& alone,
                     const std::vector<KernelTime>& concurrent) {
  std::map<std::string, double> by_name;
  for (const KernelTime& t : alone) by_name[t.op] = t.seconds;
  double a = 0, c = 0;
  for (const KernelTime& t : concurrent) {
    auto it = by_name.find(t.op);
    if (it == by_name.end()) continue;
    a += it->second;
    c += t.seconds;
  }
  return a > 0 && c > 0 ? c / a : 1.0;
}

}  // namespace ofl
