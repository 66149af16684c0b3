// CPU kernel of dropout (dropout.cpp registers the op). The local shard is
// walked as rows of its last axis; each row's first logical index comes from
// KernelContext::logical_shape and logical_offset, and the row's elements
// follow it contiguously. ParallelFor runs over the rows.
#include <algorithm>
#include <vector>

#include "oneflow_lite/core/random.h"
#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

// Logical row-major index of the first element of local row `row` (a row
// being one run along the last axis; a scalar is one row of one element).
class LogicalIndexer {
 public:
  LogicalIndexer(const Shape& local, const Shape& logical, const std::vector<int64_t>& offset)
      : local_(local), offset_(offset), strides_(local.ndim(), 1) {
    CHECK_EQ(logical.ndim(), local.ndim())
        << "dropout: logical shape " << logical << " does not match the local shape " << local;
    CHECK_EQ(static_cast<int64_t>(offset.size()), local.ndim()) << "dropout: bad logical offset";
    for (int64_t d = local.ndim() - 2; d >= 0; --d) strides_[d] = strides_[d + 1] * logical[d + 1];
  }

  int64_t row_length() const { return local_.ndim() == 0 ? 1 : local_[local_.ndim() - 1]; }

  int64_t RowStart(int64_t row) const {
    const int64_t ndim = local_.ndim();
    if (ndim == 0) return 0;
    int64_t index = offset_[ndim - 1];
    for (int64_t d = ndim - 2; d >= 0; --d) {
      index += (row % local_[d] + offset_[d]) * strides_[d];
      row /= local_[d];
    }
    return index;
  }

 private:
  const Shape& local_;
  const std::vector<int64_t>& offset_;
  std::vector<int64_t> strides_;
};

template <typename T>
void Forward(KernelContext& k) {
  const double rate = k.attr().Get<double>("rate");
  const uint64_t seed = static_cast<uint64_t>(k.attr().Get<int64_t>("seed"));
  const uint64_t stream = static_cast<uint64_t>(k.iteration);
  const T scale = static_cast<T>(1.0 / (1.0 - rate));
  const Tensor& x_t = k.in(0);
  const LogicalIndexer indexer(x_t.shape(), k.logical_shape, k.logical_offset);
  const int64_t length = indexer.row_length();
  if (length == 0) return;
  const int64_t rows = x_t.numel() / length;
  const T* x = x_t.data<T>();
  T* y = k.out(0).data<T>();
  T* mask = k.out(1).data<T>();
  ParallelFor(
      rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const uint64_t first = static_cast<uint64_t>(indexer.RowStart(r));
          for (int64_t j = 0; j < length; ++j) {
            const int64_t i = r * length + j;
            const bool keep = static_cast<double>(UniformFloat(seed, stream, first + j)) >= rate;
            mask[i] = keep ? scale : T(0);
            y[i] = x[i] * mask[i];
          }
        }
      },
      std::max<int64_t>(1, kParallelGrain / length));
}

void DropoutKernel(KernelContext& k) { OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, Forward<T>(k)); }

}  // namespace

OFL_REGISTER_KERNEL("dropout", DeviceType::kCPU, DropoutKernel);

}  // namespace ofl
