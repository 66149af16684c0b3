// BoxingMemory (boxing_memory.h).
#include "runtime/boxing_memory.h"

#include "oneflow_lite/core/reduce_sum.h"

namespace ofl {

BoxingMemory::BoxingMemory(const BoxingStream& on)
    : device_(on.stream != nullptr && !on.stream->device().is_host()),
      context_(on.device),
      stream_(on.stream) {
  if (device_) {
    CHECK(on.device != nullptr) << "a boxing step on " << on.stream->device() << " needs its "
                                << "device context";
    scope_.emplace(on.stream);
    return;
  }
  if (on.stream != nullptr && !on.stream->is_inline()) {
    on.stream->Synchronize();  // a CPU worker stream: the waits for the input
  }
  const Device host = on.stream != nullptr ? on.stream->device() : Device{};
  if (context_ == nullptr) context_ = &host_context_.emplace(host);
  stream_ = &inline_.emplace(host);
}

Maybe<Tensor> BoxingMemory::Scratch(const Shape& shape, DataType dtype) const {
  if (!device_) return Tensor(shape, dtype);
  return context_->allocator()->NewTensor(shape, dtype);
}

void BoxingMemory::CopyBox(const Tensor& src, const std::vector<int64_t>& src_start, Tensor* dst,
                           const std::vector<int64_t>& dst_start, const Shape& box) const {
  context_->CopyBox(stream_, src, src_start, dst, dst_start, box);
}

Maybe<Tensor> BoxingMemory::Pack(const Tensor& src, const std::vector<int64_t>& start,
                                 const Shape& box) const {
  OFL_ASSIGN_OR_RETURN(Tensor out, Scratch(box, src.dtype()));
  CopyBox(src, start, &out, std::vector<int64_t>(box.ndim(), 0), box);
  return out;
}

void BoxingMemory::Copy(Tensor* dst, const Tensor& src) const {
  CHECK(dst->shape() == src.shape() && dst->dtype() == src.dtype());
  context_->Copy(stream_, dst->raw(), src.raw(), dst->nbytes());
}

void BoxingMemory::Zero(Tensor* t) const { context_->Fill(stream_, t->raw(), 0, t->nbytes()); }

Status BoxingMemory::Add(void* dst, const void* src, int64_t n, DataType dtype) const {
  if (!device_ && !CanAccumulate(dtype)) {  // a device sums bfloat16 and float16 too
    return Unimplemented("boxing: no sum for ", DataTypeName(dtype));
  }
  context_->Accumulate(stream_, dst, src, n, dtype);
  return Status::OK();
}

Communicator* BoxingMemory::Ready(Communicator* comm) const {
  if (!device_) return comm;
  if (comm->enqueues_on_stream()) {
    comm->set_stream(stream_);
  } else {
    stream_->Synchronize();
  }
  return comm;
}

}  // namespace ofl
