// StepUndo (runtime/step_undo.h): the undo copies of updated variables, in
// the arena (saved by their writer's act) or in buffers of their own.
#include "runtime/step_undo.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "ops/op_registry.h"

namespace ofl {

namespace {
constexpr int64_t kChunkBytes = int64_t{1} << 20;  // one parallel_for item
}  // namespace

std::vector<int64_t> StepUndo::UpdatedRegisters(const proto::Plan& plan) {
  std::set<int64_t> updated;
  for (const proto::TaskProto& t : plan.tasks()) {
    if (t.kind() != proto::TaskProto::VARIABLE) {
      for (int64_t id : t.outputs()) {
        if (plan.registers(id).persistent()) updated.insert(id);
      }
    }
    if (t.kind() != proto::TaskProto::COMPUTE) continue;
    Maybe<const OpDef*> def = OpRegistry::Find(t.op_conf().op_type());
    for (int i = 0; i < t.inputs_size(); ++i) {
      const int64_t id = t.inputs(i);
      if (!plan.registers(id).persistent()) continue;
      if (!def.ok() || def.value()->is_mutable_input(i)) updated.insert(id);
    }
  }
  return {updated.begin(), updated.end()};
}

namespace {

// By register id: a COMPUTE task that writes it in place, or -1 (the one
// writer, for the registers runtime/memory_plan.h places in the arena).
std::vector<int64_t> InPlaceWriters(const proto::Plan& plan) {
  std::vector<int64_t> writer(plan.registers_size(), -1);
  for (const proto::TaskProto& t : plan.tasks()) {
    if (t.kind() != proto::TaskProto::COMPUTE) continue;
    Maybe<const OpDef*> def = OpRegistry::Find(t.op_conf().op_type());
    for (int i = 0; i < t.inputs_size(); ++i) {
      if (!def.ok() || def.value()->is_mutable_input(i)) writer[t.inputs(i)] = t.id();
    }
  }
  return writer;
}

}  // namespace

StepUndo::StepUndo(const proto::Plan& plan, std::vector<RuntimeRegister>* registers,
                   const std::vector<std::unique_ptr<DeviceContext>>& devices, int threads,
                   bool keep_copy, const std::vector<Tensor>& in_arena,
                   const std::vector<int64_t>& arena_bytes)
    : keep_copy_(keep_copy),
      bytes_per_rank_(plan.num_ranks(), 0),
      arena_(std::make_unique<tbb::task_arena>(std::max(threads, 1))) {
  const std::vector<int64_t> writer = InPlaceWriters(plan);
  for (int64_t id : UpdatedRegisters(plan)) {
    RuntimeRegister& reg = (*registers)[id];
    if (reg.slots.empty()) continue;  // not allocated here: a rank of another process
    CHECK_EQ(reg.slots.size(), 1u) << "persistent register '" << reg.desc->name() << "'";
    Entry e;
    e.live = &reg.slots[0];
    if (!keep_copy) {
      entries_.push_back(std::move(e));
      continue;
    }
    const int64_t rank = reg.desc->rank();
    e.device = devices[rank].get();
    e.rank = rank;
    if (id < static_cast<int64_t>(in_arena.size()) && in_arena[id].defined()) {
      CHECK_GE(writer[id], 0) << "undo copy of '" << reg.desc->name() << "' has no writer";
      e.arena = in_arena[id];
      e.writer = writer[id];
      by_writer_[e.writer].push_back(entries_.size());
    } else {
      e.whole = e.device->allocator()->NewTensor(e.live->shape(), e.live->dtype()).value();
      bytes_per_rank_[rank] += e.live->nbytes();
    }
    entries_.push_back(std::move(e));
  }
  if (!keep_copy) return;
  for (size_t r = 0; r < arena_bytes.size() && r < bytes_per_rank_.size(); ++r) {
    bytes_per_rank_[r] += arena_bytes[r];
  }
}

Status StepUndo::BeginRun(int64_t num_iterations) {
  if (!keep_copy_) return Status::OK();
  lazy_ = num_iterations <= 1;
  std::vector<Entry*> now;
  for (Entry& e : entries_) {
    e.saved = false;
    if (e.arena.defined() && lazy_) {
      e.undo = e.arena;
      continue;
    }
    if (!e.whole.defined()) {  // an arena copy in a run of several iterations: once
      Maybe<Tensor> whole = e.device->allocator()->NewTensor(e.live->shape(), e.live->dtype());
      if (!whole.ok()) {
        return Status(whole.status().code(), StrCat("run: undo copy for ", num_iterations,
                                                    " iterations: ", whole.status().message()));
      }
      e.whole = std::move(whole).value();
      bytes_per_rank_[e.rank] += e.live->nbytes();
    }
    e.undo = e.whole;
    now.push_back(&e);
  }
  Copy(now, true);
  for (Entry* e : now) e->saved = true;
  return Status::OK();
}

void StepUndo::SaveBefore(int64_t task) {
  if (!lazy_) return;
  auto it = by_writer_.find(task);
  if (it == by_writer_.end()) return;
  for (size_t i : it->second) {
    Entry& e = entries_[i];
    if (e.saved) continue;  // acted before in this run
    std::memcpy(e.undo.raw(), e.live->raw(), e.live->nbytes());
    e.saved = true;
  }
}

void StepUndo::Restore() {
  std::vector<Entry*> saved;
  for (Entry& e : entries_) {
    if (e.saved) saved.push_back(&e);
  }
  Copy(saved, false);
}

std::vector<int64_t> StepUndo::SavingTasks() const {
  std::vector<int64_t> tasks;
  for (const auto& [task, entries] : by_writer_) tasks.push_back(task);
  return tasks;
}

void StepUndo::Copy(const std::vector<Entry*>& entries, bool to_undo) {
  struct Chunk {
    char* to;
    const char* from;
    int64_t bytes;
  };
  std::vector<Chunk> chunks;
  for (Entry* e : entries) {
    if (!e->live->device().is_host()) {  // device memory: one device-side copy
      const Tensor& from = to_undo ? *e->live : e->undo;
      Tensor& to = to_undo ? e->undo : *e->live;
      e->device->CopySync(to.raw(), from.raw(), e->live->nbytes());
      continue;
    }
    char* live = static_cast<char*>(e->live->raw());
    char* undo = static_cast<char*>(e->undo.raw());
    for (int64_t at = 0; at < e->live->nbytes(); at += kChunkBytes) {
      const int64_t bytes = std::min(kChunkBytes, e->live->nbytes() - at);
      chunks.push_back(to_undo ? Chunk{undo + at, live + at, bytes}
                               : Chunk{live + at, undo + at, bytes});
    }
  }
  if (chunks.empty()) return;
  arena_->execute([&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, chunks.size()),
                      [&](const tbb::blocked_range<size_t>& range) {
                        for (size_t i = range.begin(); i != range.end(); ++i) {
                          std::memcpy(chunks[i].to, chunks[i].from, chunks[i].bytes);
                        }
                      });
  });
}

Status ConcludeRun(const Status& local, const std::function<Status(const Status&)>& commit,
                   StepUndo* undo) {
  Status outcome = commit ? commit(local) : local;
  if (outcome.ok()) outcome = local;
  if (outcome.ok() || undo->num_updated_registers() == 0) return outcome;
  if (!undo->keeps_copy()) {
    return Status(outcome.code(), outcome.message() +
                                      " (state may be partially updated: transactional steps "
                                      "are off)");
  }
  undo->Restore();
  return Status(outcome.code(), outcome.message() +
                                    " (variables and optimizer state restored to their values "
                                    "before this run)");
}

}  // namespace ofl
