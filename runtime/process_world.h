// ProcessWorld: the processes of one job (DESIGN.md section 7b) as this
// process sees them: its index among them, the TCP store they meet at
// (hosted by process 0), the job's key prefix, where Gloo pairs listen, and
// how the processes learn that one of them died.
//
// Thread safety: every method may be called from any thread (the store
// clients serialise their requests; the monitor has a connection of its own).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oneflow_lite/core/status.h"
#include "runtime/gloo_communicator.h"
#include "runtime/tcp_store.h"

// The launcher (python -m oneflow_lite.distributed.launch) sets RANK (this
// process), WORLD_SIZE (processes), MASTER_ADDR, MASTER_PORT, OFL_JOB_ID
// (unique per launch: several jobs on one machine never share keys),
// OFL_DEVICES_PER_PROCESS (virtual devices of each process: process p owns
// the global ranks [p*K, (p+1)*K)), OFL_BIND_ADDR and OFL_IFACE (where the
// Gloo pairs listen), and optionally OFL_WORLD_TIMEOUT_S and
// OFL_HEARTBEAT_TIMEOUT_S (WorldOptions). A process started without
// WORLD_SIZE (or with 1) is a
// world of one process, and no store is made.
//
// Joining: process 0 marks the store as its job's; each process claims its
// index there (first claim wins). A process of another job, or a second
// claimant of one index (two jobs on one MASTER_PORT without their own job
// ids), fails at once naming both; while the job is still assembling, the
// job fails too (it cannot tell its processes from the other job's). A
// process that never joins is named, once, at the timeout.
//
// Failure: every process's store connection carries a watch (TcpStore::
// WatchConnection): when a process dies, even by kill -9, the store sets the
// job's failure key to "lost process p"; with a heartbeat (WorldOptions::
// heartbeat, a thread here beats heartbeat / 8 apart) a process that sends
// nothing for that long (stopped, hung) is lost the same way. A process
// that fails on its own publishes its reason there (Fail, first one wins);
// so may the launcher (ReportLost) for a child that died before it joined.
// CheckFailure polls the key, and treats a store that does not answer
// within the heartbeat (5 s without one) as the loss of process 0, its host.
// Sessions poll it while a step runs and abort their communicators.
//
// Small collectives through the store (AllGather, Barrier) serve what is not
// tensor traffic: plan hashes, step votes, fetched values, variables read
// back. Each call names a key that must be new (callers number them).

namespace ofl {

struct WorldOptions {
  int64_t process = 0;        // RANK
  int64_t num_processes = 1;  // WORLD_SIZE
  int64_t devices_per_process = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string job_id = "job";
  GlooOptions gloo;  // hostname <- OFL_BIND_ADDR, iface <- OFL_IFACE
  // Connecting to the store, and the longest wait of a store collective.
  // OFL_WORLD_TIMEOUT_S, in seconds.
  std::chrono::milliseconds timeout{60000};
  // A process silent this long is lost (0: only a death is noticed).
  // OFL_HEARTBEAT_TIMEOUT_S, in seconds.
  std::chrono::milliseconds heartbeat{4000};
};

class ProcessWorld {
 public:
  // From the launcher's variables; errors name the variable and its value.
  static Maybe<WorldOptions> OptionsFromEnv();
  // Process 0 starts the store server at master_addr:master_port (0.0.0.0
  // when master_addr is not this host's loopback, so other hosts reach it);
  // every process connects and registers its watch.
  static Maybe<std::shared_ptr<ProcessWorld>> Create(const WorldOptions& options);
  // Sets the job's failure key to `reason` unless a loss is already there
  // (for the launcher: a child that died, perhaps before it joined).
  static Status ReportLost(const WorldOptions& options, const std::string& reason);
  // The world of this process from its environment, made once and shared
  // (a world of one process when WORLD_SIZE is unset or 1).
  static Maybe<std::shared_ptr<ProcessWorld>> FromEnv();
  ~ProcessWorld();  // leaves the store cleanly (no "lost process" for others)

  int64_t process() const { return options_.process; }
  int64_t num_processes() const { return options_.num_processes; }
  int64_t devices_per_process() const { return options_.devices_per_process; }
  bool distributed() const { return options_.num_processes > 1; }
  const WorldOptions& options() const { return options_; }
  TcpStore* store() const { return store_.get(); }  // null in a world of one process
  // "ofl/<job>/<name>": the job's keys.
  std::string Key(const std::string& name) const;
  // A number every process draws in the same order (sessions, steps): the
  // n-th call returns n on every process as long as all call it alike.
  int64_t NextSequence(const std::string& what);
  // The key scope of the next collective operation of `owner` (a session,
  // the Python side): "<owner>/op<n>". Process 0 then removes the keys of
  // operation n - 2, which no process reads any more (every process set its
  // keys of operation n - 1 only after it had read those of n - 2), so the
  // store does not grow with the steps.
  std::string NextScope(const std::string& owner);

  // Every process's `mine`, by process index. `name` must be new; `scope`
  // as for WaitOrFail.
  Maybe<std::vector<std::vector<char>>> AllGather(const std::string& name,
                                                  const std::vector<char>& mine,
                                                  const std::string& scope = "");
  Status Barrier(const std::string& name, const std::string& scope = "");
  // The processes (e.g. "1, 3") that have not set their key of AllGather
  // `name` within `wait` ("" once all have, or when the store is gone).
  std::string Late(const std::string& name, std::chrono::milliseconds wait);

  // Publishes this process's failure of `scope` (e.g. one session's step:
  // the next step starts clean); the first published one stays.
  void Fail(const std::string& scope, const std::string& reason);
  // The first failure of `scope` or a lost process ("" when none), without
  // waiting; a store that no longer answers is the loss of process 0.
  std::string CheckFailure(const std::string& scope = "");
  // Waits (bounded by options().timeout) for `keys`, returning early with
  // the failure of `scope` or of a lost process.
  Status WaitOrFail(const std::vector<std::string>& keys, const std::string& scope,
                    const std::string& what);
  // Before the process exits: leave the store cleanly; process 0 first waits
  // (bounded) for the others to leave, as it hosts the store. Idempotent.
  void Shutdown();

 private:
  explicit ProcessWorld(WorldOptions options) : options_(std::move(options)) {}
  Status CheckStoreJob();  // the store is this job's
  Status Claim();          // this process's index is free
  Status Join();           // watch, heartbeat, and wait for every process
  void Beat();             // the heartbeat thread's loop
  void StopBeating();

  WorldOptions options_;
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStore> store_;    // requests
  std::unique_ptr<TcpStore> monitor_;  // CheckFailure's polls; carries the watch
  std::mutex mu_;                      // guards the three below
  std::map<std::string, int64_t> sequences_;
  bool shut_down_ = false;
  bool beating_ = false;
  std::condition_variable beat_stop_;
  std::thread heart_;
  bool joined_ = false;  // every process joined (set once, in Create)
};

}  // namespace ofl
