// gpu_matmul: an M x K x N bfloat16 matmul (float32 accumulation) through our
// runtime (a Plan of one matmul task on cuda:0, its inputs persistent
// registers, `iters` iterations per Run) against the same product called
// directly through cuBLASLt (the best heuristic algorithm, 32 MiB
// workspace), on one GPU. Prints one JSON line per size:
//   {"name": "matmul_bf16_1024", "m": .., "ours_tflops": .., "cublaslt_tflops": ..,
//    "ratio": .., "max_abs_diff": .., "error": null}
// Usage: gpu_matmul [SIZE...] (default 1024 8192). Needs a GPU; without one
// it prints the error "no CUDA device" per size and exits 1. bench/run.sh gpu
// runs it.
#include <cublasLt.h>
#include <cuda_bf16.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "oneflow_lite/core/cuda/cuda_check.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

#define BENCH_CUBLAS(expr)                                                               \
  do {                                                                                   \
    const cublasStatus_t s_ = (expr);                                                    \
    CHECK_EQ(s_, CUBLAS_STATUS_SUCCESS) << #expr << ": " << cublasLtGetStatusString(s_); \
  } while (0)

uint16_t ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}
float FromBf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

Tensor RandomBf16(int64_t rows, int64_t cols, uint32_t seed) {
  Tensor t(Shape({rows, cols}), DataType::kBFloat16);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto* p = static_cast<uint16_t*>(t.raw());
  for (int64_t i = 0; i < rows * cols; ++i) p[i] = ToBf16(dist(gen));
  return t;
}

void AddRegister(proto::Plan* plan, const std::string& name, int64_t rows, int64_t cols,
                 bool persistent) {
  auto* r = plan->add_registers();
  r->set_id(plan->registers_size() - 1);
  r->set_name(name);
  r->set_rank(0);
  r->set_device("cuda:0");
  r->mutable_desc()->mutable_shape()->add_dims(rows);
  r->mutable_desc()->mutable_shape()->add_dims(cols);
  r->mutable_desc()->set_dtype("bfloat16");
  r->set_num_slots(1);
  r->set_bytes(rows * cols * 2);
  r->set_persistent(persistent);
}

proto::TaskProto* AddTask(proto::Plan* plan, proto::TaskProto::Kind kind, const std::string& name,
                          const std::string& op, std::vector<int64_t> in,
                          std::vector<int64_t> out) {
  auto* t = plan->add_tasks();
  t->set_id(plan->tasks_size() - 1);
  t->set_kind(kind);
  t->set_rank(0);
  t->set_stream(0);
  t->set_device("cuda:0");
  t->mutable_op_conf()->set_name(name);
  t->mutable_op_conf()->set_op_type(op);
  for (int64_t id : in) t->add_inputs(id);
  for (int64_t id : out) t->add_outputs(id);
  return t;
}

// Seconds per product through the runtime, and its output (host bf16).
Maybe<double> Ours(int64_t n, const Tensor& a, const Tensor& b, int iters, Tensor* out) {
  proto::Plan plan;
  plan.set_num_ranks(1);
  AddRegister(&plan, "a", n, n, true);
  AddRegister(&plan, "b", n, n, true);
  AddRegister(&plan, "out", n, n, false);
  AddTask(&plan, proto::TaskProto::VARIABLE, "a", "", {}, {0});
  AddTask(&plan, proto::TaskProto::VARIABLE, "b", "", {}, {1});
  AddTask(&plan, proto::TaskProto::COMPUTE, "mm", "matmul", {0, 1}, {2});
  AddTask(&plan, proto::TaskProto::SINK, "out", "", {2}, {});
  OFL_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> rt, Runtime::Create(plan));
  OFL_RETURN_IF_ERROR(rt->SetVariable("a", 0, a));
  OFL_RETURN_IF_ERROR(rt->SetVariable("b", 0, b));
  OFL_ASSIGN_OR_RETURN(RunResult warm, rt->Run(3, {}, {"out"}));
  *out = warm.fetched.back().at({"out", 0});
  const auto start = std::chrono::steady_clock::now();
  OFL_RETURN_IF_ERROR(rt->Run(iters, {}, {}).status());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
}

