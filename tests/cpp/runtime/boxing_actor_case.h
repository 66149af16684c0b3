// One boxing conversion run on actors, for the tests of boxing on streams
// (tests/cpp/runtime/boxing_streams_test.cpp on CPU worker streams,
// tests/cpp/cuda_runtime/cuda_boxing_test.cpp on virtual CUDA devices): a
// SOURCE "x" per rank of the source placement (its slice), the BOXING tasks of
// graph/boxing.h's plan (graph/boxing_tasks.h), a SINK "y" per rank of the
// target placement, every rank on a device of `type`. The feeds are small
// integers (every dtype sums them exactly): element e of the logical tensor,
// plus the rank's P coordinates, so that B replicas agree and P addends differ.
//
// Test-only; not synchronised.
#pragma once

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/boxing.h"
#include "graph/boxing_tasks.h"
#include "oneflow_lite/core/slicing.h"
#include "runtime/boxing.h"
#include "runtime/runtime.h"

// Runs go through runtime/boxing.h's BoxingGroups and RunBoxingStep behind the
// runtime's boxing hook, as api/DistributedSession does.

namespace ofl {

// One conversion of a logical tensor between two layouts.
struct BoxingConversion {
  Shape shape;
  DataType dtype;
  Placement fp;
  NdSbp from;
  Placement tp;
  NdSbp to;
  std::string ToString() const {
    return StrCat(shape, " ", DataTypeName(dtype), " ", from, " on ", fp.ToString(), " -> ", to,
                  " on ", tp.ToString());
  }
};

inline Placement TestPlacement(std::vector<int64_t> ranks, Shape hierarchy = {}) {
  return Placement::Create(DeviceType::kCPU, std::move(ranks), std::move(hierarchy)).value();
}
inline NdSbp TestSbp(const std::string& text) { return NdSbp::Parse(text).value(); }

struct BoxingActorCase {
  BoxingPlan boxing;
  proto::Plan plan;
  TensorMap feeds;  // {"x", rank} -> the rank's slice
};

inline void SetSmallInteger(Tensor* t, int64_t i, int64_t v) {
  switch (t->dtype()) {
    case DataType::kFloat32:
      t->data<float>()[i] = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      t->data<double>()[i] = static_cast<double>(v);
      break;
    case DataType::kInt32:
      t->data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    default:
      t->data<int64_t>()[i] = v;
      break;
  }
}

// The slice of the rank at `coords`: element e of the logical tensor is
// (7 e + 3 p + 1) mod 19 - 9, p the linear index of the rank's P coordinates.
inline Tensor SourceSlice(const TensorDesc& desc, const Placement& placement, const NdSbp& sbp,
                          const std::vector<int64_t>& coords) {
  const TensorSlice slice = SliceOf(desc.shape, placement.hierarchy(), sbp, coords);
  int64_t p = 0;
  for (int64_t a = 0; a < sbp.size(); ++a) {
    if (sbp[a].is_partial_sum()) p = p * placement.hierarchy()[a] + coords[a];
  }
  Tensor t(slice.shape, desc.dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t logical = 0;  // row-major index of element i in the logical tensor
    for (int64_t d = 0, rest = i, inner = t.numel(); d < desc.shape.ndim(); ++d) {
      inner /= slice.shape[d];
      logical = logical * desc.shape[d] + slice.offset[d] + rest / inner;
      rest %= inner;
    }
    SetSmallInteger(&t, i, (7 * logical + 3 * p + 1) % 19 - 9);
  }
  return t;
}

inline Maybe<BoxingActorCase> MakeBoxingActorCase(const TensorDesc& desc, const Placement& fp,
                                                  const NdSbp& from, const Placement& tp,
                                                  const NdSbp& to, DeviceType type) {
  BoxingActorCase c;
  OFL_ASSIGN_OR_RETURN(c.boxing, PlanBoxing(desc, fp, from, tp, to, "x"));
  int64_t num_ranks = 0;
  for (int64_t r : fp.ranks()) num_ranks = std::max(num_ranks, r + 1);
  for (int64_t r : tp.ranks()) num_ranks = std::max(num_ranks, r + 1);
  PlanBuilder builder(num_ranks);
  for (int64_t r = 0; r < num_ranks; ++r) builder.set_device_type(r, type);
  std::vector<int64_t> inputs;
  for (int64_t i = 0; i < fp.size(); ++i) {
    const int64_t rank = fp.ranks()[i];
    Tensor slice = SourceSlice(desc, fp, from, fp.Coordinates(i));
    inputs.push_back(
        builder.AddRegister("x/" + std::to_string(rank), rank, {slice.shape(), desc.dtype}));
    proto::TaskProto* source =
        builder.AddTask(proto::TaskProto::SOURCE, rank, 0, {}, {inputs.back()});
    source->mutable_op_conf()->set_name("x");
    c.feeds[{"x", rank}] = slice;
  }
  const std::vector<int64_t> outputs = EmitBoxing(c.boxing, "x", inputs, &builder);
  for (int64_t i = 0; i < tp.size(); ++i) {
    proto::TaskProto* sink =
        builder.AddTask(proto::TaskProto::SINK, tp.ranks()[i], 0, {outputs[i]}, {});
    sink->mutable_op_conf()->set_name("y");
  }
  c.plan = builder.Release();
  return c;
}
inline Maybe<BoxingActorCase> MakeBoxingActorCase(const BoxingConversion& c, DeviceType type) {
  return MakeBoxingActorCase({c.shape, c.dtype}, c.fp, c.from, c.tp, c.to, type);
}

struct BoxingActorRun {
  std::map<int64_t, Tensor> outputs;  // rank -> its "y" (host copy) after the last iteration
  std::map<int64_t, int64_t> bytes;   // rank -> bytes its communicators counted
};

// Runs `iterations` iterations of the case with contexts from `make_device`
// (empty: the runtime's default); `probe` sees every boxing call's stream.
inline Maybe<BoxingActorRun> RunBoxingActorCase(
    const BoxingActorCase& c,
    std::function<Maybe<std::unique_ptr<DeviceContext>>(const Device&)> make_device,
    std::function<void(const proto::TaskProto&, const BoxingStream&)> probe = {},
    int64_t iterations = 2) {
  OFL_ASSIGN_OR_RETURN(std::unique_ptr<BoxingGroups> groups,
                       BoxingGroups::Create(c.plan, std::chrono::milliseconds(20000)));
  BoxingGroups* g = groups.get();
  RuntimeOptions options;
  options.timeout = std::chrono::milliseconds(30000);
  options.num_threads = 2;
  options.make_device = std::move(make_device);
  options.boxing = [g, probe](const proto::TaskProto& task, const Tensor& in, Tensor* out,
                              const BoxingStream& on) {
    if (probe) probe(task, on);
    return RunBoxingStep(task, in, out, g->For(task.boxing_conf().group_id(), task.rank()), on);
  };
  options.on_failure = [g](const Status& error) { g->AbortAll(error.message()); };
  OFL_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> runtime, Runtime::Create(c.plan, options));
  OFL_ASSIGN_OR_RETURN(RunResult result, runtime->Run(iterations, {c.feeds}, {"y"}));
  BoxingActorRun run;
  for (const auto& [key, value] : result.fetched.back()) run.outputs[key.rank] = value;
  run.bytes = g->BytesSentByRank();
  return run;
}

// "" when both runs have the same outputs (bit for bit) and bytes.
inline std::string CompareRuns(const BoxingActorRun& got, const BoxingActorRun& want) {
  if (got.outputs.size() != want.outputs.size()) return "a different number of outputs";
  for (const auto& [rank, w] : want.outputs) {
    const Tensor& o = got.outputs.at(rank);
    if (o.shape() != w.shape() || o.dtype() != w.dtype()) {
      return StrCat("rank ", rank, ": output ", o.shape(), " ", DataTypeName(o.dtype()),
                    ", expected ", w.shape(), " ", DataTypeName(w.dtype()));
    }
    if (std::memcmp(o.raw(), w.raw(), static_cast<size_t>(w.nbytes())) != 0) {
      return StrCat("rank ", rank, ": output values differ");
    }
  }
  for (const auto& [rank, bytes] : want.bytes) {
    const auto it = got.bytes.find(rank);
    const int64_t counted = it == got.bytes.end() ? 0 : it->second;
    if (counted != bytes) return StrCat("rank ", rank, " sent ", counted, " bytes, not ", bytes);
  }
  return "";
}

}  // namespace ofl
