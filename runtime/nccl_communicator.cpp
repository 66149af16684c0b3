#include "runtime/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>

#include "oneflow_lite/core/cuda/cuda_check.h"
#include "oneflow_lite/core/cuda/cuda_device_context.h"
#include "oneflow_lite/core/slicing.h"
#include "runtime/deadline.h"
#include "runtime/device_communicators.h"

namespace ofl {

namespace {

bool Pending(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

char* Byte(void* p, int64_t elements, int64_t es) { return static_cast<char*>(p) + elements * es; }
const char* Byte(const void* p, int64_t elements, int64_t es) {
  return static_cast<const char*>(p) + elements * es;
}

bool NcclType(DataType dtype, ncclDataType_t* out) {
  switch (dtype) {
    case DataType::kFloat32:
      *out = ncclFloat32;
      return true;
    case DataType::kFloat64:
      *out = ncclFloat64;
      return true;
    case DataType::kInt32:
      *out = ncclInt32;
      return true;
    case DataType::kInt64:
      *out = ncclInt64;
      return true;
    case DataType::kBFloat16:
      *out = ncclBfloat16;
      return true;
    case DataType::kFloat16:
      *out = ncclFloat16;
      return true;
    case DataType::kBool:
      *out = ncclUint8;
      return true;
  }
  return false;
}

}  // namespace

struct NcclCommunicator::Impl {
  ncclComm_t comm = nullptr;
  bool comm_aborted = false;  // ncclCommAbort ran (comm is gone)
  int ordinal = 0;
  cudaStream_t own = nullptr;
  cudaStream_t current = nullptr;
  ncclDataType_t dtype = ncclFloat32;  // of the call in progress
};

NcclCommunicator::NcclCommunicator(int64_t rank, int64_t size, std::unique_ptr<Impl> impl,
                                   std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), timeout_(timeout), impl_(std::move(impl)) {}

NcclCommunicator::~NcclCommunicator() {
  CudaDeviceGuard guard(impl_->ordinal);
  if (!impl_->comm_aborted) (void)ncclCommAbort(impl_->comm);  // never blocks on peers
  (void)cudaStreamDestroy(impl_->own);
}

Maybe<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(
    TcpStore* store, const std::string& group, const std::vector<int64_t>& members,
    int64_t world_rank, const Device& device, const NcclOptions& options) {
  OFL_ENSURE(device.type == DeviceType::kCUDA, "nccl group '", group, "': ", device,
             " is not a CUDA device");
  if (CudaDeviceCount() == 0) return Unimplemented(device, ": no CUDA device");
  auto at = std::find(members.begin(), members.end(), world_rank);
  OFL_ENSURE(at != members.end(), "nccl group '", group, "': world rank ", world_rank,
             " is not a member");
  const int64_t rank = at - members.begin();
  const int64_t size = static_cast<int64_t>(members.size());
  const std::string key = "ofl/nccl/" + group + "/id";
  ncclUniqueId id;
  if (rank == 0) {
    OFL_ENSURE(ncclGetUniqueId(&id) == ncclSuccess, "nccl group '", group,
               "': ncclGetUniqueId failed");
    std::vector<char> bytes(sizeof(id));
    std::memcpy(bytes.data(), &id, sizeof(id));
    OFL_RETURN_IF_ERROR(store->Set(key, bytes));
  } else {
    OFL_ASSIGN_OR_RETURN(std::vector<char> bytes, store->Get(key, options.timeout));
    OFL_ENSURE(bytes.size() == sizeof(id), "nccl group '", group, "': the id under '", key,
               "' has ", bytes.size(), " bytes, expected ", sizeof(id));
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  auto impl = std::make_unique<Impl>();
  impl->ordinal = CudaOrdinalOf(device);
  CudaDeviceGuard guard(impl->ordinal);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&impl->comm, static_cast<int>(size), id,
                                          static_cast<int>(rank), &config);
  const bool settled = PollUntil(Deadline(options.timeout), [&] {
    if (r != ncclInProgress) return true;
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(impl->comm, &state) != ncclSuccess) return true;  // r: failed
    r = state;
    return r != ncclInProgress;
  });
  if (!settled) {
    (void)ncclCommAbort(impl->comm);
    return Status(StatusCode::kTimeout,
                  StrCat("nccl group '", group, "' rank ", rank,
                         ": not every member joined within ", options.timeout.count(), " ms"));
  }
  if (r != ncclSuccess) {
    if (impl->comm != nullptr) (void)ncclCommAbort(impl->comm);
    return Status(StatusCode::kInternal, StrCat("nccl group '", group, "' rank ", rank,
                                                ": creation failed: ", ncclGetErrorString(r)));
  }
  OFL_CUDA_CHECK(cudaStreamCreateWithFlags(&impl->own, cudaStreamNonBlocking));
  impl->current = impl->own;
  return std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(rank, size, std::move(impl), options.timeout));
}

