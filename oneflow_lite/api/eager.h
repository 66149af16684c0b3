// Eager execution: one registered op run on whole tensors of one device (the
// host, or a device through api/eager_devices.h) by calling its
// kernel directly (no graph, no Plan, no runtime), and its input gradients
// by the op's registered backward rule (graph/autodiff.h AppendBackward).
//
// Ownership: the executor owns its cache, at most `capacity` keys per kind
// (forward, backward); inserting into a full one empties it first.
//
// Thread-safe: the cache is locked for each lookup and insert; kernels run
// outside the lock, each call on its own tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "oneflow_lite/core/attr.h"
#include "oneflow_lite/core/status.h"
#include "oneflow_lite/core/tensor.h"

// Everything but the kernel call depends only on the op type, the
// attributes and the inputs' shapes and dtypes: attribute validation and
// defaults, shape and dtype inference, the allocation check, the kernel
// lookup (KernelRegistry::Find) and, for a gradient, the backward ops with
// their shapes. An EagerExecutor works that out once per such key (a miss)
// and keeps it; a call with a known key (a hit) allocates the outputs and
// calls the kernel(s) with a KernelContext on cpu:0, stream null. Errors
// come from the same checks a one-op graph makes (OpGraph::AddOp, the op's
// InferShape), naming the op and the value, and are never cached: a call
// that fails leaves the cache as it was. A kernel that rejects a value
// (CallKernel) fails that call only.
//
//   EagerExecutor eager;
//   std::vector<Tensor> y = eager.Run("matmul", {a, b}, {{"transpose_b", true}}).value();
//   std::vector<Tensor> dx = eager.RunGrad("matmul", {a, b}, attrs, {dy}).value();
//
// Inputs are read, never written: an op's mutable inputs (optimizer state)
// are cloned, written and returned after the outputs (RunInPlace writes
// them where they are). Outputs are fresh
// tensors. The backward runs only the ops its gradients need (the forward op
// only when a backward op reads its outputs and the caller did not pass them).

namespace ofl {

class EagerDevices;  // api/eager_devices.h

struct EagerStats {
  int64_t hits = 0;     // calls (Run or RunGrad) that found their key
  int64_t misses = 0;   // calls that had to validate, infer and look up
  int64_t entries = 0;  // keys held now, forward and backward together
};

class EagerExecutor {
 public:
  explicit EagerExecutor(size_t capacity = 4096);
  ~EagerExecutor();
  EagerExecutor(const EagerExecutor&) = delete;
  EagerExecutor& operator=(const EagerExecutor&) = delete;

  // The op's outputs, then its mutable inputs as the kernel left them.
  Maybe<std::vector<Tensor>> Run(const std::string& op_type, const std::vector<Tensor>& inputs,
                                 const AttrMap& attrs);
  // The op's outputs; the kernel writes its mutable inputs (an optimizer's
  // parameter and state) in the caller's tensors, with no copy. An error
  // found before the kernel runs (inference) changes nothing; a kernel that
  // rejects a value midway may leave them partly written, so use it for ops
  // whose kernels reject no value (the optimizer updates).
  Maybe<std::vector<Tensor>> RunInPlace(const std::string& op_type,
                                        const std::vector<Tensor>& inputs, const AttrMap& attrs);

  // Gradients of sum(outputs[i] * output_grads[i]) with respect to each
  // floating input; an undefined Tensor where no gradient exists. An
  // undefined (or empty) output_grads[i] means no gradient flows into output i.
  // forward_outputs, when given, are the op's outputs from Run on these
  // inputs: a backward op that reads them (softmax's reads y) gets them
  // instead of the op running again; ones that do not match the inferred
  // shapes and dtypes are ignored (the op then runs).
  Maybe<std::vector<Tensor>> RunGrad(const std::string& op_type, const std::vector<Tensor>& inputs,
                                     const AttrMap& attrs, const std::vector<Tensor>& output_grads,
                                     const std::vector<Tensor>& forward_outputs = {});

  // A copy of `tensor` on `device` ("cpu:N": a host tensor); waits for it.
  // An error names the device when this process cannot use it.
  Maybe<Tensor> ToDevice(const Tensor& tensor, const Device& device);

  EagerStats stats() const;
  void Clear();

  struct Kernel;       // one op ready to call (eager.cpp)
  struct GradProgram;  // the backward ops of one key, on numbered tensors

 private:
  template <typename T>
  using Cache = std::unordered_map<std::string, std::shared_ptr<const T>>;

  Maybe<std::vector<Tensor>> Call(const std::string& op_type, const std::vector<Tensor>& inputs,
                                  const AttrMap& attrs, bool in_place);
  template <typename T>
  std::shared_ptr<const T> Find(const Cache<T>& cache, const std::string& key);
  template <typename T>
  void Insert(Cache<T>* cache, const std::string& key, std::shared_ptr<const T> value);

  const size_t capacity_;
  mutable std::mutex mu_;
  Cache<Kernel> forward_;
  Cache<GradProgram> backward_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
  std::unique_ptr<EagerDevices> devices_;  // the non-host devices' contexts and streams
};

// A host tensor holding a copy of `tensor` (any device); waits for the copy.
Tensor HostCopy(const Tensor& tensor);

}  // namespace ofl
