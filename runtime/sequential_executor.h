// SequentialExecutor: runs a Plan's tasks one after another on the calling
// thread, for one device. It owns every register's buffer, allocated once;
// variables keep their values across runs. This is the Foundation's
// executor; the actor runtime (distributed-execution issue) replaces it and
// keeps this as the single-device reference. Not thread-safe: one Run at a
// time.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/tensor.h"
#include "ops/kernel.h"
#include "runtime/allocator.h"

namespace ofl {

class SequentialExecutor {
 public:
  // Checks that every compute task has a CPU kernel and allocates buffers.
  static Maybe<std::unique_ptr<SequentialExecutor>> Create(const proto::Plan& plan);

  // Feeds every SOURCE task, runs all tasks once, returns copies of `fetches`.
  // A kernel that rejects a value (ops/kernel.h CallKernel) stops the run
  // there and its Status is returned; the tasks before it have run.
  Status Run(const std::map<std::string, Tensor>& feeds, const std::vector<std::string>& fetches,
             std::vector<Tensor>* results);

  Status SetVariable(const std::string& name, const Tensor& value);
  Maybe<Tensor> GetVariable(const std::string& name) const;  // a copy
  std::vector<std::string> VariableNames() const;
  int64_t iteration() const { return iteration_; }
  // Run fails at the first task whose output holds a NaN or Inf (a scan of
  // every output after its kernel; off by default).
  void set_detect_anomaly(bool on) { detect_anomaly_ = on; }
  // Bytes of every register buffer of the device: live now, and the peak.
  int64_t live_bytes() const { return allocator_.live_bytes(); }
  int64_t peak_bytes() const { return allocator_.peak_bytes(); }

 private:
  struct Step {
    KernelContext ctx;
    const KernelFn* kernel = nullptr;
    AttrMap attrs;
  };
  SequentialExecutor() = default;

  proto::Plan plan_;
  DeviceAllocator allocator_;
  std::vector<Tensor> registers_;             // by register id
  std::map<std::string, int64_t> by_name_;    // tensor name -> register id
  std::map<std::string, int64_t> sources_;    // fed input -> register id
  std::map<std::string, int64_t> variables_;  // variable -> register id
  std::vector<std::unique_ptr<Step>> steps_;
  int64_t iteration_ = 0;
  bool detect_anomaly_ = false;
};

}  // namespace ofl
