// The discrete-event simulation of graph/plan_simulation.h: actors with the
// runtime's register handshake, threads with message queues, collectives
// that hold every member until the last one has entered.
#include "graph/plan_simulation.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <queue>
#include <tuple>
#include <utility>

namespace ofl {

namespace {

int64_t PeriodOf(int64_t period) { return period > 1 ? period : 1; }

enum MessageKind { kReady, kFree, kWake };

struct Message {
  int actor = -1;
  MessageKind kind = kWake;
  int index = 0;
  int slot = 0;
  double arrival = 0;
  int64_t cause = -1;  // the act that sent it
  int64_t seq = 0;
};

struct Input {
  std::deque<int> ready;
  int reads = 0;
  int reads_per_slot = 1;
  int producer = -1;
  int producer_output = -1;
};

struct Output {
  int64_t reg = -1;
  std::deque<int> free;
  std::vector<int> pending;
  int writes = 0;
  int acts_per_value = 1;
  std::vector<std::pair<int, int>> consumers;  // (actor, input index)
};

struct SimActor {
  int task = 0;
  int thread = 0;
  int64_t total_acts = 0;
  int64_t acts = 0;
  bool boxing = false;
  bool collective = false;
  std::vector<int64_t> input_regs;
  std::vector<Input> inputs;
  std::vector<Output> outputs;
  int64_t enabler = -1;  // the act that sent the last message it handled
  double enabled_at = 0;
};

struct SimThread {
  int64_t rank = 0;
  int64_t stream = 0;
  std::vector<int> boxing_order;
  size_t turn = 0;
  std::deque<Message> local;
  std::vector<Message> mailbox;  // kept sorted by (arrival, seq)
  int current = -1;
  bool busy = false;
  int64_t remaining = 0;
  double now = 0;
  int64_t last_act = -1;
  double last_end = -1;
};

struct Event {
  double time;
  int64_t seq;
  int thread;
  int64_t act;  // -1: a wake-up
  bool operator>(const Event& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
};

class Simulation {
 public:
  Simulation(const proto::Plan& plan, const std::vector<double>& seconds,
             const SimulationOptions& options)
      : plan_(plan), seconds_(seconds), options_(options) {}

  Status Build();
  // Task `task`'s outputs (slots, acts per value; `producer` of each) and inputs.
  Status AddRegisters(const proto::TaskProto& task, int64_t period,
                      std::vector<std::pair<int, int>>* producer);
  Status Run();
  SimulatedRun TakeResult();

 private:
  void RunThread(int th, double now);
  bool ReadyToAct(int a) const;
  void StartAct(int a);
  void FinishAct(int64_t act_index);
  void Send(int from_thread, int dst, MessageKind kind, int index, int slot, int64_t cause);
  void Handle(const Message& m);
  void Schedule(double time, int thread, int64_t act) { events_.push({time, seq_++, thread, act}); }

