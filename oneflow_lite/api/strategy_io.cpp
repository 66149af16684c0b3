#include "oneflow_lite/api/strategy_io.h"

#include <glog/logging.h>
#include <google/protobuf/util/json_util.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ops/nd_sbp.h"

namespace ofl {
namespace {

bool Bound(const Placement& p) { return p.size() > 0; }

Maybe<NdSbp> ParseSbp(const std::string& tensor, const std::string& text) {
  auto parsed = NdSbp::Parse(text);
  OFL_ENSURE(parsed.ok(), "tensor '", tensor, "': ", parsed.status().message());
  return parsed.value();
}

Maybe<NdSbpSignature> ParseSignature(const std::string& op, const std::string& text) {
  auto parsed = NdSbpSignature::Parse(text);
  OFL_ENSURE(parsed.ok(), "op '", op, "': ", parsed.status().message());
  return parsed.value();
}

// Does every op and source of `s` lie on its default placement?
bool OnDefaultPlacement(const Strategy& s) {
  for (const auto& [op, sig] : s.signatures()) {
    if (s.PlacementOf(op) != s.placement()) return false;
  }
  for (const auto& [tensor, sbp] : s.sources()) {
    if (s.SourcePlacement(tensor) != s.placement()) return false;
  }
  return true;
}

Maybe<std::string> ReadStrategyText(const std::string& path) {
  std::error_code error;
  OFL_ENSURE(!std::filesystem::is_directory(path, error), "strategy file '", path,
             "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  OFL_ENSURE(in.good(), "cannot open strategy file '", path, "' for reading");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The older JSON form, converted (kind manual only).
Maybe<proto::PlannedStrategyConf> FromLegacy(const proto::LegacyStrategyFile& legacy,
                                             const std::string& path) {
  OFL_ENSURE(legacy.kind() == "manual", "strategy file '", path, "' holds kind '", legacy.kind(),
             "', not a strategy (a file holds a manual one: sources and signatures; deduce "
             "and random are session arguments, _C.PlanSpec)");
  proto::PlannedStrategyConf file;
  std::map<std::string, std::string> sorted_sources(legacy.sources().begin(),
                                                    legacy.sources().end());
  std::map<std::string, std::string> sorted_ops(legacy.signatures().begin(),
                                                legacy.signatures().end());
  for (const auto& [tensor, text] : sorted_sources) {
    proto::SourceLayout* s = file.mutable_strategy()->add_sources();
    s->set_tensor(tensor);
    s->set_nd_sbp(text);
  }
  for (const auto& [op, text] : sorted_ops) {
    proto::OpLayout* o = file.mutable_strategy()->add_ops();
    o->set_op(op);
    o->set_signature(text);
  }
  file.set_searcher(legacy.searcher());
  file.set_predicted_step_s(legacy.predicted_step_s());
  return file;  // the older form's placement was text for the reader: unbound
}

}  // namespace

proto::PlacementConf PlacementToConf(const Placement& placement) {
  proto::PlacementConf conf;
  conf.set_device_type(DeviceTypeName(placement.device_type()));
  for (int64_t r : placement.ranks()) conf.add_ranks(r);
  for (int64_t d : placement.hierarchy().dims()) conf.add_hierarchy(d);
  return conf;
}

Maybe<Placement> PlacementFromConf(const proto::PlacementConf& conf, const std::string& what) {
  auto type = ParseDeviceType(conf.device_type().empty() ? "cpu" : conf.device_type());
  OFL_ENSURE(type.ok(), what, ": ", type.status().message());
  auto p = Placement::Create(
      type.value(), std::vector<int64_t>(conf.ranks().begin(), conf.ranks().end()),
      Shape(std::vector<int64_t>(conf.hierarchy().begin(), conf.hierarchy().end())));
  OFL_ENSURE(p.ok(), what, ": ", p.status().message());
  return p.value();
}

proto::StrategyConf StrategyToConf(const Strategy& strategy) {
  proto::StrategyConf conf;
  const Placement& base = strategy.placement();
  if (Bound(base)) *conf.mutable_placement() = PlacementToConf(base);
  for (const auto& [tensor, sbp] : strategy.sources()) {
    proto::SourceLayout* s = conf.add_sources();
    s->set_tensor(tensor);
    s->set_nd_sbp(sbp.ToString());
    const Placement& p = strategy.SourcePlacement(tensor);
    if (p != base) *s->mutable_placement() = PlacementToConf(p);
  }
  for (const auto& [op, sig] : strategy.signatures()) {
    proto::OpLayout* o = conf.add_ops();
    o->set_op(op);
    o->set_signature(sig.ToString());
    const Placement& p = strategy.PlacementOf(op);
    if (p != base) *o->mutable_placement() = PlacementToConf(p);
  }
  return conf;
}

Maybe<Strategy> StrategyFromConf(const proto::StrategyConf& conf) {
  Strategy s;
  if (conf.has_placement()) {
    OFL_ASSIGN_OR_RETURN(Placement p, PlacementFromConf(conf.placement(), "strategy placement"));
    s = Strategy(p);
  }
  for (const proto::SourceLayout& src : conf.sources()) {
    OFL_ASSIGN_OR_RETURN(NdSbp sbp, ParseSbp(src.tensor(), src.nd_sbp()));
    s.SetSourceSbp(src.tensor(), sbp);
    if (src.has_placement()) {
      OFL_ASSIGN_OR_RETURN(Placement p,
                           PlacementFromConf(src.placement(), "tensor '" + src.tensor() + "'"));
      s.SetSourcePlacement(src.tensor(), p);
    }
  }
  for (const proto::OpLayout& op : conf.ops()) {
    OFL_ASSIGN_OR_RETURN(NdSbpSignature sig, ParseSignature(op.op(), op.signature()));
    s.SetSignature(op.op(), sig);
    if (op.has_placement()) {
      OFL_ASSIGN_OR_RETURN(Placement p, PlacementFromConf(op.placement(), "op '" + op.op() + "'"));
      s.SetPlacement(op.op(), p);
    }
  }
  return s;
}

Maybe<Strategy> StrategyFromText(const std::map<std::string, std::string>& sources,
                                 const std::map<std::string, std::string>& signatures,
                                 const std::optional<Placement>& placement) {
  Strategy s = placement ? Strategy(*placement) : Strategy();
  for (const auto& [tensor, text] : sources) {
    OFL_ASSIGN_OR_RETURN(NdSbp sbp, ParseSbp(tensor, text));
    s.SetSourceSbp(tensor, sbp);
  }
  for (const auto& [op, text] : signatures) {
    OFL_ASSIGN_OR_RETURN(NdSbpSignature sig, ParseSignature(op, text));
    s.SetSignature(op, sig);
  }
  return s;
}

std::map<std::string, std::string> SourceTexts(const Strategy& strategy) {
  std::map<std::string, std::string> out;
  for (const auto& [tensor, sbp] : strategy.sources()) out[tensor] = sbp.ToString();
  return out;
}

std::map<std::string, std::string> SignatureTexts(const Strategy& strategy) {
  std::map<std::string, std::string> out;
  for (const auto& [op, sig] : strategy.signatures()) out[op] = sig.ToString();
  return out;
}

Maybe<Strategy> BindStrategy(const Strategy& strategy, const Placement& placement) {
  if (strategy.placement() == placement) return strategy;
  OFL_ENSURE(!Bound(strategy.placement()) || OnDefaultPlacement(strategy), "strategy: made for ",
             strategy.placement().ToString(),
             " with placements of its own (pipeline stages), cannot run on ", placement.ToString());
  Strategy bound(placement);
  for (const auto& [tensor, sbp] : strategy.sources()) bound.SetSourceSbp(tensor, sbp);
  for (const auto& [op, sig] : strategy.signatures()) bound.SetSignature(op, sig);
  return bound;
}

std::string DiffStrategyText(const Strategy& before, const Strategy& after) {
  std::ostringstream out;
  auto diff = [&out](const std::map<std::string, std::string>& a,
                     const std::map<std::string, std::string>& b) {
    std::set<std::string> names;
    for (const auto& [name, text] : a) names.insert(name);
    for (const auto& [name, text] : b) names.insert(name);
    for (const std::string& name : names) {
      auto x = a.find(name);
      auto y = b.find(name);
      const std::string from = x == a.end() ? "(none)" : x->second;
      const std::string to = y == b.end() ? "(none)" : y->second;
      if (from != to) out << name << ": " << from << " => " << to << "\n";
    }
  };
  diff(SourceTexts(before), SourceTexts(after));
  diff(SignatureTexts(before), SignatureTexts(after));
  return out.str();
}

Status SaveStrategyFile(const std::string& path, const proto::PlannedStrategyConf& file) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string text;
  auto status = google::protobuf::util::MessageToJsonString(file, &text, options);
  CHECK(status.ok()) << status.ToString();
  std::ofstream out(path);
  OFL_ENSURE(out.good(), "cannot open '", path, "' for writing");
  out << text;
  out.close();
  OFL_ENSURE(out.good(), "strategy file '", path, "': writing failed");
  return Status::OK();
}

Maybe<proto::PlannedStrategyConf> LoadStrategyFile(const std::string& path) {
  OFL_ASSIGN_OR_RETURN(std::string text, ReadStrategyText(path));
  const size_t first = text.find_first_not_of(" \t\r\n");
  OFL_ENSURE(first != std::string::npos && text[first] == '{', "strategy file '", path,
             "' is not a JSON object (a saved strategy is one: write it with "
             "nn.Graph.save_strategy or PlannedStrategy.save)");
  proto::PlannedStrategyConf file;
  auto status = google::protobuf::util::JsonStringToMessage(text, &file);
  if (status.ok() && file.has_strategy()) return file;
  proto::LegacyStrategyFile legacy;
  google::protobuf::util::JsonParseOptions lenient;
  lenient.ignore_unknown_fields = true;
  if (google::protobuf::util::JsonStringToMessage(text, &legacy, lenient).ok() &&
      !legacy.kind().empty()) {
    return FromLegacy(legacy, path);
  }
  return InvalidArgument("strategy file '", path, "' is not a saved strategy: ",
                         status.ok()
                             ? std::string("no strategy in it")
                             : std::string(status.message().data(), status.message().size()));
}

}  // namespace ofl
