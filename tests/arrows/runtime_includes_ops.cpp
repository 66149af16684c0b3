// Control for runtime_includes_graph.cpp: a runtime-only target may include
// ops/ (runtime -> ops), so this compiles (tests/arrows/CMakeLists.txt).
#include "ops/op_registry.h"
#include "runtime/runtime.h"

int OflArrowControl() { return ofl::OpRegistry::ListOps().empty() ? 0 : 1; }
