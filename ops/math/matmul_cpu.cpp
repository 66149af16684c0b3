// CPU kernels of matmul, batch_matmul and matmul_bias. float32 runs oneDNN's
// matmul primitive straight on the tensors' buffers (transposes are
// expressed as strides, so nothing is copied; matmul_bias passes its bias as
// the primitive's bias argument, added as each output block is written);
// float64 runs OpenBLAS dgemm, once per batch element (matmul_bias then adds
// the bias row by row, as bias_add does); bfloat16 inputs run oneDNN's bfloat16 matmul with a
// float32 output (float32 accumulation), or, on a CPU without one, are
// widened to float32 (exact) for the float32 path.
//
// oneDNN primitives are costly to create, so they are cached per
// (batch, m, n, k, transpose_a, transpose_b, bfloat16, bias) in ops/onednn.h's cache. The
// primitives use a user-provided scratchpad (one per calling thread), which
// is what makes one cached primitive safe to execute from several threads
// at once: in oneDNN's default scratchpad mode a primitive must run on the
// thread that created it.
#include <cblas.h>

#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ops/array/bfloat16.h"
#include "ops/kernel.h"
#include "ops/math/matmul_dims.h"
#include "ops/onednn.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

// The sizes of one product (matmul_dims.h) and whether it is bfloat16 in,
// float32 out; the key of the oneDNN primitive cache.
struct GemmSizes : MatmulDims {
  bool bf16 = false;  // bfloat16 a and b, float32 c
  bool bias = false;  // a bias of n values added to every row of c (2-D only)
  auto Key() const { return std::make_tuple(batch, m, n, k, ta, tb, bf16, bias); }
};

GemmSizes SizesOf(const KernelContext& kc, bool batched) {
  GemmSizes s;
  static_cast<MatmulDims&>(s) = MatmulDimsOf(kc, batched);
  s.bf16 = kc.in(0).dtype() == DataType::kBFloat16;
  s.bias = kc.inputs.size() == 3;
  return s;
}

// ---- float32 and bfloat16: oneDNN -----------------------------------------

struct CachedMatmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  dnnl::memory::desc a_md, b_md, c_md, bias_md;
  size_t scratchpad_bytes = 0;
};

dnnl::memory::desc MatrixDesc(int64_t batch, int64_t rows, int64_t cols, bool transposed,
                              dnnl::memory::data_type type) {
  // The logical (rows, cols) matrix; stored as (cols, rows) when transposed.
  using dims = dnnl::memory::dims;
  dims shape = {rows, cols};
  dims strides = transposed ? dims{1, rows} : dims{cols, 1};
  if (batch > 0) {
    shape.insert(shape.begin(), batch);
    strides.insert(strides.begin(), rows * cols);
  }
  return dnnl::memory::desc(shape, type, strides);
}

// Null when oneDNN has no implementation (bfloat16 on a CPU without it).
std::shared_ptr<const CachedMatmul> CreateMatmul(const GemmSizes& s) {
  using dt = dnnl::memory::data_type;
  const dt in = s.bf16 ? dt::bf16 : dt::f32;
  auto c = std::make_shared<CachedMatmul>();
  c->a_md = MatrixDesc(s.batch, s.m, s.k, s.ta, in);
  c->b_md = MatrixDesc(s.batch, s.k, s.n, s.tb, in);
  c->c_md = MatrixDesc(s.batch, s.m, s.n, false, dt::f32);
  if (s.bias) c->bias_md = MatrixDesc(0, 1, s.n, false, dt::f32);  // broadcast over rows
  dnnl::matmul::desc desc = s.bias ? dnnl::matmul::desc(c->a_md, c->b_md, c->bias_md, c->c_md)
                                   : dnnl::matmul::desc(c->a_md, c->b_md, c->c_md);
  try {
    c->pd = dnnl::matmul::primitive_desc(desc, onednn::UserScratchpad(), onednn::Engine());
  } catch (const dnnl::error&) {
    if (s.bf16) return nullptr;
    throw;
  }
  c->primitive = dnnl::matmul(c->pd);
  c->scratchpad_bytes = c->pd.scratchpad_desc().get_size();
  return c;
}

std::shared_ptr<const CachedMatmul> GetMatmul(const GemmSizes& s) {
  static onednn::PrimitiveCache<decltype(s.Key()), CachedMatmul> cache;
  return cache.Get(s.Key(), [&] { return CreateMatmul(s); });
}

