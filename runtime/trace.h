// Chrome trace output (chrome://tracing, Perfetto's legacy JSON): one
// complete ("X") event per act, named after the task, with pid = rank and
// tid = stream, ts and dur in microseconds since the run began, plus the
// metadata events that label processes "rank r" and threads "stream s".
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "oneflow_lite/core/status.h"
#include "runtime/run_context.h"

namespace ofl {

// `task_names[id]`: the name of task `id` ("matmul 'fc1'").
std::string ChromeTraceJson(const std::vector<ActRecord>& acts,
                            const std::vector<std::string>& task_names);
Status WriteChromeTrace(const std::string& path, const std::vector<ActRecord>& acts,
                        const std::vector<std::string>& task_names);

}  // namespace ofl
