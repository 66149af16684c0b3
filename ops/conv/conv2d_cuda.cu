// CUDA kernels of conv2d, conv2d_grad_input and conv2d_grad_weight on cuDNN's
// legacy convolution API, float32 and float64, NCHW, no groups.
//
// Precision and determinism: the convolution descriptor asks for
// CUDNN_FMA_MATH (no TF32, no tensor-op down-conversion) and the algorithm
// is the first of cuDNN's heuristic list (the *_v7 queries) that succeeds
// with that math type, is CUDNN_DETERMINISTIC and sums directly (no FFT or
// Winograd); if none qualifies, the deterministic GEMM-like algorithms are
// used (implicit GEMM forward, ALGO_1 for both backward passes). Workspace is stream-ordered
// scratch. Shapes come from the local tensors (Conv2dGeometry), as conv2d_cpu.cpp. Descriptors are
// made per call; the handle is the stream's (cuda_util.h).
#include <climits>

#include "ops/conv/conv_geometry.h"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

int ToInt(int64_t v, const char* what) {
  CHECK(v >= 0 && v <= INT_MAX) << "conv2d: " << what << "=" << v << " is too large for cuDNN";
  return static_cast<int>(v);
}

cudnnDataType_t CudnnTypeOf(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return CUDNN_DATA_FLOAT;
    case DataType::kFloat64:
      return CUDNN_DATA_DOUBLE;
    default:
      ThrowNoKernelFor("float32/float64", dtype);
  }
}

// The tensor, filter and convolution descriptors of one call.
class ConvDescriptors {
 public:
  ConvDescriptors(const Conv2dGeometry& g, DataType dtype) {
    const cudnnDataType_t type = CudnnTypeOf(dtype);
    OFL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_));
    OFL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y_));
    OFL_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w_));
    OFL_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv_));
    OFL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, type, ToInt(g.batch, "N"),
                                               ToInt(g.in_channels, "C"), ToInt(g.height, "H"),
                                               ToInt(g.width, "W")));
    OFL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, type, ToInt(g.batch, "N"),
                                               ToInt(g.out_channels, "O"), ToInt(g.out_h, "Ho"),
                                               ToInt(g.out_w, "Wo")));
    OFL_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
        w_, type, CUDNN_TENSOR_NCHW, ToInt(g.out_channels, "O"), ToInt(g.in_channels, "C"),
        ToInt(g.kernel_h, "kh"), ToInt(g.kernel_w, "kw")));
    OFL_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        conv_, ToInt(g.pad_h, "pad"), ToInt(g.pad_w, "pad"), ToInt(g.stride_h, "stride"),
        ToInt(g.stride_w, "stride"), ToInt(g.dilation_h, "dilation"),
        ToInt(g.dilation_w, "dilation"), CUDNN_CROSS_CORRELATION, type));
    OFL_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH));
    int n = 0, c = 0, h = 0, w = 0;
    OFL_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv_, x_, w_, &n, &c, &h, &w));
    CHECK(n == g.batch && c == g.out_channels && h == g.out_h && w == g.out_w)
        << "conv2d: cuDNN's output [" << n << ", " << c << ", " << h << ", " << w
        << "] differs from " << g.output_shape();
  }
  ~ConvDescriptors() {
    (void)cudnnDestroyConvolutionDescriptor(conv_);
    (void)cudnnDestroyFilterDescriptor(w_);
    (void)cudnnDestroyTensorDescriptor(y_);
    (void)cudnnDestroyTensorDescriptor(x_);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;

  cudnnTensorDescriptor_t x() const { return x_; }
  cudnnTensorDescriptor_t y() const { return y_; }
  cudnnFilterDescriptor_t w() const { return w_; }
  cudnnConvolutionDescriptor_t conv() const { return conv_; }

 private:
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
};

// Algorithms that sum in the direct order of a GEMM (no FFT or Winograd
// transforms, whose rounding is larger) and are deterministic.
bool IsDirect(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}
bool IsDirect(cudnnConvolutionBwdDataAlgo_t a) { return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1; }
bool IsDirect(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
}

// The first heuristic result that ran the query, is deterministic, direct
// (IsDirect) and keeps FMA math (float64 also accepts the default math,
// which has no reduced-precision mode for it); `fallback` otherwise. Sets
// the chosen math type on the descriptor.
template <typename Perf, typename Algo>
Algo ChooseAlgo(const Perf* perfs, int count, Algo fallback, DataType dtype,
                cudnnConvolutionDescriptor_t conv) {
  for (int i = 0; i < count; ++i) {
    const Perf& p = perfs[i];
    const bool math = p.mathType == CUDNN_FMA_MATH ||
                      (dtype == DataType::kFloat64 && p.mathType == CUDNN_DEFAULT_MATH);
    if (p.status == CUDNN_STATUS_SUCCESS && p.determinism == CUDNN_DETERMINISTIC && math &&
        IsDirect(p.algo)) {
      OFL_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, p.mathType));
      return p.algo;
    }
  }
  OFL_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH));
  return fallback;
}

constexpr int kMaxAlgos = 16;

// alpha = 1 and beta = 0 in the descriptor's scaling type.
struct Scaling {
  explicit Scaling(DataType dtype) : f64(dtype == DataType::kFloat64) {}
  const void* one() const { return f64 ? static_cast<const void*>(&one64) : &one32; }
  const void* zero() const { return f64 ? static_cast<const void*>(&zero64) : &zero32; }
  bool f64;
  float one32 = 1.0f, zero32 = 0.0f;
  double one64 = 1.0, zero64 = 0.0;
};

