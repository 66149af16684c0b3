// Strategy as data: the conversions between graph/'s Strategy and its
// protobuf form (core/proto/strategy.proto), strategy files (protobuf JSON,
// written and read here; the older JSON form is still read), a strategy
// written by hand (layouts as text, parsed once here), binding a strategy to
// the placement a session runs on, and a line diff of two strategies.
// Nothing here knows a graph: validation against one is the lowering's
// (Strategy::Validate, once). Pure functions; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "graph/strategy.h"
#include "oneflow_lite/core/proto/strategy.pb.h"

namespace ofl {

proto::PlacementConf PlacementToConf(const Placement& placement);
// Errors: an unknown device type, repeated ranks, a hierarchy that does not
// hold the ranks; `what` names the place in the file.
Maybe<Placement> PlacementFromConf(const proto::PlacementConf& conf, const std::string& what);

// An unbound strategy (no placement: Placement{}) writes none.
proto::StrategyConf StrategyToConf(const Strategy& strategy);
// Layouts parsed; errors name the tensor or the op and the text.
Maybe<Strategy> StrategyFromConf(const proto::StrategyConf& conf);

// A strategy written by hand: tensor -> NdSbp text, op -> signature text,
// on `placement` (nullopt: unbound, the session's).
Maybe<Strategy> StrategyFromText(const std::map<std::string, std::string>& sources,
                                 const std::map<std::string, std::string>& signatures,
                                 const std::optional<Placement>& placement = std::nullopt);
// source tensor -> NdSbp text, op -> signature text.
std::map<std::string, std::string> SourceTexts(const Strategy& strategy);
std::map<std::string, std::string> SignatureTexts(const Strategy& strategy);

// `strategy` on `placement`: an unbound one, or one whose every op and
// source lies on its default placement, takes `placement` as its default
// (the layouts are the same; validation then checks them against it).
// Errors: a strategy with placements of its own (pipeline stages) made for
// another default placement, naming both.
Maybe<Strategy> BindStrategy(const Strategy& strategy, const Placement& placement);

// One line per source and op whose layout differs ("name: before => after",
// "(none)" where one has none); empty when the layouts are equal.
std::string DiffStrategyText(const Strategy& before, const Strategy& after);

// Strategy files. Save writes protobuf JSON (entries in name order). Load
// reads that, or the older form {"kind": "manual", "sources", "signatures",
// ...} (kind manual only: other kinds described a session, not a strategy).
// Errors name the file and what is wrong with it.
Status SaveStrategyFile(const std::string& path, const proto::PlannedStrategyConf& file);
Maybe<proto::PlannedStrategyConf> LoadStrategyFile(const std::string& path);

}  // namespace ofl
