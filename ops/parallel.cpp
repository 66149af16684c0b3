#include "ops/parallel.h"

#include <cblas.h>
#include <omp.h>
#include <tbb/global_control.h>

#include <thread>

namespace ofl {

struct KernelThreads::Control {
  explicit Control(int n) : tbb(tbb::global_control::max_allowed_parallelism, n) {}
  tbb::global_control tbb;
};

KernelThreads::KernelThreads(int num_threads) {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  num_threads_ = num_threads > 0 ? num_threads : std::max(1, cores);
  control_ = new Control(num_threads_);
  openblas_set_num_threads(num_threads_);
  omp_set_num_threads(num_threads_);
}

KernelThreads::~KernelThreads() { delete control_; }

}  // namespace ofl