  const proto::Plan& plan_;
  const std::vector<double>& seconds_;
  const SimulationOptions& options_;
  std::vector<SimActor> actors_;
  std::vector<SimThread> threads_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int64_t seq_ = 0;
  SimulatedRun result_;
  // collective instance (group_id, call number) -> acts that entered it
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> entered_;
  std::map<std::pair<int, int64_t>, int64_t> calls_;  // (actor's thread, group_id) -> calls
};

Status Simulation::AddRegisters(const proto::TaskProto& task, int64_t period,
                                std::vector<std::pair<int, int>>* producer) {
  SimActor& a = actors_[task.id()];
  std::vector<int64_t> written(task.outputs().begin(), task.outputs().end());
  written.insert(written.end(), task.ctrl_outputs().begin(), task.ctrl_outputs().end());
  for (int64_t r : written) {
    OFL_ENSURE(r >= 0 && r < plan_.registers_size(), "simulate: task ", task.id(),
               " writes unknown register ", r);
    const proto::RegisterDesc& reg = plan_.registers(r);
    Output out;
    out.reg = r;
    const int slots = static_cast<int>(std::max<int64_t>(1, reg.num_slots()));
    for (int s = 0; s < slots; ++s) out.free.push_back(s);
    out.pending.assign(slots, 0);
    out.acts_per_value = static_cast<int>(std::max<int64_t>(1, PeriodOf(reg.period()) / period));
    (*producer)[r] = {a.task, static_cast<int>(a.outputs.size())};
    a.outputs.push_back(out);
  }
  std::vector<int64_t> read(task.inputs().begin(), task.inputs().end());
  read.insert(read.end(), task.ctrl_inputs().begin(), task.ctrl_inputs().end());
  for (int64_t r : read) {
    OFL_ENSURE(r >= 0 && r < plan_.registers_size(), "simulate: task ", task.id(),
               " reads unknown register ", r);
    if (std::find(a.input_regs.begin(), a.input_regs.end(), r) != a.input_regs.end()) continue;
    Input in;
    in.reads_per_slot =
        static_cast<int>(std::max<int64_t>(1, PeriodOf(plan_.registers(r).period()) / period));
    a.input_regs.push_back(r);
    a.inputs.push_back(in);
  }
  return Status::OK();
}

Status Simulation::Build() {
  const int n = plan_.tasks_size();
  OFL_ENSURE(static_cast<int>(seconds_.size()) == n, "simulate: ", seconds_.size(),
             " task times for ", n, " tasks");
  OFL_ENSURE(options_.iterations >= 1, "simulate: iterations=", options_.iterations,
             " must be >= 1");
  OFL_ENSURE(std::isfinite(options_.message_s) && options_.message_s >= 0,
             "simulate: message_s=", options_.message_s, " must be finite and >= 0");
  OFL_ENSURE(std::isfinite(options_.act_overhead_s) && options_.act_overhead_s >= 0,
             "simulate: act_overhead_s=", options_.act_overhead_s, " must be finite and >= 0");
  std::map<std::pair<int64_t, int64_t>, int> thread_of;
  std::vector<std::pair<int, int>> producer(plan_.registers_size(), {-1, -1});
  actors_.resize(n);
  for (int t = 0; t < n; ++t) {
    const proto::TaskProto& task = plan_.tasks(t);
    OFL_ENSURE(task.id() == t, "simulate: task ", t, " has id ", task.id());
    OFL_ENSURE(std::isfinite(seconds_[t]) && seconds_[t] >= 0, "simulate: task ", t, " takes ",
               seconds_[t], " s (must be finite and >= 0)");
    const int64_t period = PeriodOf(task.period());
    OFL_ENSURE(options_.iterations % period == 0, "simulate: ", options_.iterations,
               " iterations are no multiple of task ", t, "'s period ", period);
    auto key = std::make_pair(task.rank(), task.stream());
    auto it = thread_of.find(key);
    if (it == thread_of.end()) {
      it = thread_of.emplace(key, static_cast<int>(threads_.size())).first;
      threads_.push_back({});
      threads_.back().rank = task.rank();
      threads_.back().stream = task.stream();
    }
    SimActor& a = actors_[t];
    a.task = t;
    a.thread = it->second;
    a.total_acts = options_.iterations / period;
    a.boxing = task.kind() == proto::TaskProto::BOXING;
    const proto::BoxingConf& b = task.boxing_conf();
    a.collective = a.boxing && b.group_id() >= 0 && b.group_size() >= 2;
    SimThread& th = threads_[a.thread];
    ++th.remaining;
    if (a.boxing) th.boxing_order.push_back(t);
    OFL_RETURN_IF_ERROR(AddRegisters(task, period, &producer));
  }
  for (SimActor& a : actors_) {
    for (size_t i = 0; i < a.inputs.size(); ++i) {
      const auto [p, o] = producer[a.input_regs[i]];
      OFL_ENSURE(p >= 0, "simulate: task ", a.task, " reads register '",
                 plan_.registers(a.input_regs[i]).name(), "' that no task writes");
      a.inputs[i].producer = p;
      a.inputs[i].producer_output = o;
      actors_[p].outputs[o].consumers.push_back({a.task, static_cast<int>(i)});
    }
  }
  result_.rank_end_s.assign(std::max<int64_t>(plan_.num_ranks(), 0), 0.0);
  for (const SimActor& a : actors_) {
    const int64_t rank = plan_.tasks(a.task).rank();
    if (rank >= static_cast<int64_t>(result_.rank_end_s.size())) {
      result_.rank_end_s.resize(rank + 1, 0.0);
    }
  }
  return Status::OK();
}

bool Simulation::ReadyToAct(int a) const {
  const SimActor& actor = actors_[a];
  if (actor.acts == actor.total_acts) return false;
  for (const Input& in : actor.inputs) {
    if (in.ready.empty()) return false;
  }
  for (const Output& out : actor.outputs) {
    if (out.free.empty()) return false;
  }
  if (actor.boxing) {
    const SimThread& th = threads_[actor.thread];
    return th.boxing_order[th.turn] == a;
  }
  return true;
}

void Simulation::Send(int from_thread, int dst, MessageKind kind, int index, int slot,
                      int64_t cause) {
  SimThread& src = threads_[from_thread];
  const int to = actors_[dst].thread;
  Message m{dst, kind, index, slot, src.now, cause, seq_++};
  if (to == from_thread) {
    src.local.push_back(m);
    return;
  }
  m.arrival = src.now + options_.message_s;
  SimThread& th = threads_[to];
  auto pos = std::upper_bound(th.mailbox.begin(), th.mailbox.end(), m,
                              [](const Message& x, const Message& y) {
                                return std::tie(x.arrival, x.seq) < std::tie(y.arrival, y.seq);
                              });
  th.mailbox.insert(pos, m);
  if (!th.busy) Schedule(m.arrival, to, -1);
}

void Simulation::Handle(const Message& m) {
  SimActor& a = actors_[m.actor];
  if (m.kind == kReady) {
    a.inputs[m.index].ready.push_back(m.slot);
  } else if (m.kind == kFree) {
    Output& out = a.outputs[m.index];
    if (--out.pending[m.slot] == 0) out.free.push_back(m.slot);
  }
  if (m.kind != kWake || m.cause >= 0) {
    a.enabler = m.cause;
    a.enabled_at = m.arrival;
  }
}

void Simulation::RunThread(int th_index, double now) {
  SimThread& th = threads_[th_index];
  if (th.busy) return;
  th.now = std::max(th.now, now);
  for (;;) {
    if (th.current >= 0) {
      if (ReadyToAct(th.current)) {
        StartAct(th.current);
        return;
      }
      th.current = -1;
    }
    if (th.local.empty()) {
      size_t k = 0;
      while (k < th.mailbox.size() && th.mailbox[k].arrival <= th.now)
        th.local.push_back(th.mailbox[k++]);
      th.mailbox.erase(th.mailbox.begin(), th.mailbox.begin() + k);
    }
    if (th.local.empty()) {
      if (th.remaining > 0 && !th.mailbox.empty())
        Schedule(th.mailbox.front().arrival, th_index, -1);
      return;
    }
    const Message m = th.local.front();
    th.local.pop_front();
    Handle(m);
    th.current = m.actor;
  }
}

void Simulation::StartAct(int a) {
  SimActor& actor = actors_[a];
  SimThread& th = threads_[actor.thread];
  SimulatedAct act;
  act.task = a;
  act.rank = th.rank;
  act.stream = th.stream;
  act.act = actor.acts;
  th.now += options_.act_overhead_s;
  act.start_s = th.now;
  const bool after_thread = th.last_act >= 0 && th.last_end >= actor.enabled_at;
  act.cause = after_thread ? th.last_act : actor.enabler;
  const int64_t index = static_cast<int64_t>(result_.acts.size());
  result_.acts.push_back(act);
  th.busy = true;
  if (!actor.collective) {
    Schedule(th.now + seconds_[a], actor.thread, index);
    return;
  }
  const proto::BoxingConf& b = plan_.tasks(a).boxing_conf();
  const int64_t call = calls_[{actor.thread, b.group_id()}]++;
  std::vector<int64_t>& members = entered_[{b.group_id(), call}];
  members.push_back(index);
  if (static_cast<int>(members.size()) < b.group_size()) return;
  double last_in = 0, slowest = 0;
  for (int64_t m : members) {
    last_in = std::max(last_in, result_.acts[m].start_s);
    slowest = std::max(slowest, seconds_[result_.acts[m].task]);
  }
  int64_t last_member = members.front();
  for (int64_t m : members) {
    if (result_.acts[m].start_s == last_in) last_member = m;
  }
  for (int64_t m : members) {
    SimulatedAct& x = result_.acts[m];
    x.wait_s = last_in - x.start_s;
    if (m != last_member) x.cause = last_member;
    Schedule(last_in + slowest, actors_[x.task].thread, m);
  }
}

void Simulation::FinishAct(int64_t act_index) {
  SimulatedAct& act = result_.acts[act_index];
  SimActor& actor = actors_[act.task];
  const int th_index = actor.thread;
  SimThread& th = threads_[th_index];
  th.busy = false;
  th.last_act = act_index;
  th.last_end = th.now;
  act.end_s = th.now;
  result_.rank_end_s[act.rank] = std::max(result_.rank_end_s[act.rank], th.now);
  ++actor.acts;
  if (actor.acts == actor.total_acts) --th.remaining;
  for (size_t o = 0; o < actor.outputs.size(); ++o) {
    Output& out = actor.outputs[o];
    if (++out.writes < out.acts_per_value) continue;
    out.writes = 0;
    const int slot = out.free.front();
    out.free.pop_front();
    if (out.consumers.empty()) {
      out.free.push_back(slot);
      continue;
    }
    out.pending[slot] = static_cast<int>(out.consumers.size());
    for (const auto& [c, i] : out.consumers) Send(th_index, c, kReady, i, slot, act_index);
  }
  for (size_t i = 0; i < actor.inputs.size(); ++i) {
    Input& in = actor.inputs[i];
    if (++in.reads < in.reads_per_slot) continue;
    in.reads = 0;
    const int slot = in.ready.front();
    in.ready.pop_front();
    Send(th_index, in.producer, kFree, in.producer_output, slot, act_index);
  }
  if (actor.boxing) {
    th.turn = th.turn + 1 == th.boxing_order.size() ? 0 : th.turn + 1;
    th.local.push_back(Message{th.boxing_order[th.turn], kWake, 0, 0, th.now, act_index, seq_++});
  }
}

Status Simulation::Run() {
  for (size_t t = 0; t < threads_.size(); ++t) {
    for (const SimActor& a : actors_) {
      if (a.thread == static_cast<int>(t)) {
        threads_[t].local.push_back(Message{a.task, kWake, 0, 0, 0.0, -1, seq_++});
      }
    }
    Schedule(0.0, static_cast<int>(t), -1);
  }
  while (!events_.empty()) {
    const Event e = events_.top();
    events_.pop();
    if (e.act >= 0) {
      threads_[e.thread].now = e.time;
      FinishAct(e.act);
    }
    RunThread(e.thread, e.time);
  }
  for (const SimActor& a : actors_) {
    OFL_ENSURE(a.acts == a.total_acts, "simulate: the plan cannot finish: task ", a.task,
               " on rank ", threads_[a.thread].rank, " acted ", a.acts, " of ", a.total_acts,
               " times");
  }
  return Status::OK();
}

SimulatedRun Simulation::TakeResult() {
  SimulatedRun r = std::move(result_);
  for (size_t r2 = 0; r2 < r.rank_end_s.size(); ++r2) {
    r.step_s = std::max(r.step_s, r.rank_end_s[r2]);
    if (r.rank_end_s[r2] > r.rank_end_s[r.slowest_rank]) r.slowest_rank = static_cast<int64_t>(r2);
  }
  int64_t last = -1;
  for (size_t i = 0; i < r.acts.size(); ++i) {
    if (r.acts[i].rank == r.slowest_rank && (last < 0 || r.acts[i].end_s >= r.acts[last].end_s)) {
      last = static_cast<int64_t>(i);
    }
  }
  for (int64_t k = last; k >= 0 && r.critical_path.size() <= r.acts.size(); k = r.acts[k].cause) {
    r.critical_path.push_back(k);
  }
  std::reverse(r.critical_path.begin(), r.critical_path.end());
  // acts were recorded in order of start already (the clock only advances)
  return r;
}

}  // namespace

Maybe<SimulatedRun> SimulatePlan(const proto::Plan& plan, const std::vector<double>& task_seconds,
                                 const SimulationOptions& options) {
  Simulation sim(plan, task_seconds, options);
  OFL_RETURN_IF_ERROR(sim.Build());
  OFL_RETURN_IF_ERROR(sim.Run());
  return sim.TakeResult();
}

}  // namespace ofl
