// The rule-based expert presets as searchers: "data_parallel", "megatron",
// "2d", "zero", "vgg" (graph/expert_presets.h: every source's and op's layout
// by the expert's rule, nothing chosen by cost). Errors say why a preset does
// not apply, or that it does not fit the memory limit. Stateless.
#include <memory>
#include <sstream>
#include <string>

#include "graph/expert_presets.h"
#include "graph/searcher.h"

namespace ofl {

namespace {

class RulePresetSearcher : public Searcher {
 public:
  using Searcher::Searcher;

  // The preset's strategy, nothing searched; its notes (ops that could not
  // follow the rule) in stats->note. Pins replace the preset's layouts.
  Maybe<std::vector<int>> Search(const SearchInput& input) const override {
    const CostModel& model = input.model;
    std::map<std::string, int> node_of;  // op or folded update -> its cost node
    for (size_t u = 0; u < model.nodes().size(); ++u) {
      const CostNodeInfo& n = model.nodes()[u];
      if (n.kind == CostNodeKind::kOp) node_of[n.name] = static_cast<int>(u);
      if (!n.update_op.empty()) node_of[n.update_op] = static_cast<int>(u);
    }
    auto signatures_of = [&](const OpNode& op) -> const std::vector<NdSbpSignature>* {
      auto it = node_of.find(op.name);
      return it == node_of.end() ? nullptr : &model.nodes()[it->second].signatures;
    };
    OFL_ASSIGN_OR_RETURN(ExpertPresetPlan plan,
                         ExpertPresetStrategy(name(), input.graph, model.placements(),
                                              input.options.pinned, signatures_of));
    OFL_ASSIGN_OR_RETURN(std::vector<int> choice, model.ChoiceOf(plan.strategy));
    const int64_t need = model.graph().MemoryBytes(choice);
    if (need > model.graph().memory_limit()) {
      return InvalidArgument("plan ", name(), ": the preset needs ", FormatBytes(need),
                             " per device, above the limit of ",
                             FormatBytes(model.graph().memory_limit()));
    }
    input.stats->note = Notes(plan.notes);
    return choice;
  }

 private:
  std::string Notes(const std::vector<std::string>& notes) const {
    constexpr size_t kShown = 8;
    std::ostringstream note;
    if (!notes.empty()) {
      note << "expert preset " << name() << ": " << notes.size()
           << " op(s) could not follow the rule:";
    }
    for (size_t i = 0; i < notes.size() && i < kShown; ++i) note << "\n  " << notes[i];
    if (notes.size() > kShown) note << "\n  ... and " << notes.size() - kShown << " more";
    return note.str();
  }
};

template <typename... Args>
std::shared_ptr<const Searcher> Preset(Args&&... args) {
  return std::make_shared<RulePresetSearcher>(std::forward<Args>(args)...);
}

}  // namespace

OFL_REGISTER_SEARCHER(10, Preset("data_parallel",
                                 "expert preset: inputs split on the batch over every axis, "
                                 "weights replicated"));
OFL_REGISTER_SEARCHER(11, Preset("megatron",
                                 "expert preset: Megatron tensor parallelism on every axis "
                                 "(column then row parallel), inputs replicated"));
OFL_REGISTER_SEARCHER(12, Preset("2d",
                                 "expert preset: data parallel on the outer mesh axis, "
                                 "megatron on the inner"));
OFL_REGISTER_SEARCHER(13, Preset("zero",
                                 "expert preset: data parallel with weights, gradients and "
                                 "optimizer state sharded (ZeRO stage 2)"));
OFL_REGISTER_SEARCHER(14, Preset("vgg",
                                 "expert preset: convolutions data parallel, classifier "
                                 "weights split on their output features"));

}  // namespace ofl