void NcclCommunicator::set_stream(Stream* stream) {
  impl_->current = stream == nullptr ? impl_->own : CudaStreamOf(stream);
}

std::string NcclCommunicator::What(const char* collective, const std::string& tag) const {
  return StrCat("rank ", rank_, ": nccl ", collective, " '", tag, "'");
}

Status NcclCommunicator::Begin(const std::string& what, DataType dtype, int* nccl_dtype) {
  if (aborted_.load()) {
    std::lock_guard<std::mutex> lock(mu_);
    return Fail(what, "the communicator was aborted: " + why_);
  }
  ncclDataType_t t;
  OFL_ENSURE(NcclType(dtype, &t), what, ": dtype ", DataTypeName(dtype), " has no NCCL type");
  *nccl_dtype = static_cast<int>(t);
  return Status::OK();
}

Status NcclCommunicator::Fail(const std::string& what, const std::string& reason) {
  if (!impl_->comm_aborted) {
    CudaDeviceGuard guard(impl_->ordinal);
    (void)ncclCommAbort(impl_->comm);  // stops this rank's NCCL kernels
    impl_->comm_aborted = true;
  }
  aborted_.store(true);
  return Status(StatusCode::kInternal, StrCat(what, ": ", reason));
}

Status NcclCommunicator::Finish(const std::string& what, bool grouped) {
  if (grouped) {
    const ncclResult_t r = ncclGroupEnd();
    if (!Pending(r)) return Fail(what, ncclGetErrorString(r));
  }
  const Deadline deadline(timeout_);
  Status result;
  const bool ended = PollUntil(deadline, [&] {
    if (aborted_.load()) {
      std::lock_guard<std::mutex> lock(mu_);
      result = Fail(what, "aborted: " + why_);
      return true;
    }
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(impl_->comm, &state);
    if (r != ncclSuccess) {
      result = Fail(what, ncclGetErrorString(r));
      return true;
    }
    if (state != ncclSuccess && state != ncclInProgress) {
      result = Fail(what, StrCat(ncclGetErrorString(state), " (a peer was lost or failed)"));
      return true;
    }
    if (state != ncclSuccess) return false;
    const cudaError_t done = cudaStreamQuery(impl_->current);
    if (done == cudaSuccess) return true;  // result: OK
    if (done != cudaErrorNotReady) OFL_CUDA_CHECK(done);
    (void)cudaGetLastError();
    return false;
  });
  if (ended) return result;
  return Status(StatusCode::kTimeout, Fail(what, deadline.TimedOut()).message());
}

void NcclCommunicator::Abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (why_.empty()) why_ = why;
  aborted_.store(true);  // the calling thread's wait (or next call) aborts the comm
}

#define OFL_NCCL_TRY(what, expr)                          \
  do {                                                    \
    const ncclResult_t ofl_nccl_r_ = (expr);              \
    if (!Pending(ofl_nccl_r_)) {                          \
      (void)ncclGroupEnd();                               \
      return Fail(what, ncclGetErrorString(ofl_nccl_r_)); \
    }                                                     \
  } while (0)

