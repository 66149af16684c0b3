// A discrete-event simulation of one run of a Plan as the runtime executes
// it (DESIGN.md section 6, "two prices of a step"): threads per (rank,
// stream), the register handshake with slots, periods, boxing turns and
// collectives that hold every member. Task seconds come from the caller
// (plan_task_cost.h, or measured ones for a replay); it knows no op and no
// Cluster. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/status.h"

// A discrete-event simulation of one run of a Plan as the runtime executes
// it (DESIGN.md section 6, "two prices of a step"; runtime/actor.h and
// runtime/actor_thread.h are what it mirrors):
//  - one thread per (rank, stream), each owning its tasks' actors in plan
//    order; a thread does one act at a time, handles its messages in order
//    (its own actors' messages first, then the others' in order of arrival)
//    and, like ActorThread::Loop, lets the actor a message woke act as long
//    as it can;
//  - an actor acts when every register it reads (data and control) has a
//    ready slot and every register it writes has a free slot; after acting
//    it tells consumers "ready" and producers "free"; registers have
//    num_slots slots, so a 2-slot register lets iteration i+1 run ahead;
//  - periods: a task of period p acts once per p iterations; a register of
//    period q holds one value per q iterations (read q/p times, written over
//    q/p acts), as runtime/actor.h;
//  - BOXING actors of one thread act in plan order, cyclically;
//  - a BOXING act with a communicator group (group_id >= 0, two or more
//    ranks) is a collective: every member's thread is held from the moment
//    it enters until the last member has entered plus the slowest member's
//    seconds (the ranks wait on each other);
//  - a message to another thread arrives `message_s` after it was sent.
// Task seconds come from the caller (plan_task_cost.h prices them from a
// Cluster; a replay uses measured ones). The simulation knows no op and no
// Cluster: only the Plan's tasks, registers, ranks and streams.
// Pure function; thread-safe.

namespace ofl {

struct SimulationOptions {
  int64_t iterations = 1;  // iterations of the run (the micro-batches of one step)
  double message_s = 0;    // latency of a message between two threads
  // The thread's own time before each act (handling the messages that
  // woke the actor, bookkeeping): the thread is busy, the act not yet begun.
  double act_overhead_s = 0;
};

struct SimulatedAct {
  int64_t task = 0;
  int64_t rank = 0;
  int64_t stream = 0;
  int64_t act = 0;     // 0, 1, ... per task
  double start_s = 0;  // when the thread began it (a collective: entered it)
  double end_s = 0;
  double wait_s = 0;   // of it, waiting for the other members of a collective
  int64_t cause = -1;  // the act (index into acts) whose end let it start; -1: none
};

struct SimulatedRun {
  double step_s = 0;               // the last act's end
  std::vector<SimulatedAct> acts;  // in order of start
  std::vector<double> rank_end_s;  // per rank: its last act's end (0: no act)
  int64_t slowest_rank = 0;
  // The chain of acts ending at the slowest rank's last act, each the
  // `cause` of the next, first to last (indices into acts).
  std::vector<int64_t> critical_path;
};

// Simulates `options.iterations` iterations of `plan` with task `t` taking
// `task_seconds[t]` per act. Errors: a size mismatch, a negative or
// non-finite time, iterations not a multiple of every task's period, a
// register read by a task but written by none, or a run that cannot finish
// (a deadlock in the plan), named by the task that waits.
Maybe<SimulatedRun> SimulatePlan(const proto::Plan& plan, const std::vector<double>& task_seconds,
                                 const SimulationOptions& options);

}  // namespace ofl
