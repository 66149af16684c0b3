// CUDA kernels of matmul and batch_matmul: one cuBLASLt matmul per call.
// float32 computes in CUBLAS_COMPUTE_32F (never TF32), float64 in
// CUBLAS_COMPUTE_64F, and bfloat16 inputs in CUBLAS_COMPUTE_32F with float32
// accumulation and a bfloat16 or float32 output (the output tensor's dtype).
//
// Our tensors are row-major and cuBLASLt's layouts column-major: a row-major
// C[m, n] = op(A) op(B) is the column-major C^T[n, m] = op(B)^T op(A)^T, so
// cuBLASLt's "A" is our b and its "B" our a, each with its own transpose
// flag, and no data moves. Batches are strided (each operand contiguous).
// The heuristic's choice is cached per (device, dtypes, sizes, flags,
// pointer alignments); handles and workspace come from ops/cuda_util.h.
// Thread-safe.
#include <map>
#include <mutex>
#include <tuple>

#include "ops/cuda_util.h"
#include "ops/math/matmul_dims.h"

namespace ofl {

namespace {

cudaDataType_t CudaTypeOf(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return CUDA_R_32F;
    case DataType::kFloat64:
      return CUDA_R_64F;
    case DataType::kBFloat16:
      return CUDA_R_16BF;
    default:
      ThrowNoKernelFor("float32/float64/bfloat16", dtype);
  }
}

// The largest power of two (at most 256) dividing the address.
uint32_t AlignmentOf(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

// One column-major matrix layout: rows x cols, leading dimension ld, batched.
class Layout {
 public:
  Layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch) {
    OFL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_, type, static_cast<uint64_t>(rows),
                                                static_cast<uint64_t>(cols), ld));
    if (batch > 0) {
      CHECK_LE(batch, INT32_MAX) << "batch_matmul: batch too large for cuBLASLt";
      const int32_t count = static_cast<int32_t>(batch);
      const int64_t stride = rows * cols;
      OFL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout_, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                        &count, sizeof(count)));
      OFL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
          layout_, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
  }
  ~Layout() { (void)cublasLtMatrixLayoutDestroy(layout_); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
  cublasLtMatrixLayout_t get() const { return layout_; }

 private:
  cublasLtMatrixLayout_t layout_ = nullptr;
};

using AlgoKey = std::tuple<int, int, int, int64_t, int64_t, int64_t, int64_t, bool, bool, uint32_t,
                           uint32_t, uint32_t>;

struct AlgoCache {
  std::mutex mutex;
  std::map<AlgoKey, cublasLtMatmulAlgo_t> algos;
};

AlgoCache& TheAlgoCache() {
  static AlgoCache* cache = new AlgoCache;
  return *cache;
}

// The heuristic's first algorithm for this problem (cached).
cublasLtMatmulAlgo_t FindAlgo(const AlgoKey& key, cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                              const Layout& la, const Layout& lb, const Layout& lc,
                              size_t workspace_bytes) {
  AlgoCache& cache = TheAlgoCache();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.algos.find(key);
    if (it != cache.algos.end()) return it->second;
  }
  cublasLtMatmulPreference_t pref = nullptr;
  OFL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t max_workspace = workspace_bytes;
  OFL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace, sizeof(max_workspace)));
  const uint32_t align_a = std::get<9>(key), align_b = std::get<10>(key),
                 align_c = std::get<11>(key);
  OFL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)));
  OFL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)));
  OFL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c)));
  OFL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof(align_c)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  OFL_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, op, la.get(), lb.get(), lc.get(),
                                                  lc.get(), pref, 1, &result, &found));
  OFL_CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  CHECK_GT(found, 0) << "cuBLASLt has no algorithm for this matmul";
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.algos.emplace(key, result.algo);
  return result.algo;
}

void Gemm(const KernelContext& kc, const MatmulDims& s, const Tensor& a, const Tensor& b, Tensor& c,
          cudaStream_t stream) {
  CHECK(a.dtype() == b.dtype()) << kc.where() << ": a and b differ in dtype";
  const bool f64 = a.dtype() == DataType::kFloat64;
  CHECK(f64 ? c.dtype() == DataType::kFloat64 : c.dtype() != DataType::kFloat64) << kc.where();
  const cudaDataType_t in_type = CudaTypeOf(a.dtype()), out_type = CudaTypeOf(c.dtype());
  const cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const cudaDataType_t scale_type = f64 ? CUDA_R_64F : CUDA_R_32F;

  cublasLtMatmulDesc_t op = nullptr;
  OFL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, compute, scale_type));
  const cublasOperation_t op_b = s.tb ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A: our b
  const cublasOperation_t op_a = s.ta ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's B: our a
  OFL_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof(op_b)));
  OFL_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)));
  // Column-major views of the row-major buffers (rows, cols, ld).
  const Layout lb(in_type, s.tb ? s.k : s.n, s.tb ? s.n : s.k, s.tb ? s.k : s.n, s.batch);
  const Layout la(in_type, s.ta ? s.m : s.k, s.ta ? s.k : s.m, s.ta ? s.m : s.k, s.batch);
  const Layout lc(out_type, s.n, s.m, s.n, s.batch);

  const int device = kc.device.index;
  cublasLtHandle_t handle = cuda::CublasLtHandle(device);
  size_t workspace_bytes = 0;
  void* workspace = cuda::CublasLtWorkspace(device, stream, &workspace_bytes);
  const AlgoKey key{device,
                    static_cast<int>(a.dtype()),
                    static_cast<int>(c.dtype()),
                    s.batch,
                    s.m,
                    s.n,
                    s.k,
                    s.ta,
                    s.tb,
                    AlignmentOf(b.raw()),
                    AlignmentOf(a.raw()),
                    AlignmentOf(c.raw())};
  const cublasLtMatmulAlgo_t algo = FindAlgo(key, handle, op, lb, la, lc, workspace_bytes);
  const float alpha32 = 1.0f, beta32 = 0.0f;
  const double alpha64 = 1.0, beta64 = 0.0;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
  OFL_CUBLAS_CHECK(cublasLtMatmul(handle, op, alpha, b.raw(), lb.get(), a.raw(), la.get(), beta,
                                  c.raw(), lc.get(), c.raw(), lc.get(), &algo, workspace,
                                  workspace_bytes, stream));
  OFL_CUBLAS_CHECK(cublasLtMatmulDescDestroy(op));
}

void MatmulKernel(KernelContext& kc, bool batched) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  const MatmulDims s = MatmulDimsOf(kc, batched);
  Tensor& out = kc.out(0);
  if (out.numel() == 0) return;
  if (s.k == 0) {  // an empty sum
    cuda::Fill(out, 0.0, stream);
    return;
  }
  Gemm(kc, s, kc.in(0), kc.in(1), out, stream);
}

OFL_REGISTER_KERNEL("matmul", DeviceType::kCUDA,
                    [](KernelContext& kc) { MatmulKernel(kc, /*batched=*/false); });
OFL_REGISTER_KERNEL("batch_matmul", DeviceType::kCUDA,
                    [](KernelContext& kc) { MatmulKernel(kc, /*batched=*/true); });

}  // namespace
}  // namespace ofl