Status NcclCommunicator::AllReduce(void* buffer, int64_t count, DataType dtype,
                                   const std::string& tag) {
  const std::string what = What("all_reduce", tag);
  int t = 0;
  OFL_RETURN_IF_ERROR(Begin(what, dtype, &t));
  CudaDeviceGuard guard(impl_->ordinal);
  ncclGroupStart();
  OFL_NCCL_TRY(what, ncclAllReduce(buffer, buffer, count, static_cast<ncclDataType_t>(t), ncclSum,
                                   impl_->comm, impl_->current));
  const int64_t own = BalancedPart(count, size_, rank_).size;
  bytes_sent_ += ((count - own) + (size_ - 1) * own) * SizeOf(dtype);
  return Finish(what, true);
}

Status NcclCommunicator::ReduceScatter(const void* input, void* output, int64_t count,
                                       DataType dtype, const std::string& tag) {
  const std::string what = What("reduce_scatter", tag);
  int t = 0;
  OFL_RETURN_IF_ERROR(Begin(what, dtype, &t));
  const int64_t es = SizeOf(dtype);
  CudaDeviceGuard guard(impl_->ordinal);
  ncclGroupStart();
  for (int64_t q = 0; q < size_; ++q) {
    const Range part = BalancedPart(count, size_, q);
    if (part.size == 0) continue;
    OFL_NCCL_TRY(what, ncclReduce(Byte(input, part.begin, es), output, part.size,
                                  static_cast<ncclDataType_t>(t), ncclSum, static_cast<int>(q),
                                  impl_->comm, impl_->current));
  }
  bytes_sent_ += (count - BalancedPart(count, size_, rank_).size) * es;
  return Finish(what, true);
}

Status NcclCommunicator::AllGather(const void* input, void* output, const int64_t* counts,
                                   DataType dtype, const std::string& tag) {
  const std::string what = What("all_gather", tag);
  int t = 0;
  OFL_RETURN_IF_ERROR(Begin(what, dtype, &t));
  const int64_t es = SizeOf(dtype);
  CudaDeviceGuard guard(impl_->ordinal);
  ncclGroupStart();
  int64_t offset = 0;
  for (int64_t q = 0; q < size_; ++q) {
    void* to = Byte(output, offset, es);
    if (counts[q] > 0) {
      OFL_NCCL_TRY(what, ncclBroadcast(q == rank_ ? input : to, to, counts[q],
                                       static_cast<ncclDataType_t>(t), static_cast<int>(q),
                                       impl_->comm, impl_->current));
    }
    offset += counts[q];
  }
  bytes_sent_ += (size_ - 1) * counts[rank_] * es;
  return Finish(what, true);
}

Status NcclCommunicator::AllToAll(const void* input, const int64_t* send_counts, void* output,
                                  const int64_t* recv_counts, DataType dtype,
                                  const std::string& tag) {
  const std::string what = What("all_to_all", tag);
  int t = 0;
  OFL_RETURN_IF_ERROR(Begin(what, dtype, &t));
  const int64_t es = SizeOf(dtype);
  const auto nt = static_cast<ncclDataType_t>(t);
  CudaDeviceGuard guard(impl_->ordinal);
  ncclGroupStart();
  int64_t send_offset = 0, recv_offset = 0;
  for (int64_t q = 0; q < size_; ++q) {
    if (q == rank_) {
      OFL_CUDA_CHECK(cudaMemcpyAsync(Byte(output, recv_offset, es), Byte(input, send_offset, es),
                                     recv_counts[q] * es, cudaMemcpyDeviceToDevice,
                                     impl_->current));
    } else {
      const int peer = static_cast<int>(q);
      if (send_counts[q] > 0) {
        OFL_NCCL_TRY(what, ncclSend(Byte(input, send_offset, es), send_counts[q], nt, peer,
                                    impl_->comm, impl_->current));
        bytes_sent_ += send_counts[q] * es;
      }
      if (recv_counts[q] > 0) {
        OFL_NCCL_TRY(what, ncclRecv(Byte(output, recv_offset, es), recv_counts[q], nt, peer,
                                    impl_->comm, impl_->current));
      }
    }
    send_offset += send_counts[q];
    recv_offset += recv_counts[q];
  }
  return Finish(what, true);
}

