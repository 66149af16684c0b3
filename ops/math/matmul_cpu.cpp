// CPU kernels of matmul, batch_matmul and matmul_bias. float32 runs oneDNN's
// matmul primitive straight on the tensors' buffers, tile by tile
// (matmul_tiles.h: the output cut by its sizes alone; each tile one
// single-threaded call over the whole contraction, tiles side by side on
// OpenMP threads), so results are bitwise the same for any number of threads.
// Transposes are expressed as strides; the one copy is a transposed a's
// columns of a row tile, packed side by side first (PackedA) because
// oneDNN's AVX2 sgemm ran such a strided view at half its speed; matmul_bias
// passes its bias as the primitive's bias argument, added as each output
// block is written. float64 runs OpenBLAS dgemm, once per batch element
// (matmul_bias then adds the bias row by row, as bias_add does); OpenBLAS's
// own threading can change the last bits with the thread count, so float64
// is bitwise only run to run at one thread count; bfloat16 inputs run oneDNN's
// bfloat16 matmul with a float32 output (float32 accumulation), or, on a CPU
// without one, are widened to float32 (exact) for the float32 path.
//
// oneDNN primitives are costly to create, so they are cached per product
// sizes and tile shape in ops/onednn.h's cache. The primitives use a
// user-provided scratchpad (one per calling thread), which is what makes
// one cached primitive safe to execute from several threads at once: in
// oneDNN's default scratchpad mode a primitive must run on the thread that
// created it.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ops/array/bfloat16.h"
#include "ops/kernel.h"
#include "ops/math/matmul_dims.h"
#include "ops/math/matmul_tiles.h"
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

// ---- float32 and bfloat16: oneDNN, tile by tile ---------------------------

struct CachedMatmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  dnnl::memory::desc a_md, b_md, c_md, bias_md;
  size_t scratchpad_bytes = 0;
};

// One operand's view: `rows` x `cols` (x `batch` when batch > 0) at the
// given element strides of the whole tensor.
dnnl::memory::desc ViewDesc(int64_t batch, int64_t rows, int64_t cols, int64_t row_stride,
                            int64_t col_stride, int64_t batch_stride,
                            dnnl::memory::data_type type) {
  using dims = dnnl::memory::dims;
  dims shape = {rows, cols};
  dims strides = {row_stride, col_stride};
  if (batch > 0) {
    shape.insert(shape.begin(), batch);
    strides.insert(strides.begin(), batch_stride);
  }
  return dnnl::memory::desc(shape, type, strides);
}

// The batch count of a tile's views: 0 (no batch dimension) for a plain product.
int64_t TileBatch(const GemmSizes& s, const MatmulTile& t) { return s.batch > 0 ? t.b1 - t.b0 : 0; }

// Whether the tile reads a transposed a through a packed copy: a is stored
// (k, m), and a tile of fewer than m rows would be a view of k runs of mt
// elements, m apart. The copy puts the runs PackedStride apart, a pad past
// mt so that no power of two separates them: single-threaded, oneDNN's AVX2
// sgemm ran the GPT step's weight gradients (1024 and 2048 rows, row tiles
// of 512 and 416, contracted over 1024) at 28-36 GFLOP/s as views, 40-63
// packed without the pad and 52-67 with it (AMD EPYC, under load). The
// copy is exact: the sums are those of the view.
bool PackedA(const GemmSizes& s, const MatmulTile& t) { return s.ta && t.r1 - t.r0 < s.m; }
int64_t PackedStride(const MatmulTile& t) { return t.r1 - t.r0 + 16; }

