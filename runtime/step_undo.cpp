// StepUndo (runtime/step_undo.h): the undo copy of updated variables.
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

StepUndo::StepUndo(const proto::Plan& plan, std::vector<RuntimeRegister>* registers,
                   const std::vector<std::unique_ptr<DeviceContext>>& devices, int threads,
                   bool keep_copy)
    : keep_copy_(keep_copy),
      bytes_per_rank_(plan.num_ranks(), 0),
      arena_(std::make_unique<tbb::task_arena>(std::max(threads, 1))) {
  for (int64_t id : UpdatedRegisters(plan)) {
    RuntimeRegister& reg = (*registers)[id];
    if (reg.slots.empty()) continue;  // not allocated here: a rank of another process
    CHECK_EQ(reg.slots.size(), 1u) << "persistent register '" << reg.desc->name() << "'";
    Tensor* live = &reg.slots[0];
    const int64_t rank = reg.desc->rank();
    if (!keep_copy) {
      entries_.push_back({live, Tensor(), nullptr});
      continue;
    }
    DeviceContext* device = devices[rank].get();
    entries_.push_back(
        {live, device->allocator()->NewTensor(live->shape(), live->dtype()).value(), device});
    bytes_per_rank_[rank] += live->nbytes();
  }
}

void StepUndo::Save() { Copy(true); }

void StepUndo::Restore() { Copy(false); }

void StepUndo::Copy(bool to_undo) {
  struct Chunk {
    char* to;
    const char* from;
    int64_t bytes;
  };
  if (!keep_copy_) return;
  std::vector<Chunk> chunks;
  for (Entry& e : entries_) {
    if (!e.live->device().is_host()) {  // device memory: one device-side copy
      const Tensor& from = to_undo ? *e.live : e.undo;
      Tensor& to = to_undo ? e.undo : *e.live;
      e.device->CopySync(to.raw(), from.raw(), e.live->nbytes());
      continue;
    }
    char* live = static_cast<char*>(e.live->raw());
    char* undo = static_cast<char*>(e.undo.raw());
    for (int64_t at = 0; at < e.live->nbytes(); at += kChunkBytes) {
      const int64_t bytes = std::min(kChunkBytes, e.live->nbytes() - at);
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