Status NcclCommunicator::Broadcast(void* buffer, int64_t count, DataType dtype, int64_t root,
                                   const std::string& tag) {
  const std::string what = What("broadcast", tag);
  int t = 0;
  OFL_RETURN_IF_ERROR(Begin(what, dtype, &t));
  OFL_ENSURE(root >= 0 && root < size_, what, ": root ", root, " is not in [0, ", size_, ")");
  CudaDeviceGuard guard(impl_->ordinal);
  ncclGroupStart();
  OFL_NCCL_TRY(what, ncclBroadcast(buffer, buffer, count, static_cast<ncclDataType_t>(t),
                                   static_cast<int>(root), impl_->comm, impl_->current));
  if (rank_ == root) bytes_sent_ += (size_ - 1) * count * SizeOf(dtype);
  return Finish(what, true);
}

Status NcclCommunicator::Send(const void* buffer, int64_t count, DataType dtype, int64_t peer,
                              const std::string& tag) {
  const std::string what = What("send", tag);
  int t = 0;
  OFL_RETURN_IF_ERROR(Begin(what, dtype, &t));
  OFL_ENSURE(peer >= 0 && peer < size_, what, ": peer ", peer, " is not in [0, ", size_, ")");
  CudaDeviceGuard guard(impl_->ordinal);
  ncclGroupStart();
  OFL_NCCL_TRY(what, ncclSend(buffer, count, static_cast<ncclDataType_t>(t), static_cast<int>(peer),
                              impl_->comm, impl_->current));
  if (peer != rank_) bytes_sent_ += count * SizeOf(dtype);
  return Finish(what, true);
}

Status NcclCommunicator::Recv(void* buffer, int64_t count, DataType dtype, int64_t peer,
                              const std::string& tag) {
  const std::string what = What("recv", tag);
  int t = 0;
  OFL_RETURN_IF_ERROR(Begin(what, dtype, &t));
  OFL_ENSURE(peer >= 0 && peer < size_, what, ": peer ", peer, " is not in [0, ", size_, ")");
  CudaDeviceGuard guard(impl_->ordinal);
  ncclGroupStart();
  OFL_NCCL_TRY(what, ncclRecv(buffer, count, static_cast<ncclDataType_t>(t), static_cast<int>(peer),
                              impl_->comm, impl_->current));
  return Finish(what, true);
}

namespace {

// The factory runtime/device_communicators.h calls for CUDA groups.
Maybe<std::unique_ptr<Communicator>> MakeNccl(TcpStore* store, const std::string& group,
                                              const std::vector<int64_t>& members,
                                              int64_t world_rank, const Device& device,
                                              std::chrono::milliseconds timeout) {
  if (CudaDeviceCount() == 0) {  // as Runtime::Create names it
    return Unimplemented("rank ", world_rank, ": ", device, ": no CUDA device");
  }
  NcclOptions options;
  options.timeout = timeout;
  OFL_ASSIGN_OR_RETURN(
      std::unique_ptr<NcclCommunicator> nccl,
      NcclCommunicator::Create(store, group, members, world_rank, device, options));
  return std::unique_ptr<Communicator>(std::move(nccl));
}

}  // namespace

}  // namespace ofl

// Named so that every link of ofl_runtime keeps this object file, and with it
// the registration (runtime/CMakeLists.txt, --undefined).
extern "C" const bool ofl_nccl_communicator_registered =
    ofl::RegisterDeviceCommunicator(ofl::DeviceType::kCUDA, ofl::MakeNccl);
