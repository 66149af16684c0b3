#include "ops/parallel.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <thread>

namespace ofl {

KernelThreads::KernelThreads(int num_threads) {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  num_threads_ = num_threads > 0 ? num_threads : std::max(1, cores);
  openblas_set_num_threads(num_threads_);
  omp_set_num_threads(num_threads_);
}

}  // namespace ofl
