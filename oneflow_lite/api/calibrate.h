// Calibration: measures this machine and writes the Cluster it is costed as
// (DESIGN.md section 6): memcpy, matmul and collective figures (latency and
// bandwidth), optionally each kernel's time and the contention of devices
// computing at once, each from the real code path. Microbenchmarks only:
// nothing is fitted to a strategy's step time.
// Calibrate() runs threads of its own and blocks; call it from one thread.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_graph.h"
#include "oneflow_lite/core/status.h"
#include "search/cluster.h"
#include "search/collective_time.h"

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
// With per_collective, all-reduce, reduce-scatter, all-gather and all-to-all
// are each fitted the same way and written as the level's collective figures.
// With kernel_probes, the ops of those graphs are timed on one device
// alone through a Session (calibrate_kernels.h) into the device's compute
// table, and again with 2..contention_devices devices computing at once
// (each its own Session and thread) for the contention factors: the sum of
// the kernels' medians at once over alone. Microbenchmarks only: nothing is
// fitted to a strategy's step time, and no global correction factor is applied.
// The Cluster has one level ("shared_memory", size = devices), and outside it
// the levels measured across processes when given (`levels`); the device's
// memory is the machine's physical memory / devices. The text form
// opens with comments saying what was measured, how and when.
// Calibrate() runs threads of its own and blocks; call it from one thread.
// `progress`, when set, hears of each measurement as it ends.

namespace ofl {

struct CalibrationOptions {
  int64_t devices = 2;                 // virtual devices of the all-reduce (>= 2)
  int num_threads = 1;                 // memcpy threads and matmul kernel threads (>= 1)
  int64_t memcpy_bytes = 64 << 20;     // per copy
  int64_t matmul_size = 512;           // m = n = k of the float32 matmul
  int64_t allreduce_bytes = 16 << 20;  // float32 buffer per device
  int reps = 5;                        // timed runs per figure (median), after one warm-up
  std::string name = "local";          // the Cluster's name
  bool per_collective = true;          // each collective's own latency and bandwidth
  // Graphs whose ops' kernel times make the compute table (not owned; alive
  // during Calibrate); none: the FLOP/s figure prices every op.
  std::vector<const OpGraph*> kernel_probes;
  int64_t contention_devices = 0;  // contention measured for 2..this (0: devices)
  // Collective figures measured elsewhere (CalibrateProcessCollectives):
  // they are the level's, the all-reduce's as its latency and bandwidth, in
  // place of the in-process ones; `collectives_source` says how, in the text.
  std::vector<proto::CollectiveFigure> collectives;
  std::string collectives_source;
  // Called from Calibrate's thread after each measurement with what was
  // measured, how many are done and how many there are in all (a progress
  // display); none: silent.
  std::function<void(const std::string& what, int done, int total)> progress;
  // Levels measured elsewhere (CalibrateProcessLevels), innermost first:
  // appended outside the in-process level, or, without `inprocess_level`,
  // the cluster's only levels. `levels_source` (lines) goes into the text as
  // comments. Exclusive with `collectives`.
  std::vector<proto::LinkLevel> levels;
  bool inprocess_level = true;
  std::string levels_source;
};

// The measurements Calibrate(options) makes, as its progress counts them.
int CalibrationSteps(const CalibrationOptions& options);

// A calibration whose reference matmul moved by more than this fraction
// between its start and its end was not taken on a steady machine.
constexpr double kSteadyDrift = 0.10;

struct Calibration {
  double memcpy_gbps = 0;   // 1e9 bytes per second
  double matmul_flops = 0;  // float32, FLOP/s of one device
  // The same matmul measured again once everything else is: how steady the
  // machine was while calibrating (matmul_drift: after / before - 1).
  double matmul_flops_after = 0;
  double matmul_drift() const { return matmul_flops_after / matmul_flops - 1; }
  bool steady() const { return std::abs(matmul_drift()) <= kSteadyDrift; }
  double allreduce_seconds = 0;                        // median, large buffer
  double allreduce_bytes_sent = 0;                     // busiest rank, large buffer
  double latency_seconds = 0;                          // per ring step
  double bandwidth_bytes_per_s = 0;                    // per device
  int64_t memory_bytes = 0;                            // per device
  int64_t compute_entries = 0;                         // entries of the compute table
  std::vector<std::pair<int64_t, double>> contention;  // devices at once -> factor
  std::string measured_at;                             // UTC, ISO 8601
  std::string description;                             // the comment block of the text form
  std::optional<Cluster> cluster;                      // what Save() writes; set by Calibrate

  // The Cluster text with the comment block in front (parses with Cluster::Parse).
  std::string ToText() const;
  Status Save(const std::string& path) const;
};

// Latency per ring step from a tiny run of `kind` on `group` ranks, and
// bandwidth from a large one: the busiest rank's bytes over the time left
// after the latency (the whole time when the latency takes 90 % of it).
CollectiveFigure FitCollectiveFigure(CollectiveKind kind, int64_t group, double tiny_seconds,
                                     double big_seconds, double big_bytes_sent);

// Errors: options out of range (named, with the value); a collective that
// fails; a measured figure that is not positive and finite.
Maybe<Calibration> Calibrate(const CalibrationOptions& options);

}  // namespace ofl
