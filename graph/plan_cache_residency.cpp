// The reuse-distance model of graph/plan_cache_residency.h.
#include "graph/plan_cache_residency.h"

#include <glog/logging.h>

#include <algorithm>
#include <map>

namespace ofl {

namespace {

// The registers a task touches: inputs and outputs, data and control.
std::vector<int64_t> Touched(const proto::TaskProto& task) {
  std::vector<int64_t> regs(task.inputs().begin(), task.inputs().end());
  regs.insert(regs.end(), task.outputs().begin(), task.outputs().end());
  std::sort(regs.begin(), regs.end());
  regs.erase(std::unique(regs.begin(), regs.end()), regs.end());
  return regs;
}

}  // namespace

std::vector<std::string> InputResidency(const proto::Plan& plan, int64_t cache_bytes) {
  CHECK_GT(cache_bytes, 0);
  std::vector<std::string> residency(plan.tasks_size());
  // Per rank: its tasks in plan order.
  std::map<int64_t, std::vector<int>> by_rank;
  for (int t = 0; t < plan.tasks_size(); ++t) by_rank[plan.tasks(t).rank()].push_back(t);
  for (const auto& [rank, order] : by_rank) {
    const size_t n = order.size();
    // prefix[i]: bytes the rank's first i tasks touch.
    std::vector<int64_t> prefix(n + 1, 0);
    std::map<int64_t, std::vector<size_t>> touches;  // register -> positions, ascending
    for (size_t i = 0; i < n; ++i) {
      int64_t bytes = 0;
      for (int64_t r : Touched(plan.tasks(order[i]))) {
        bytes += plan.registers(static_cast<int>(r)).bytes();
        touches[r].push_back(i);
      }
      prefix[i + 1] = prefix[i] + bytes;
    }
    for (size_t i = 0; i < n; ++i) {
      const proto::TaskProto& task = plan.tasks(order[i]);
      if (task.kind() != proto::TaskProto::COMPUTE) continue;
      std::string& letters = residency[order[i]];
      for (int64_t r : task.inputs()) {
        const std::vector<size_t>& at = touches.at(r);
        auto before = std::lower_bound(at.begin(), at.end(), i);  // first touch at or after i
        int64_t distance;
        if (before != at.begin()) {
          const size_t j = *(before - 1);
          distance = prefix[i] - prefix[j + 1];
        } else {                       // last touched in the previous step: wrap around
          const size_t j = at.back();  // >= i; j == i: only this task touches it
          distance = (prefix[n] - prefix[j + 1]) + prefix[i];
        }
        const int64_t own = plan.registers(static_cast<int>(r)).bytes();
        letters += distance + own <= cache_bytes ? 'h' : 'c';
      }
    }
  }
  return residency;
}

}  // namespace ofl
