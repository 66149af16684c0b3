// The source presets as searchers: "data_parallel_sources",
// "megatron_sources", "2d_sources", "vgg_sources" (graph/expert_presets.h:
// only the sources by the expert's rule, pins over them). Every op's
// signature is then chosen by autoddl's descent on the cost graph restricted
// to those sources, under autoddl's options (AutoddlSearcherOptions::descent,
// without autoddl's preset and per-axis starts). Stateless.
#include <map>
#include <memory>
#include <string>

#include "graph/expert_presets.h"
#include "graph/searchers/autoddl_searcher.h"

namespace ofl {

namespace {

class SourcePresetSearcher : public Searcher {
 public:
  using Searcher::Searcher;

  Maybe<std::vector<int>> Search(const SearchInput& input) const override {
    OFL_ASSIGN_OR_RETURN(
        auto fixed, ExpertPresetSources(name(), input.graph, input.model.placements().placement()));
    // Optimizer state follows its parameter (which a pin may override).
    for (const CostNodeInfo& n : input.model.nodes()) {
      for (const auto& [state, follows] : n.states) fixed.erase(state);
    }
    OFL_ASSIGN_OR_RETURN(Restricted r, RestrictToPins(input, std::move(fixed)));
    return DescendOn(r, input.options.searcher_options.Get<AutoddlSearcherOptions>().descent,
                     input.stats);
  }
};

template <typename... Args>
std::shared_ptr<const Searcher> Preset(Args&&... args) {
  return std::make_shared<SourcePresetSearcher>(std::forward<Args>(args)...);
}

}  // namespace

OFL_REGISTER_SEARCHER(20, Preset("data_parallel_sources",
                                 "data_parallel's sources, every op chosen by cost"));
OFL_REGISTER_SEARCHER(21, Preset("megatron_sources",
                                 "megatron's sources (Transformer weights), every op chosen "
                                 "by cost"));
OFL_REGISTER_SEARCHER(22, Preset("2d_sources", "2d's sources, every op chosen by cost"));
OFL_REGISTER_SEARCHER(23, Preset("vgg_sources", "vgg's sources, every op chosen by cost"));

}  // namespace ofl
