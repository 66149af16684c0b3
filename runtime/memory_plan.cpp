// Memory planning of registers (runtime/memory_plan.h): eligibility, the
// happens-before graph of two iterations, reachability to the producers of
// planned registers, and the placement.
#include "runtime/memory_plan.h"

#include <algorithm>
#include <deque>

#include "oneflow_lite/core/data_type.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

int64_t PeriodOf(int64_t period) { return period <= 0 ? 1 : period; }

int64_t RoundUp(int64_t bytes) { return MemoryPlan::Aligned(bytes); }

// The bytes of one slot of `r`, or 0 when its dtype does not parse.
int64_t SlotBytes(const proto::RegisterDesc& r) {
  Maybe<DataType> dtype = ParseDataType(r.desc().dtype());
  if (!dtype.ok()) return 0;
  int64_t n = 1;
  for (int64_t d : r.desc().shape().dims()) n *= d;
  return n * SizeOf(dtype.value());
}

// One planned register: its producer, its readers (the producer itself when
// nothing reads it) and its rounded size.
struct Candidate {
  int64_t reg = 0;
  int64_t producer = 0;
  std::vector<int64_t> readers;
  int64_t bytes = 0;      // rounded up to kAlignment
  int64_t raw_bytes = 0;  // as the allocator would count them
  // The registers at this one offset: reg, and the outputs of the view ops
  // (reshape chains) that alias it; their readers are in `readers`.
  std::vector<int64_t> members;
  // An undo copy (memory_plan.h): `reg` is the persistent register it
  // copies, `producer` the task that saves it; no readers.
  bool undo = false;
  // The spare slots (1 .. num_slots - 1) of a multi-slot register `reg`,
  // end to end (memory_plan.h "Spare slots").
  bool spare = false;
};

bool AnyPeriodAboveOne(const proto::Plan& plan) {
  for (const auto& t : plan.tasks()) {
    if (PeriodOf(t.period()) > 1) return true;
  }
  for (const auto& r : plan.registers()) {
    if (PeriodOf(r.period()) > 1) return true;
  }
  return false;
}

// The planned registers of `rank` (one slot), or with `spare` the spare
// slots of its registers of more slots that are otherwise alike.
std::vector<Candidate> Candidates(const proto::Plan& plan, int64_t rank,
                                  const std::vector<int64_t>& producer, bool spare = false) {
  const int64_t num_registers = plan.registers_size();
  std::vector<bool> control(num_registers, false);
  std::vector<std::vector<int64_t>> consumers(num_registers);
  for (const auto& t : plan.tasks()) {
    for (int64_t id : t.ctrl_outputs()) control[id] = true;
    for (int64_t id : t.inputs()) {
      if (consumers[id].empty() || consumers[id].back() != t.id()) consumers[id].push_back(t.id());
    }
  }
  auto task_ok = [&](int64_t task, bool writes) {
    const proto::TaskProto& t = plan.tasks(task);
    if (t.rank() != rank) return false;
    return writes ? t.kind() == proto::TaskProto::COMPUTE || t.kind() == proto::TaskProto::SOURCE
                  : t.kind() == proto::TaskProto::COMPUTE || t.kind() == proto::TaskProto::SINK;
  };
  std::vector<Candidate> out;
  for (const auto& r : plan.registers()) {
    const bool slots_ok = spare ? r.num_slots() > 1 : r.num_slots() == 1;
    if (r.rank() != rank || r.persistent() || control[r.id()] || !slots_ok) continue;
    const int64_t p = producer[r.id()];
    const int64_t bytes = SlotBytes(r) * (spare ? r.num_slots() - 1 : 1);
    if (p < 0 || bytes <= 0 || !task_ok(p, true)) continue;
    bool readers_ok = true;
    for (int64_t c : consumers[r.id()]) readers_ok = readers_ok && task_ok(c, false);
    if (!readers_ok) continue;
    const int64_t rounded = spare ? RoundUp(SlotBytes(r)) * (r.num_slots() - 1) : RoundUp(bytes);
    Candidate c{r.id(), p, consumers[r.id()], rounded, bytes, {r.id()}};
    c.spare = spare;
    if (c.readers.empty()) c.readers.push_back(p);
    out.push_back(std::move(c));
  }
  return out;
}

