#include "ops/sbp_rules.h"

#include <set>

namespace ofl {

namespace {
void AddPartialSignatures(PartialRule rule, int num_inputs, int num_outputs,
                          std::vector<SbpSignature>* out) {
  std::vector<Sbp> partial_outputs(num_outputs, Sbp::PartialSum());
  if (rule == PartialRule::kAllPartial) {
    out->push_back({std::vector<Sbp>(num_inputs, Sbp::PartialSum()), partial_outputs});
  } else if (rule == PartialRule::kOnePartial) {
    for (int p = 0; p < num_inputs; ++p) {
      std::vector<Sbp> ins(num_inputs, Sbp::Broadcast());
      ins[p] = Sbp::PartialSum();
      out->push_back({ins, partial_outputs});
    }
  }
}
}  // namespace

SbpFn Elementwise(PartialRule rule) {
  return [rule](const OpContext& ctx) {
    std::vector<SbpSignature> sigs;
    int n = ctx.num_inputs();
    int64_t out_ndim = 0;
    for (const TensorDesc& d : ctx.inputs) out_ndim = std::max(out_ndim, d.shape.ndim());
    // Outputs count: elementwise ops have one output unless told otherwise.
    const int num_outputs = 1;
    for (int64_t a = 0; a < out_ndim; ++a) {
      SbpSignature sig;
      bool any_split = false;
      for (const TensorDesc& d : ctx.inputs) {
        int64_t local = a - (out_ndim - d.shape.ndim());
        if (local >= 0 && d.shape[local] != 1) {
          sig.inputs.push_back(Sbp::Split(local));
          any_split = true;
        } else {
          sig.inputs.push_back(Sbp::Broadcast());
        }
      }
      if (!any_split) continue;
      sig.outputs.assign(num_outputs, Sbp::Split(a));
      sigs.push_back(sig);
    }
    sigs.push_back(
        {std::vector<Sbp>(n, Sbp::Broadcast()), std::vector<Sbp>(num_outputs, Sbp::Broadcast())});
    AddPartialSignatures(rule, n, num_outputs, &sigs);
    return sigs;
  };
}

std::vector<SbpSignature> EinsumSignatures(const std::string& spec) {
  size_t arrow = spec.find("->");
  CHECK(arrow != std::string::npos) << "einsum spec without '->': " << spec;
  std::vector<std::string> inputs;
  std::string lhs = spec.substr(0, arrow);
  std::string output = spec.substr(arrow + 2);
  size_t start = 0;
  for (size_t i = 0; i <= lhs.size(); ++i) {
    if (i == lhs.size() || lhs[i] == ',') {
      inputs.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  }
  std::set<char> letters;
  for (const std::string& in : inputs) letters.insert(in.begin(), in.end());
  std::vector<SbpSignature> sigs;
  for (char c : letters) {
    SbpSignature sig;
    for (const std::string& in : inputs) {
      size_t pos = in.find(c);
      sig.inputs.push_back(pos == std::string::npos ? Sbp::Broadcast()
                                                    : Sbp::Split(static_cast<int64_t>(pos)));
    }
    size_t out_pos = output.find(c);
    sig.outputs.push_back(out_pos == std::string::npos ? Sbp::PartialSum()
                                                       : Sbp::Split(static_cast<int64_t>(out_pos)));
    sigs.push_back(sig);
  }
  int n = static_cast<int>(inputs.size());
  sigs.push_back({std::vector<Sbp>(n, Sbp::Broadcast()), {Sbp::Broadcast()}});
  AddPartialSignatures(PartialRule::kOnePartial, n, 1, &sigs);
  return sigs;
}

SbpFn Einsum(const std::string& spec) {
  std::vector<SbpSignature> sigs = EinsumSignatures(spec);
  return [sigs](const OpContext&) { return sigs; };
}

SbpFn BroadcastOnly() {
  return [](const OpContext& ctx) {
    return std::vector<SbpSignature>{
        {std::vector<Sbp>(ctx.num_inputs(), Sbp::Broadcast()), {Sbp::Broadcast()}}};
  };
}

}  // namespace ofl
