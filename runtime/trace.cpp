// Chrome trace JSON of runtime/trace.h.
#include "runtime/trace.h"

#include <cstdio>
#include <fstream>
#include <set>
#include <utility>

#include "oneflow_lite/core/json.h"

namespace ofl {

namespace {

std::string Micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", static_cast<double>(ns) / 1000.0);
  return buf;
}

}  // namespace

std::string ChromeTraceJson(const std::vector<ActRecord>& acts,
                            const std::vector<std::string>& task_names) {
  std::string out = "{\"traceEvents\": [\n";
  bool first = true;
  auto add = [&](const std::string& event) {
    out += first ? "  " : ",\n  ";
    out += event;
    first = false;
  };
  std::set<int64_t> ranks;
  std::set<std::pair<int64_t, int64_t>> streams;
  for (const ActRecord& a : acts) {
    ranks.insert(a.rank);
    streams.insert({a.rank, a.stream});
  }
  for (int64_t r : ranks) {
    add(StrCat("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": ", r,
               ", \"args\": {\"name\": \"rank ", r, "\"}}"));
  }
  for (const auto& [r, s] : streams) {
    add(StrCat("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": ", r, ", \"tid\": ", s,
               ", \"args\": {\"name\": \"stream ", s, "\"}}"));
  }
  for (const ActRecord& a : acts) {
    const std::string& name =
        a.task < static_cast<int64_t>(task_names.size()) ? task_names[a.task] : std::string("task");
    add(StrCat("{\"name\": ", JsonString(name), ", \"ph\": \"X\", \"pid\": ", a.rank,
               ", \"tid\": ", a.stream, ", \"ts\": ", Micros(a.start_ns),
               ", \"dur\": ", Micros(a.end_ns - a.start_ns), ", \"args\": {\"task\": ", a.task,
               ", \"iteration\": ", a.iteration, "}}"));
  }
  out += "\n]}\n";
  return out;
}

Status WriteChromeTrace(const std::string& path, const std::vector<ActRecord>& acts,
                        const std::vector<std::string>& task_names) {
  std::ofstream file(path);
  if (!file) return InvalidArgument("trace: cannot open '", path, "' for writing");
  file << ChromeTraceJson(acts, task_names);
  file.close();
  if (!file) return InvalidArgument("trace: cannot write '", path, "'");
  return Status::OK();
}

}  // namespace ofl