// Reachability in the happens-before graph of two iterations: node
// k * num_tasks + t is task t's act in iteration k (k = 0, 1). Only paths to
// the target nodes (the producers of planned registers) are kept, one bit
// each.
class Reachability {
 public:
  // False when the graph has a cycle (then nothing is ordered).
  bool Build(const proto::Plan& plan, const std::vector<int64_t>& producer,
             const std::vector<int64_t>& target_nodes);
  // Whether the act `from` comes before target node `to` on some path.
  bool Before(int64_t from, int64_t to) const {
    const int64_t bit = target_index_[to];
    return bit >= 0 && ((bits_[from][bit / 64] >> (bit % 64)) & 1);
  }

 private:
  std::vector<int64_t> target_index_;  // by node: its bit, or -1

  std::vector<std::vector<uint64_t>> bits_;  // by node: the targets it reaches
};

bool Reachability::Build(const proto::Plan& plan, const std::vector<int64_t>& producer,
                         const std::vector<int64_t>& target_nodes) {
  const int64_t n = plan.tasks_size();
  std::vector<std::vector<int64_t>> next(2 * n);
  for (const auto& t : plan.tasks()) {
    next[t.id()].push_back(n + t.id());  // the task's own next act
    std::vector<int64_t> read(t.inputs().begin(), t.inputs().end());
    read.insert(read.end(), t.ctrl_inputs().begin(), t.ctrl_inputs().end());
    for (int64_t r : read) {
      const int64_t p = producer[r];
      if (p < 0) continue;
      next[p].push_back(t.id());
      next[n + p].push_back(n + t.id());
      // One slot: freed by this reader before its producer writes it again.
      if (plan.registers(r).num_slots() == 1) next[t.id()].push_back(n + p);
    }
  }
  std::vector<int64_t> indegree(2 * n, 0);
  for (const auto& succ : next) {
    for (int64_t s : succ) ++indegree[s];
  }
  std::vector<int64_t> order;
  std::deque<int64_t> ready;
  for (int64_t v = 0; v < 2 * n; ++v) {
    if (indegree[v] == 0) ready.push_back(v);
  }
  while (!ready.empty()) {
    const int64_t v = ready.front();
    ready.pop_front();
    order.push_back(v);
    for (int64_t s : next[v]) {
      if (--indegree[s] == 0) ready.push_back(s);
    }
  }
  if (static_cast<int64_t>(order.size()) != 2 * n) return false;
  target_index_.assign(2 * n, -1);
  int64_t bit = 0;
  for (int64_t node : target_nodes) {
    if (target_index_[node] < 0) target_index_[node] = bit++;
  }
  const size_t words = static_cast<size_t>((bit + 63) / 64);
  bits_.assign(2 * n, std::vector<uint64_t>(words, 0));
  for (auto v = order.rbegin(); v != order.rend(); ++v) {
    std::vector<uint64_t>& mine = bits_[*v];
    for (int64_t s : next[*v]) {
      for (size_t w = 0; w < words; ++w) mine[w] |= bits_[s][w];
      const int64_t b = target_index_[s];
      if (b >= 0) mine[b / 64] |= uint64_t{1} << (b % 64);
    }
  }
  return true;
}

// The soundness rule of memory_plan.h: `a` is dead (in iteration i) before
// `b` is written, and `b` is dead before `a` is written in iteration i + 1.
bool Precedes(const Candidate& a, const Candidate& b, const Reachability& reach,
              int64_t num_tasks) {
  for (int64_t r : a.readers) {
    if (!reach.Before(r, b.producer)) return false;
  }
  for (int64_t r : b.readers) {
    if (!reach.Before(r, num_tasks + a.producer)) return false;
  }
  return true;
}

// Whether task `t` may write one of its inputs (an op with a mutable input,
// or one the registry does not know).
bool MayWriteInputs(const proto::TaskProto& t) {
  if (t.kind() != proto::TaskProto::COMPUTE) return false;
  Maybe<const OpDef*> def = OpRegistry::Find(t.op_conf().op_type());
  if (!def.ok()) return true;
  for (int i = 0; i < t.inputs_size(); ++i) {
    if (def.value()->is_mutable_input(i)) return true;
  }
  return false;
}