// Seconds per product through cuBLASLt directly (row-major C = A B computed
// as column-major C^T = B^T A^T), and its output.
double Direct(int64_t n, const Tensor& a, const Tensor& b, int iters, Tensor* out) {
  const size_t bytes = n * n * 2, workspace_bytes = size_t{32} << 20;
  void *da, *db, *dc, *workspace;
  OFL_CUDA_CHECK(cudaMalloc(&da, bytes));
  OFL_CUDA_CHECK(cudaMalloc(&db, bytes));
  OFL_CUDA_CHECK(cudaMalloc(&dc, bytes));
  OFL_CUDA_CHECK(cudaMalloc(&workspace, workspace_bytes));
  OFL_CUDA_CHECK(cudaMemcpy(da, a.raw(), bytes, cudaMemcpyHostToDevice));
  OFL_CUDA_CHECK(cudaMemcpy(db, b.raw(), bytes, cudaMemcpyHostToDevice));
  cublasLtHandle_t lt;
  BENCH_CUBLAS(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t desc;
  BENCH_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t layout;
  BENCH_CUBLAS(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16BF, n, n, n));
  cublasLtMatmulPreference_t pref;
  BENCH_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  BENCH_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace_bytes, sizeof(workspace_bytes)));
  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0;
  BENCH_CUBLAS(cublasLtMatmulAlgoGetHeuristic(lt, desc, layout, layout, layout, layout, pref, 1,
                                              &heuristic, &found));
  CHECK_GT(found, 0) << "cuBLASLt has no algorithm for a bf16 " << n << "^3 product";
  const float alpha = 1.0f, beta = 0.0f;
  cudaStream_t stream;
  OFL_CUDA_CHECK(cudaStreamCreate(&stream));
  auto run = [&] {
    BENCH_CUBLAS(cublasLtMatmul(lt, desc, &alpha, db, layout, da, layout, &beta, dc, layout, dc,
                                layout, &heuristic.algo, workspace, workspace_bytes, stream));
  };
  for (int i = 0; i < 3; ++i) run();
  cudaEvent_t begin, end;
  OFL_CUDA_CHECK(cudaEventCreate(&begin));
  OFL_CUDA_CHECK(cudaEventCreate(&end));
  OFL_CUDA_CHECK(cudaEventRecord(begin, stream));
  for (int i = 0; i < iters; ++i) run();
  OFL_CUDA_CHECK(cudaEventRecord(end, stream));
  OFL_CUDA_CHECK(cudaEventSynchronize(end));
  float ms = 0;
  OFL_CUDA_CHECK(cudaEventElapsedTime(&ms, begin, end));
  *out = Tensor(Shape({n, n}), DataType::kBFloat16);
  OFL_CUDA_CHECK(cudaMemcpy(out->raw(), dc, bytes, cudaMemcpyDeviceToHost));
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(layout);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(lt);
  for (void* p : {da, db, dc, workspace}) OFL_CUDA_CHECK(cudaFree(p));
  return ms / 1e3 / iters;
}

std::string Escape(std::string text) {
  for (char& c : text) {
    if (c == '"' || c == '\\' || c == '\n') c = '\'';
  }
  return text;
}

void Bench(int64_t n) {
  const std::string name = "matmul_bf16_" + std::to_string(n);
  if (CudaDeviceCount() == 0) {
    std::printf("{\"name\": \"%s\", \"m\": %ld, \"error\": \"%s\"}\n", name.c_str(), n,
                kNoCudaDevice);
    return;
  }
  const int iters = n <= 2048 ? 500 : 30;
  Tensor a = RandomBf16(n, n, 1), b = RandomBf16(n, n, 2), ours_out, direct_out;
  const double direct = Direct(n, a, b, iters, &direct_out);
  Maybe<double> ours = Ours(n, a, b, iters, &ours_out);
  const double flops = 2.0 * n * n * n;
  if (!ours.ok()) {
    std::printf("{\"name\": \"%s\", \"m\": %ld, \"cublaslt_tflops\": %.1f, \"error\": \"%s\"}\n",
                name.c_str(), n, flops / direct / 1e12, Escape(ours.status().message()).c_str());
    return;
  }
  double max_diff = 0;
  const auto* x = static_cast<const uint16_t*>(ours_out.raw());
  const auto* y = static_cast<const uint16_t*>(direct_out.raw());
  for (int64_t i = 0; i < n * n; ++i) {
    max_diff = std::max<double>(max_diff, std::fabs(FromBf16(x[i]) - FromBf16(y[i])));
  }
  std::printf(
      "{\"name\": \"%s\", \"m\": %ld, \"ours_tflops\": %.1f, \"cublaslt_tflops\": %.1f, "
      "\"ratio\": %.3f, \"max_abs_diff\": %.4g, \"error\": null}\n",
      name.c_str(), n, flops / ours.value() / 1e12, flops / direct / 1e12, direct / ours.value(),
      max_diff);
}

}  // namespace
}  // namespace ofl

int main(int argc, char** argv) {
  std::vector<int64_t> sizes = {1024, 8192};
  if (argc > 1) {
    sizes.clear();
    for (int i = 1; i < argc; ++i) sizes.push_back(std::stoll(argv[i]));
  }
  for (int64_t n : sizes) ofl::Bench(n);
  return ofl::CudaDeviceCount() == 0 ? 1 : 0;
}