// Null when oneDNN has no implementation (bfloat16 on a CPU without it).
// Created on the tile's single thread, so oneDNN plans it for one thread.
std::shared_ptr<const CachedMatmul> CreateMatmul(const GemmSizes& s, const MatmulTile& t) {
  using dt = dnnl::memory::data_type;
  const dt in = s.bf16 ? dt::bf16 : dt::f32;
  const int64_t bt = TileBatch(s, t), mt = t.r1 - t.r0, nt = t.c1 - t.c0;
  auto c = std::make_shared<CachedMatmul>();
  // a is (m, k), stored (k, m) when transposed (packed: (k, mt), one batch
  // element); b is (k, n), stored (n, k) when transposed.
  if (PackedA(s, t)) {
    c->a_md = ViewDesc(bt, mt, s.k, 1, PackedStride(t), PackedStride(t) * s.k, in);
  } else {
    c->a_md = s.ta ? ViewDesc(bt, mt, s.k, 1, s.m, s.m * s.k, in)
                   : ViewDesc(bt, mt, s.k, s.k, 1, s.m * s.k, in);
  }
  c->b_md = s.tb ? ViewDesc(bt, s.k, nt, 1, s.k, s.k * s.n, in)
                 : ViewDesc(bt, s.k, nt, s.n, 1, s.k * s.n, in);
  c->c_md = ViewDesc(bt, mt, nt, s.n, 1, s.m * s.n, dt::f32);
  if (s.bias) c->bias_md = ViewDesc(0, 1, nt, nt, 1, 0, dt::f32);  // broadcast over rows
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

std::shared_ptr<const CachedMatmul> GetMatmul(const GemmSizes& s, const MatmulTile& t) {
  using Key = decltype(std::tuple_cat(s.Key(), std::make_tuple(int64_t{}, int64_t{}, int64_t{})));
  static onednn::PrimitiveCache<Key, CachedMatmul> cache;
  const Key key = std::tuple_cat(s.Key(), std::make_tuple(t.b1 - t.b0, t.r1 - t.r0, t.c1 - t.c0));
  return cache.Get(key, [&] { return CreateMatmul(s, t); });
}

// While it lives, oneDNN (OpenMP) on the calling thread plans and runs with
// one thread; the tiles are the parallelism, and each tile's sums keep one
// order.
class OneOmpThread {
 public:
  OneOmpThread() : previous_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneOmpThread() { omp_set_num_threads(previous_); }
  OneOmpThread(const OneOmpThread&) = delete;
  OneOmpThread& operator=(const OneOmpThread&) = delete;

 private:
  int previous_;
};

// Runs one tile: a and b are float32, or bfloat16 bits when s.bf16 (elements
// of `in_bytes`); c is float32; bias (float32, n values) when s.bias.
void RunTile(const GemmSizes& s, const CachedMatmul& mm, const MatmulTile& t, const char* a,
             const char* b, float* c, const float* bias, size_t in_bytes) {
  const int64_t a_off = t.b0 * s.m * s.k + (s.ta ? t.r0 : t.r0 * s.k);
  const int64_t b_off = t.b0 * s.k * s.n + (s.tb ? t.c0 * s.k : t.c0);
  const int64_t c_off = t.b0 * s.m * s.n + t.r0 * s.n + t.c0;
  const char* a_tile = a + a_off * in_bytes;
  if (PackedA(s, t)) {  // one batch element (a row tile): its k rows of mt, side by side
    const size_t row = static_cast<size_t>(t.r1 - t.r0) * in_bytes;
    const size_t stride = static_cast<size_t>(PackedStride(t)) * in_bytes;
    char* packed = static_cast<char*>(onednn::PackBuffer(static_cast<size_t>(s.k) * stride));
    for (int64_t i = 0; i < s.k; ++i) {
      std::memcpy(packed + i * stride, a_tile + i * s.m * in_bytes, row);
    }
    a_tile = packed;
  }
  dnnl::stream& stream = onednn::ThreadStream();
  const dnnl::engine& engine = onednn::Engine();
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, dnnl::memory(mm.a_md, engine, const_cast<char*>(a_tile))},
      {DNNL_ARG_WEIGHTS, dnnl::memory(mm.b_md, engine, const_cast<char*>(b + b_off * in_bytes))},
      {DNNL_ARG_DST, dnnl::memory(mm.c_md, engine, c + c_off)}};
  if (bias != nullptr) {
    args.emplace(DNNL_ARG_BIAS, dnnl::memory(mm.bias_md, engine, const_cast<float*>(bias + t.c0)));
  }
  if (mm.scratchpad_bytes > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(mm.pd.scratchpad_desc(), engine,
                                                   onednn::Scratchpad(mm.scratchpad_bytes)));
  }
  mm.primitive.execute(stream, args);
  stream.wait();
}

// The product tile by tile (matmul_tiles.h), tiles side by side on OpenMP
// threads (the pool oneDNN itself uses; the actor thread sets its count), each
// tile's call single-threaded. False, with nothing written, when oneDNN has
// no primitive for it (bfloat16 on a CPU without one). Primitives are made
// before the parallel loop, so nothing inside it throws from creation.
bool RunTiles(const GemmSizes& s, const void* a, const void* b, float* c, const float* bias) {
  const std::vector<MatmulTile> tiles = MatmulTilesOf(s);
  const int64_t count = static_cast<int64_t>(tiles.size());
  std::vector<std::shared_ptr<const CachedMatmul>> prims(tiles.size());
  {
    OneOmpThread one;
    for (int64_t i = 0; i < count; ++i) {
      prims[i] = GetMatmul(s, tiles[i]);
      if (prims[i] == nullptr) return false;
    }
  }
  const size_t in_bytes = s.bf16 ? sizeof(uint16_t) : sizeof(float);
  const int threads =
      kKernelsSerial ? 1 : static_cast<int>(std::min<int64_t>(count, omp_get_max_threads()));
  std::exception_ptr error;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
  for (int64_t i = 0; i < count; ++i) {
    OneOmpThread one;
    try {
      RunTile(s, *prims[i], tiles[i], static_cast<const char*>(a), static_cast<const char*>(b), c,
              bias, in_bytes);
    } catch (...) {
#pragma omp critical(ofl_matmul_tile_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return true;
}

void Gemm(const GemmSizes& s, const float* a, const float* b, float* c,
          const float* bias = nullptr) {
  GemmSizes f32 = s;
  f32.bf16 = false;
  CHECK_EQ(s.bias, bias != nullptr);
  CHECK(RunTiles(f32, a, b, c, bias)) << "matmul: oneDNN has no float32 matmul";
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
  if (RunTiles(s, a.raw(), b.raw(), out.data<float>(), nullptr)) return;
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