// Folds the output y of every view op (reshape, flatten: their kernels copy
// the bytes in order, and nothing when y already is x) into the candidate of
// its input x, when the fold is sound: nothing that reads either may write
// its inputs, and every reader of y (of every register folded into y's
// group) acts before x's producer writes x again in the next iteration. The
// folded candidate keeps x's producer and takes all readers.
std::vector<Candidate> FoldViews(const proto::Plan& plan, std::vector<Candidate> cands,
                                 const Reachability& reach) {
  const int64_t n = plan.tasks_size();
  std::vector<int64_t> group(plan.registers_size(), -1);  // register -> index in cands
  for (size_t i = 0; i < cands.size(); ++i) group[cands[i].reg] = static_cast<int64_t>(i);
  std::vector<bool> folded(cands.size(), false);
  for (const auto& t : plan.tasks()) {
    const std::string& type = t.op_conf().op_type();
    if (t.kind() != proto::TaskProto::COMPUTE || (type != "reshape" && type != "flatten") ||
        t.inputs_size() != 1 || t.outputs_size() != 1) {
      continue;
    }
    const int64_t gx = group[t.inputs(0)], gy = group[t.outputs(0)];
    if (gx < 0 || gy < 0 || gx == gy || folded[gy]) continue;
    Candidate& x = cands[gx];
    Candidate& y = cands[gy];
    if (x.raw_bytes != y.raw_bytes || y.producer != t.id()) continue;
    bool sound = true;
    for (const Candidate* c : {&x, &y}) {
      for (int64_t r : c->readers) {
        sound = sound && !MayWriteInputs(plan.tasks(r));
        if (c == &y) sound = sound && reach.Before(r, n + x.producer);
      }
    }
    if (!sound) continue;
    x.readers.insert(x.readers.end(), y.readers.begin(), y.readers.end());
    x.members.insert(x.members.end(), y.members.begin(), y.members.end());
    for (int64_t m : y.members) group[m] = gx;
    folded[gy] = true;
  }
  std::vector<Candidate> out;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!folded[i]) out.push_back(std::move(cands[i]));
  }
  return out;
}

// The updated persistent registers of `rank` whose undo copy may live in the
// arena (memory_plan.h, "Undo copies"): by register id, the one COMPUTE task
// that writes it in place, or -1.
std::vector<int64_t> UndoWriters(const proto::Plan& plan, int64_t rank) {
  std::vector<int64_t> writer(plan.registers_size(), -1);
  std::vector<bool> excluded(plan.registers_size(), false);
  for (const proto::TaskProto& t : plan.tasks()) {
    if (t.kind() != proto::TaskProto::VARIABLE) {
      for (int64_t id : t.outputs()) excluded[id] = true;  // written whole by another kind
    }
    if (t.kind() != proto::TaskProto::COMPUTE) continue;
    Maybe<const OpDef*> def = OpRegistry::Find(t.op_conf().op_type());
    for (int i = 0; i < t.inputs_size(); ++i) {
      const int64_t id = t.inputs(i);
      const proto::RegisterDesc& r = plan.registers(id);
      if (!r.persistent() || (def.ok() && !def.value()->is_mutable_input(i))) continue;
      if (t.rank() != rank || r.rank() != rank || r.num_slots() != 1 || SlotBytes(r) <= 0) {
        excluded[id] = true;
      } else if (writer[id] >= 0 && writer[id] != t.id()) {
        excluded[id] = true;  // two writers: no one act to save it before
      } else {
        writer[id] = t.id();
      }
    }
  }
  for (int64_t id = 0; id < plan.registers_size(); ++id) {
    if (excluded[id]) writer[id] = -1;
  }
  return writer;
}

// Whether `a` and `b` may share bytes: the soundness rule for two planned
// registers; an undo copy and a planned register when every reader of the
// register (in the run's one iteration) acts before the undo copy's writer;
// an undo copy and spare slots always (a run of one iteration writes no
// spare slot); two undo copies never (both live to the end of the run), nor
// spare slots with anything else.
bool MayShare(const Candidate& a, const Candidate& b, const Reachability& reach,
              int64_t num_tasks) {
  if (a.spare || b.spare) return a.undo || b.undo;
  if (a.undo && b.undo) return false;
  if (a.undo || b.undo) {
    const Candidate& live = a.undo ? b : a;
    const int64_t writer = a.undo ? a.producer : b.producer;
    for (int64_t r : live.readers) {
      if (!reach.Before(r, writer)) return false;
    }
    return true;
  }
  return Precedes(a, b, reach, num_tasks) || Precedes(b, a, reach, num_tasks);
}

// Places `cands` (by decreasing size, ties by id) at the lowest aligned
// offsets that overlap nothing they may not share with; returns the arena's
// bytes and fills `out`'s offset (planned registers), undo_offset (undo
// copies) and spare_offset (spare slots).
int64_t Place(std::vector<Candidate> cands, const Reachability& reach, int64_t num_tasks,
              MemoryPlan* out) {
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.reg != b.reg ? a.reg < b.reg : a.undo < b.undo;
  });
  struct Placed {
    int64_t begin, end;
    const Candidate* cand;
  };
  std::vector<Placed> placed;
  int64_t arena_bytes = 0;
  for (const Candidate& c : cands) {
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (const Placed& p : placed) {
      if (!MayShare(c, *p.cand, reach, num_tasks)) taken.push_back({p.begin, p.end});
    }
    std::sort(taken.begin(), taken.end());
    int64_t at = 0;
    for (const auto& [begin, end] : taken) {
      if (at + c.bytes <= begin) break;
      at = std::max(at, end);
    }
    placed.push_back({at, at + c.bytes, &c});
    for (int64_t m : c.members) {
      (c.undo ? out->undo_offset : c.spare ? out->spare_offset : out->offset)[m] = at;
    }
    arena_bytes = std::max(arena_bytes, at + c.bytes);
  }
  return arena_bytes;
}

