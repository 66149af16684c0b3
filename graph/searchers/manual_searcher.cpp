// The "manual" searcher (manual_searcher.h): the user's strategy as a choice
// over the cost model. Errors: a layout that is no candidate, named.
#include "graph/searchers/manual_searcher.h"

#include <memory>

#include "graph/searcher.h"

namespace ofl {

namespace {

class ManualSearcher : public Searcher {
 public:
  ManualSearcher()
      : Searcher("manual",
                 "the user's strategy as given, or deduced from the pinned layouts; nothing "
                 "searched") {}

  Maybe<std::vector<int>> Search(const SearchInput& input) const override {
    Strategy manual = input.options.searcher_options.Get<ManualSearcherOptions>().strategy;
    if (manual.signatures().empty() && manual.sources().empty()) {
      OFL_ASSIGN_OR_RETURN(manual, DeduceStrategy(input.graph, input.model.placements().placement(),
                                                  input.options.pinned));
    }
    return input.model.ChoiceOf(manual);
  }
};

}  // namespace

OFL_REGISTER_SEARCHER(90, std::make_shared<ManualSearcher>());

}  // namespace ofl