bool Empty(const Conv2dGeometry& g) {
  return g.batch == 0 || g.in_channels == 0 || g.out_channels == 0 || g.out_h <= 0 || g.out_w <= 0;
}

void Conv2dKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Tensor& x = k.in(0);
  const Tensor& w = k.in(1);
  Tensor& y = k.out(0);
  const Conv2dGeometry g = Conv2dGeometry::Make(x.shape(), w.shape(), k.attr());
  CHECK(y.shape() == g.output_shape()) << k.op_name << ": y " << y.shape();
  if (y.numel() == 0) return;
  if (Empty(g)) return cuda::Fill(y, 0.0, stream);
  const ConvDescriptors d(g, y.dtype());
  cudnnHandle_t handle = cuda::CudnnHandle(k.device.index, stream);
  cudnnConvolutionFwdAlgoPerf_t perfs[kMaxAlgos];
  int count = 0;
  OFL_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x(), d.w(), d.conv(), d.y(),
                                                         kMaxAlgos, &count, perfs));
  const cudnnConvolutionFwdAlgo_t algo =
      ChooseAlgo(perfs, count, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, y.dtype(), d.conv());
  size_t bytes = 0;
  OFL_CUDNN_CHECK(
      cudnnGetConvolutionForwardWorkspaceSize(handle, d.x(), d.w(), d.conv(), d.y(), algo, &bytes));
  const cuda::StreamBuffer workspace(bytes, stream);
  const Scaling s(y.dtype());
  OFL_CUDNN_CHECK(cudnnConvolutionForward(handle, s.one(), d.x(), x.raw(), d.w(), w.raw(), d.conv(),
                                          algo, workspace.get(), bytes, s.zero(), d.y(), y.raw()));
}

void Conv2dGradInputKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Tensor& dy = k.in(0);
  const Tensor& w = k.in(1);
  Tensor& dx = k.out(0);
  const Conv2dGeometry g = Conv2dGeometry::Make(dx.shape(), w.shape(), k.attr());
  CHECK(dy.shape() == g.output_shape()) << k.op_name << ": dy " << dy.shape();
  if (dx.numel() == 0) return;
  if (Empty(g)) return cuda::Fill(dx, 0.0, stream);
  const ConvDescriptors d(g, dx.dtype());
  cudnnHandle_t handle = cuda::CudnnHandle(k.device.index, stream);
  cudnnConvolutionBwdDataAlgoPerf_t perfs[kMaxAlgos];
  int count = 0;
  OFL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d.w(), d.y(), d.conv(), d.x(),
                                                              kMaxAlgos, &count, perfs));
  const cudnnConvolutionBwdDataAlgo_t algo =
      ChooseAlgo(perfs, count, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, dx.dtype(), d.conv());
  size_t bytes = 0;
  OFL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, d.w(), d.y(), d.conv(),
                                                               d.x(), algo, &bytes));
  const cuda::StreamBuffer workspace(bytes, stream);
  const Scaling s(dx.dtype());
  OFL_CUDNN_CHECK(cudnnConvolutionBackwardData(handle, s.one(), d.w(), w.raw(), d.y(), dy.raw(),
                                               d.conv(), algo, workspace.get(), bytes, s.zero(),
                                               d.x(), dx.raw()));
}

void Conv2dGradWeightKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Tensor& x = k.in(0);
  const Tensor& dy = k.in(1);
  Tensor& dw = k.out(0);
  const Conv2dGeometry g = Conv2dGeometry::Make(x.shape(), dw.shape(), k.attr());
  CHECK(dy.shape() == g.output_shape()) << k.op_name << ": dy " << dy.shape();
  if (dw.numel() == 0) return;
  if (Empty(g)) return cuda::Fill(dw, 0.0, stream);
  const ConvDescriptors d(g, dw.dtype());
  cudnnHandle_t handle = cuda::CudnnHandle(k.device.index, stream);
  cudnnConvolutionBwdFilterAlgoPerf_t perfs[kMaxAlgos];
  int count = 0;
  OFL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, d.x(), d.y(), d.conv(),
                                                                d.w(), kMaxAlgos, &count, perfs));
  const cudnnConvolutionBwdFilterAlgo_t algo =
      ChooseAlgo(perfs, count, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, dw.dtype(), d.conv());
  size_t bytes = 0;
  OFL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, d.x(), d.y(), d.conv(),
                                                                 d.w(), algo, &bytes));
  const cuda::StreamBuffer workspace(bytes, stream);
  const Scaling s(dw.dtype());
  OFL_CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, s.one(), d.x(), x.raw(), d.y(), dy.raw(),
                                                 d.conv(), algo, workspace.get(), bytes, s.zero(),
                                                 d.w(), dw.raw()));
}

OFL_REGISTER_KERNEL("conv2d", DeviceType::kCUDA, Conv2dKernel);
OFL_REGISTER_KERNEL("conv2d_grad_input", DeviceType::kCUDA, Conv2dGradInputKernel);
OFL_REGISTER_KERNEL("conv2d_grad_weight", DeviceType::kCUDA, Conv2dGradWeightKernel);

}  // namespace
}  // namespace ofl
