// Runtime::Impl: what a Runtime owns besides its Plan: per rank a device
// (its DeviceContext: allocator, streams, events) and a task_arena, every
// register's slots, the actors, the actor threads and the per-run fetch
// buffers. Internal to runtime.cpp and runtime_run.cpp; used by one caller
// thread at a time (the actor threads touch the registers and actors only
// during a run).
#pragma once

#include <tbb/task_arena.h>

#include <map>
#include <memory>
#include <vector>

#include "oneflow_lite/core/device_context.h"
#include "runtime/actor.h"
#include "runtime/actor_kinds.h"
#include "runtime/actor_thread.h"
#include "runtime/runtime.h"
#include "runtime/step_undo.h"

namespace ofl {

struct Runtime::Impl {
  RuntimeOptions options;
  std::unique_ptr<KernelSlots> kernel_slots;             // when local ranks outnumber the threads
  std::vector<std::unique_ptr<DeviceContext>> devices;   // per rank (null: not local)
  std::vector<std::unique_ptr<tbb::task_arena>> arenas;  // per rank (null: not local)
  std::vector<RankEnv> envs;                             // per rank
  std::vector<int64_t> local_ranks;                      // this process's, ascending
  std::vector<RuntimeRegister> registers;                // by register id
  std::vector<int64_t> producer;                         // by register id: task, or -1
  std::vector<std::unique_ptr<Actor>> actors;            // this process's, in task order
  std::vector<Actor*> actor_of_task;                     // by task id; null: not local
  std::vector<std::unique_ptr<ActorThread>> threads;     // by (rank, stream)
  std::map<TensorKey, int64_t> sources;                  // -> task id
  std::map<TensorKey, int64_t> variables;                // -> register id
  std::vector<std::string> task_names;                   // by task id
  std::unique_ptr<StepUndo> undo;  // the updated variables (and their undo copy)

  // One run's fetches: keys[k] is filled from buffers[k][step].
  std::vector<TensorKey> fetch_keys;
  std::vector<std::vector<Tensor>> fetch_buffers;

  // Runtime::Build's steps (runtime.cpp), in this order, after options,
  // producer and local_ranks are set.
  bool IsLocal(const proto::Plan& plan, int64_t rank) const;  // of this process
  // Per local rank: its device, kernel share (into `shares`), arena and env.
  Status CreateRanks(const proto::Plan& plan, int cores, std::vector<int>* shares);
  // Every register's slots (local ranks: allocated, or in the rank's arena)
  // and the undo copy.
  Status CreateRegisters(const proto::Plan& plan, int cores);
  Status CreateActors(const proto::Plan& plan);  // this process's, wired to their registers
  void CreateThreads(const proto::Plan& plan, const std::vector<int>& shares);
  // Each actor's own checks; sources and variables indexed by (name, rank).
  Status PrepareActors(const proto::Plan& plan);
};

}  // namespace ofl
