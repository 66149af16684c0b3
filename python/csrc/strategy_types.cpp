// Binding of the typed strategy artifacts (api/strategy_io.h, api/compile.h):
// Placement (device type, ranks, hierarchy; built once from the user's),
// Strategy (layouts parsed in C++; sources and signatures as read-only
// views, str, diff, save, load) and PlanSpec (how a session gets its
// strategy: deduce, random, given, search). Strategy files are protobuf
// JSON written and read in C++ (core/proto/strategy.proto).
#include "strategy_types.h"

#include <pybind11/stl.h>

#include "convert.h"
#include "oneflow_lite/api/compile.h"
#include "oneflow_lite/api/strategy_io.h"

namespace ofl::python {
namespace {

py::object ReadOnly(const std::map<std::string, std::string>& texts) {
  return py::module_::import("types").attr("MappingProxyType")(py::cast(texts));
}

std::string StrategyText(const Strategy& s) {
  std::string text = s.placement().size() > 0 ? s.placement().ToString() : "(no placement)";
  text += "\n";
  for (const auto& [tensor, sbp] : SourceTexts(s)) text += tensor + ": " + sbp + "\n";
  for (const auto& [op, sig] : SignatureTexts(s)) text += op + ": " + sig + "\n";
  return text;
}

void BindPlacement(py::module_& m) {
  py::class_<Placement>(m, "Placement")
      .def(py::init([](const std::string& device_type, const std::vector<int64_t>& ranks,
                       const std::vector<int64_t>& hierarchy) {
             return Unwrap(
                 Placement::Create(Unwrap(ParseDeviceType(device_type)), ranks, Shape(hierarchy)));
           }),
           py::arg("device_type") = "cpu", py::arg("ranks") = std::vector<int64_t>{},
           py::arg("hierarchy") = std::vector<int64_t>{},
           "ranks over a hierarchy (empty: flat) of one device type; errors name the value")
      .def_property_readonly("device_type",
                             [](const Placement& p) { return DeviceTypeName(p.device_type()); })
      .def_property_readonly("ranks", &Placement::ranks)
      .def_property_readonly("hierarchy", [](const Placement& p) { return p.hierarchy().dims(); })
      .def("__eq__", [](const Placement& a, const Placement& b) { return a == b; })
      .def("__str__", &Placement::ToString)
      .def("__repr__", [](const Placement& p) { return "Placement(" + p.ToString() + ")"; });
}

void BindStrategyClass(py::module_& m) {
  py::class_<Strategy>(m, "Strategy")
      .def(py::init([](const std::map<std::string, std::string>& sources,
                       const std::map<std::string, std::string>& signatures,
                       const std::optional<Placement>& placement) {
             return Unwrap(StrategyFromText(sources, signatures, placement));
           }),
           py::arg("sources") = std::map<std::string, std::string>{},
           py::arg("signatures") = std::map<std::string, std::string>{},
           py::arg("placement") = py::none(),
           "a strategy written by hand: tensor -> NdSbp text, op -> signature text (parsed "
           "here; errors name the tensor or op). placement None: the session's")
      .def_property_readonly(
          "sources", [](const Strategy& s) { return ReadOnly(SourceTexts(s)); },
          "tensor -> NdSbp text (a read-only view)")
      .def_property_readonly(
          "signatures", [](const Strategy& s) { return ReadOnly(SignatureTexts(s)); },
          "op -> signature text (a read-only view)")
      .def_property_readonly(
          "placement",
          [](const Strategy& s) -> std::optional<Placement> {
            if (s.placement().size() == 0) return std::nullopt;
            return s.placement();
          },
          "the default placement (None: unbound, the session's)")
      .def(
          "diff", [](const Strategy& a, const Strategy& b) { return DiffStrategyText(a, b); },
          py::arg("other"), "one line per layout that differs ('name: this => other')")
      .def("__eq__",
           [](const Strategy& a, const Strategy& b) {
             return a.placement() == b.placement() && DiffStrategyText(a, b).empty();
           })
      .def(
          "save",
          [](const Strategy& s, const std::string& path) {
            proto::PlannedStrategyConf file;
            *file.mutable_strategy() = StrategyToConf(s);
            ThrowIfError(SaveStrategyFile(path, file));
          },
          py::arg("path"), "writes the strategy file (protobuf JSON)")
      .def_static(
          "load", [](const std::string& path) { return LoadStrategy(path); }, py::arg("path"))
      .def("__str__", &StrategyText);
  m.def("load_strategy", &LoadStrategy, py::arg("path"),
        "a saved strategy (PlannedStrategy.save, Strategy.save, nn.Graph.save_strategy, or the "
        "older JSON form) as a Strategy");
}

void BindPlanSpec(py::module_& m) {
  py::class_<PlanSpec>(m, "PlanSpec")
      .def_static(
          "deduce",
          [](const std::map<std::string, std::string>& pinned) {
            return PlanSpec::Deduce(Unwrap(StrategyFromText(pinned, {})).sources());
          },
          py::arg("pinned") = std::map<std::string, std::string>{},
          "sources take the pinned NdSbps (others broadcast), ops the first signature "
          "without boxing")
      .def_static(
          "random",
          [](int64_t seed, int64_t stages) { return Unwrap(PlanSpec::Random(seed, stages)); },
          py::arg("seed"), py::arg("stages") = 1,
          "random signatures (seeded), over `stages` equal pipeline stages")
      .def_static("given", &PlanSpec::Given, py::arg("strategy"),
                  "a Strategy, bound to the "
                  "session's placement")
      .def("__str__", &PlanSpec::ToString);
}

}  // namespace

Strategy LoadStrategy(const std::string& path) {
  proto::PlannedStrategyConf file = Unwrap(LoadStrategyFile(path));
  return Unwrap(StrategyFromConf(file.strategy()));
}

PlanSpec SpecOf(const py::object& strategy) {
  if (strategy.is_none()) return PlanSpec::Deduce();
  if (py::isinstance<PlanSpec>(strategy)) return strategy.cast<PlanSpec>();
  if (py::isinstance<Strategy>(strategy)) return PlanSpec::Given(strategy.cast<Strategy>());
  throw py::type_error("strategy must be a _C.Strategy, a _C.PlanSpec or None (deduce), got " +
                       py::repr(strategy).cast<std::string>());
}

void BindStrategyTypes(py::module_& m) {
  BindPlacement(m);
  BindStrategyClass(m);
  BindPlanSpec(m);
}

}  // namespace ofl::python