// a and b are float32, or bfloat16 bits when s.bf16; c is float32; bias
// (float32, n values) only for a primitive made with one.
void RunMatmul(const CachedMatmul& mm, const void* a, const void* b, float* c,
               const float* bias = nullptr) {
  dnnl::stream& stream = onednn::ThreadStream();
  dnnl::memory a_mem(mm.a_md, onednn::Engine(), const_cast<void*>(a));
  dnnl::memory b_mem(mm.b_md, onednn::Engine(), const_cast<void*>(b));
  dnnl::memory c_mem(mm.c_md, onednn::Engine(), c);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}};
  if (bias != nullptr) {
    args.emplace(DNNL_ARG_BIAS,
                 dnnl::memory(mm.bias_md, onednn::Engine(), const_cast<float*>(bias)));
  }
  if (mm.scratchpad_bytes > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(mm.pd.scratchpad_desc(), onednn::Engine(),
                                                   onednn::Scratchpad(mm.scratchpad_bytes)));
  }
  mm.primitive.execute(stream, args);
  stream.wait();
}

void Gemm(const GemmSizes& s, const float* a, const float* b, float* c,
          const float* bias = nullptr) {
  GemmSizes f32 = s;
  f32.bf16 = false;
  CHECK_EQ(s.bias, bias != nullptr);
  RunMatmul(*GetMatmul(f32), a, b, c, bias);
}

// ---- float64: OpenBLAS ---------------------------------------------------

void Gemm(const GemmSizes& s, const double* a, const double* b, double* c,
          const double* bias = nullptr) {
  const int64_t count = s.batch > 0 ? s.batch : 1;
  const int64_t lda = s.ta ? s.m : s.k;
  const int64_t ldb = s.tb ? s.k : s.n;
  for (int64_t i = 0; i < count; ++i) {
    cblas_dgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(s.m), static_cast<blasint>(s.n), static_cast<blasint>(s.k),
                1.0, a + i * s.m * s.k, static_cast<blasint>(std::max<int64_t>(1, lda)),
                b + i * s.k * s.n, static_cast<blasint>(std::max<int64_t>(1, ldb)), 0.0,
                c + i * s.m * s.n, static_cast<blasint>(std::max<int64_t>(1, s.n)));
  }
  if (bias == nullptr) return;
  ParallelFor(s.m, [&](int64_t r0, int64_t r1) {  // c + bias, as bias_add computes it
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t j = 0; j < s.n; ++j) c[r * s.n + j] += bias[j];
    }
  });
}

// ---- bfloat16 in, float32 out -------------------------------------------

std::vector<float> Widen(const Tensor& t) {
  std::vector<float> f(static_cast<size_t>(t.numel()));
  const uint16_t* h = static_cast<const uint16_t*>(t.raw());
  ParallelFor(t.numel(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f[i] = BFloat16ToFloat(h[i]);
  });
  return f;
}

// oneDNN's bfloat16 matmul where the CPU has one (products exact, float32
// accumulation); elsewhere the inputs widened to float32 (exact) and the
// float32 path, which computes the same sums.
void GemmBFloat16(const GemmSizes& s, const Tensor& a, const Tensor& b, Tensor& out) {
  CHECK(out.dtype() == DataType::kFloat32) << "bfloat16 matmul writes float32";
  std::shared_ptr<const CachedMatmul> mm = GetMatmul(s);
  if (mm != nullptr) {
    RunMatmul(*mm, a.raw(), b.raw(), out.data<float>());
    return;
  }
  std::vector<float> fa = Widen(a), fb = Widen(b);
  Gemm(s, fa.data(), fb.data(), out.data<float>());
}

void MatmulKernel(KernelContext& kc, bool batched) {
  GemmSizes s = SizesOf(kc, batched);
  Tensor& out = kc.out(0);
  if (out.numel() == 0) return;
  if (s.k == 0) {  // an empty sum (matmul_bias: bias alone in every row)
    out.Fill(0.0);
    if (s.bias) {
      OFL_DISPATCH_FLOAT(out.dtype(), T, {
        const T* b = kc.in(2).data<T>();
        T* c = out.data<T>();
        for (int64_t i = 0; i < out.numel(); ++i) c[i] += b[i % s.n];
      });
    }
    return;
  }
  if (kc.in(0).dtype() == DataType::kBFloat16) {
    GemmBFloat16(s, kc.in(0), kc.in(1), out);
    return;
  }
  OFL_DISPATCH_FLOAT(out.dtype(), T,
                     Gemm(s, kc.in(0).data<T>(), kc.in(1).data<T>(), out.data<T>(),
                          s.bias ? kc.in(2).data<T>() : nullptr));
}

OFL_REGISTER_KERNEL("matmul", DeviceType::kCPU,
                    [](KernelContext& kc) { MatmulKernel(kc, /*batched=*/false); });
OFL_REGISTER_KERNEL("batch_matmul", DeviceType::kCPU,
                    [](KernelContext& kc) { MatmulKernel(kc, /*batched=*/true); });
OFL_REGISTER_KERNEL("matmul_bias", DeviceType::kCPU,
                    [](KernelContext& kc) { MatmulKernel(kc, /*batched=*/false); });

}  // namespace
}  // namespace ofl
