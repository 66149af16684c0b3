// A forbidden include on purpose: the runtime never includes graph/
// (DESIGN.md section 2). A target that links ofl_runtime alone has no
// include path to graph/, so this must fail to compile
// (tests/arrows/CMakeLists.txt, WILL_FAIL). Not part of the normal build.
#include "graph/op_graph.h"
#include "runtime/runtime.h"

// Nothing below needs graph/: the include alone is what must fail.
int OflArrowViolation() { return 0; }
