// Calibration: measures this machine and writes the Cluster it is costed
// as (DESIGN.md section 6). Three figures, each from the real code path:
//   memcpy   - `num_threads` threads copying one buffer into another (GB/s),
//              the ceiling for any in-process transfer; kept as a comment;
//   matmul   - float32 FLOP/s of the registered matmul op run through a
//              Session (oneDNN/OpenBLAS kernel) bounded to `num_threads`
//              threads: one virtual device's throughput;
//   all-reduce - runtime's InProcessCommunicator on `devices` virtual
//              devices (one thread each): latency per ring step from a
//              one-element all-reduce, bandwidth per device from a large one
//              (busiest rank's bytes, as the communicator counts them, over
//              the time left after the latency).
// The Cluster has one level ("shared_memory", size = devices) and the
// device's memory is the machine's physical memory / devices. The text form
// opens with comments saying what was measured, how and when.
// Calibrate() runs threads of its own and blocks; call it from one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "oneflow_lite/core/status.h"
#include "search/cluster.h"

namespace ofl {

struct CalibrationOptions {
  int64_t devices = 2;                   // virtual devices of the all-reduce (>= 2)
  int num_threads = 1;                   // memcpy threads and matmul kernel threads (>= 1)
  int64_t memcpy_bytes = 64 << 20;       // per copy
  int64_t matmul_size = 512;             // m = n = k of the float32 matmul
  int64_t allreduce_bytes = 16 << 20;    // float32 buffer per device
  int reps = 5;                          // timed runs per figure (median), after one warm-up
  std::string name = "local";            // the Cluster's name
};

struct Calibration {
  double memcpy_gbps = 0;           // 1e9 bytes per second
  double matmul_flops = 0;          // float32, FLOP/s of one device
  double allreduce_seconds = 0;     // median, large buffer
  double allreduce_bytes_sent = 0;  // busiest rank, large buffer
  double latency_seconds = 0;       // per ring step
  double bandwidth_bytes_per_s = 0;  // per device
  int64_t memory_bytes = 0;          // per device
  std::string measured_at;           // UTC, ISO 8601
  std::string description;           // the comment block of the text form
  std::optional<Cluster> cluster;    // what Save() writes; set by Calibrate

  // The Cluster text with the comment block in front (parses with Cluster::Parse).
  std::string ToText() const;
  Status Save(const std::string& path) const;
};

// Errors: options out of range (named, with the value); a collective that
// fails; a measured figure that is not positive and finite.
Maybe<Calibration> Calibrate(const CalibrationOptions& options);

}  // namespace ofl
