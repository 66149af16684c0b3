// libFuzzer target: a Plan (the compiled physical task graph) as the runtime
// checks it before building actors: ofl::CheckPlan (runtime/plan_check.h,
// called first by Runtime::Create), then RunIterationsFit for a few
// iteration counts, as Run does.
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "runtime/plan_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ofl::fuzz::ForEachParse<ofl::proto::Plan>(data, size, [](const ofl::proto::Plan& plan) {
    ofl::Maybe<std::vector<int64_t>> producer = ofl::CheckPlan(plan);
    if (!producer.ok()) return;
    if (producer.value().size() != static_cast<size_t>(plan.registers_size())) __builtin_trap();
    for (int64_t n : {1, 4, 6}) (void)ofl::RunIterationsFit(plan, n);
  });
  return 0;
}
