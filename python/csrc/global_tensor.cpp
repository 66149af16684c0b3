// Binding of the global-tensor vocabulary for the Python frontend's eager
// global tensors (oneflow_lite/_global.py): placement validation, NdSbp
// parsing and the per-rank slice of a logical tensor, all from core/ so that
// Python never re-derives what the boxing planner and the runtime use.
// Stateless functions; called with the GIL held.
#include <pybind11/stl.h>

#include "convert.h"
#include "oneflow_lite/core/placement.h"
#include "oneflow_lite/core/slicing.h"

namespace ofl::python {

void BindGlobal(py::module_& m) {
  // Validates a placement (repeated ranks, hierarchy product) and returns its
  // text form, e.g. "cpu:[0, 1, 2, 3] hierarchy (2, 2)".
  m.def(
      "placement_string",
      [](const std::string& device, const std::vector<int64_t>& ranks,
         const std::vector<int64_t>& hierarchy) {
        DeviceType type = Unwrap(ParseDeviceType(device));
        return Unwrap(Placement::Create(type, ranks, Shape(hierarchy))).ToString();
      },
      py::arg("device"), py::arg("ranks"), py::arg("hierarchy") = std::vector<int64_t>{});
  // Parses "S(0)", "B", "P" or "(S(0), B)"; returns the canonical NdSbp text.
  m.def(
      "parse_nd_sbp", [](const std::string& text) { return Unwrap(NdSbp::Parse(text)).ToString(); },
      py::arg("text"));
  // The slice held by the rank at flat position `index` of the hierarchy:
  // (shape, offset, partial). Raises ValueError naming `what` when the NdSbp
  // does not fit the logical shape or the hierarchy.
  m.def(
      "local_slice",
      [](const std::vector<int64_t>& logical, const std::vector<int64_t>& hierarchy,
         const std::string& nd_sbp, int64_t index, const std::string& what) {
        NdSbp parsed = Unwrap(NdSbp::Parse(nd_sbp));
        ThrowIfError(ValidateNdSbp(Shape(logical), Shape(hierarchy), parsed, what));
        int64_t size = 1;
        for (int64_t d : hierarchy) size *= d;
        if (index < 0 || index >= size) {
          throw py::value_error(what + ": rank index " + std::to_string(index) +
                                " is outside the hierarchy of " + std::to_string(size) + " ranks");
        }
        std::vector<int64_t> coords(hierarchy.size());
        for (int64_t a = static_cast<int64_t>(hierarchy.size()) - 1, rest = index; a >= 0; --a) {
          coords[a] = rest % hierarchy[a];
          rest /= hierarchy[a];
        }
        TensorSlice s = SliceOf(Shape(logical), Shape(hierarchy), parsed, coords);
        return py::make_tuple(s.shape.dims(), s.offset, s.partial);
      },
      py::arg("logical_shape"), py::arg("hierarchy"), py::arg("nd_sbp"), py::arg("index"),
      py::arg("what") = std::string("tensor"));
}

}  // namespace ofl::python
