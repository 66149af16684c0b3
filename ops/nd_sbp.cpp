#include "ops/nd_sbp.h"

namespace ofl {

namespace {

std::string Join(const std::vector<NdSbp>& list) {
  std::string s;
  for (size_t i = 0; i < list.size(); ++i) s += (i ? ", " : "") + list[i].ToString();
  return s;
}

// "(S(0), B), (B, S(1))" -> its NdSbps; "" -> none. `text` is quoted in errors.
Maybe<std::vector<NdSbp>> ParseList(const std::string& side, const std::string& text) {
  std::vector<NdSbp> out;
  const std::string body = TrimSpace(side);
  if (body.empty()) return out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    if (i == body.size() || (body[i] == ',' && depth == 0)) {
      auto item = NdSbp::Parse(body.substr(start, i - start));
      if (!item.ok()) {
        return InvalidArgument("in SBP signature '", text, "': ", item.status().message());
      }
      out.push_back(item.value());
      start = i + 1;
    } else if (body[i] == '(') {
      ++depth;
    } else if (body[i] == ')') {
      --depth;
      OFL_ENSURE(depth >= 0, "in SBP signature '", text, "': unbalanced ')'");
    }
  }
  OFL_ENSURE(depth == 0, "in SBP signature '", text, "': unbalanced '('");
  return out;
}

}  // namespace

int64_t NdSbpSignature::num_axes() const {
  if (!inputs.empty()) return inputs[0].size();
  if (!outputs.empty()) return outputs[0].size();
  return 0;
}

SbpSignature NdSbpSignature::Axis(int64_t axis) const {
  CHECK(axis >= 0 && axis < num_axes()) << "hierarchy axis " << axis << " of " << ToString();
  SbpSignature one;
  for (const NdSbp& s : inputs) one.inputs.push_back(s[axis]);
  for (const NdSbp& s : outputs) one.outputs.push_back(s[axis]);
  return one;
}

std::string NdSbpSignature::ToString() const { return Join(inputs) + " -> " + Join(outputs); }

Maybe<NdSbpSignature> NdSbpSignature::Parse(const std::string& text) {
  const size_t arrow = text.find("->");
  OFL_ENSURE(arrow != std::string::npos && text.find("->", arrow + 2) == std::string::npos,
             "SBP signature '", text, "' needs exactly one '->'");
  NdSbpSignature sig;
  OFL_ASSIGN_OR_RETURN(sig.inputs, ParseList(text.substr(0, arrow), text));
  OFL_ASSIGN_OR_RETURN(sig.outputs, ParseList(text.substr(arrow + 2), text));
  const int64_t axes = sig.num_axes();
  OFL_ENSURE(axes > 0, "SBP signature '", text, "' names no tensor");
  for (const auto* list : {&sig.inputs, &sig.outputs}) {
    for (const NdSbp& s : *list) {
      OFL_ENSURE(s.size() == axes, "in SBP signature '", text, "': ", s, " has ", s.size(),
                 " axes, the first NdSbp has ", axes);
    }
  }
  return sig;
}

std::vector<NdSbpSignature> ExpandSbpSignatures(const std::vector<SbpSignature>& one_d,
                                                int64_t hierarchy_ndim) {
  CHECK_GE(hierarchy_ndim, 1) << "a hierarchy has at least one axis";
  std::vector<SbpSignature> unique;
  for (const SbpSignature& s : one_d) {
    bool seen = false;
    for (const SbpSignature& u : unique) seen = seen || u == s;
    if (!seen) unique.push_back(s);
  }
  std::vector<NdSbpSignature> out;
  if (unique.empty()) return out;
  const size_t n = unique.size();
  // choice[a] = the 1-D signature of hierarchy axis a; counts like an odometer
  // whose last digit (the innermost axis) turns fastest.
  std::vector<size_t> choice(hierarchy_ndim, 0);
  while (true) {
    NdSbpSignature sig;
    const SbpSignature& first = unique[choice[0]];
    for (size_t t = 0; t < first.inputs.size(); ++t) {
      std::vector<Sbp> axes;
      for (size_t c : choice) axes.push_back(unique[c].inputs.at(t));
      sig.inputs.emplace_back(axes);
    }
    for (size_t t = 0; t < first.outputs.size(); ++t) {
      std::vector<Sbp> axes;
      for (size_t c : choice) axes.push_back(unique[c].outputs.at(t));
      sig.outputs.emplace_back(axes);
    }
    out.push_back(std::move(sig));
    int64_t a = hierarchy_ndim - 1;
    while (a >= 0 && ++choice[a] == n) choice[a--] = 0;
    if (a < 0) break;
  }
  return out;
}

Maybe<std::vector<NdSbpSignature>> NdSbpSignatures(const OpDef& def, const OpContext& ctx,
                                                   int64_t hierarchy_ndim) {
  OFL_ENSURE(hierarchy_ndim >= 1, ctx.where(), ": a hierarchy needs at least one axis, got ",
             hierarchy_ndim);
  const std::vector<SbpSignature> one_d = def.SbpSignatures(ctx);
  for (const SbpSignature& s : one_d) {
    CHECK(s.inputs.size() == one_d[0].inputs.size() && s.outputs.size() == one_d[0].outputs.size())
        << def.type() << ": 1-D signatures of different arity: " << one_d[0].ToString() << " and "
        << s.ToString();
  }
  return ExpandSbpSignatures(one_d, hierarchy_ndim);
}

Maybe<std::vector<NdSbpSignature>> NdSbpSignatures(const OpDef& def, OpContext ctx,
                                                   const std::vector<int64_t>& hierarchy) {
  for (int64_t size : hierarchy) {
    OFL_ENSURE(size >= 1, ctx.where(), ": hierarchy axes must be >= 1, got ", size);
  }
  ctx.hierarchy = hierarchy;
  return NdSbpSignatures(def, ctx, static_cast<int64_t>(hierarchy.size()));
}

}  // namespace ofl