// Adds the undo copies of `undo_writer` (and, when `cands` is empty, the
// spare slots of `rank`) to the placement of `cands`, whose arena `out`
// holds; keeps the result when its arena grows by fewer bytes than the undo
// copies' own buffers plus the spare slots' would take.
void PlaceUndoCopies(const proto::Plan& plan, int64_t rank, const std::vector<int64_t>& producer,
                     const std::vector<int64_t>& undo_writer, const Reachability& reach,
                     std::vector<Candidate> cands, MemoryPlan* out) {
  const bool spares = cands.empty();
  int64_t undo_raw_bytes = 0, spare_raw_bytes = 0;
  for (int64_t id = 0; id < plan.registers_size(); ++id) {
    if (undo_writer[id] < 0) continue;
    const int64_t bytes = SlotBytes(plan.registers(id));
    cands.push_back({id, undo_writer[id], {}, RoundUp(bytes), bytes, {id}, true});
    undo_raw_bytes += bytes;
  }
  if (undo_raw_bytes == 0) return;
  if (spares) {
    for (Candidate& c : Candidates(plan, rank, producer, true)) {
      spare_raw_bytes += c.raw_bytes;
      cands.push_back(std::move(c));
    }
  }
  MemoryPlan with;
  with.offset.assign(plan.registers_size(), -1);
  with.undo_offset.assign(plan.registers_size(), -1);
  with.spare_offset.assign(plan.registers_size(), -1);
  const int64_t bytes = Place(std::move(cands), reach, plan.tasks_size(), &with);
  if (bytes >= out->arena_bytes + undo_raw_bytes + spare_raw_bytes) return;
  with.arena_bytes = bytes;
  with.unshared_bytes = out->unshared_bytes;
  with.spare_slot_bytes = spare_raw_bytes;
  with.undo_arena_bytes = bytes - out->arena_bytes - spare_raw_bytes;
  *out = std::move(with);
}

}  // namespace

MemoryPlan PlanRegisterMemory(const proto::Plan& plan, int64_t rank,
                              const std::vector<int64_t>& producer, bool undo_copies) {
  MemoryPlan out;
  out.offset.assign(plan.registers_size(), -1);
  out.undo_offset.assign(plan.registers_size(), -1);
  out.spare_offset.assign(plan.registers_size(), -1);
  if (AnyPeriodAboveOne(plan)) return out;
  const MemoryPlan empty = out;
  std::vector<Candidate> cands = Candidates(plan, rank, producer);
  std::vector<int64_t> undo_writer =
      undo_copies ? UndoWriters(plan, rank) : std::vector<int64_t>(plan.registers_size(), -1);
  const bool any_undo =
      std::any_of(undo_writer.begin(), undo_writer.end(), [](int64_t w) { return w >= 0; });
  if (cands.empty() && !any_undo) return out;
  const int64_t n = plan.tasks_size();
  std::vector<int64_t> targets;
  for (const Candidate& c : cands) {
    targets.push_back(c.producer);
    targets.push_back(n + c.producer);
  }
  for (int64_t w : undo_writer) {
    if (w >= 0) targets.push_back(w);
  }
  Reachability reach;
  if (!reach.Build(plan, producer, targets)) return out;
  if (!cands.empty()) {
    int64_t raw_bytes = 0;
    for (const Candidate& c : cands) {
      out.unshared_bytes += c.bytes;
      raw_bytes += c.raw_bytes;
    }
    cands = FoldViews(plan, std::move(cands), reach);
    MemoryPlan planned = empty;
    out.arena_bytes = Place(cands, reach, n, &planned);
    out.offset = std::move(planned.offset);
    if (out.arena_bytes >= raw_bytes) {  // sharing saves nothing: no planned registers
      out = empty;
      cands.clear();
    }
  }
  if (any_undo) PlaceUndoCopies(plan, rank, producer, undo_writer, reach, std::move(cands), &out);
  return out;
}

}  // namespace ofl
