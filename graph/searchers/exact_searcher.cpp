// The "exact" searcher (exact_searcher.h).
#include "graph/searchers/exact_searcher.h"

#include <chrono>
#include <string>

#include "graph/searchers/restricted.h"

namespace ofl {

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Optimality OptimalityOf(const ExactResult& e, double cap_seconds, double seconds) {
  Optimality o;
  o.cap_seconds = cap_seconds;
  o.seconds = seconds;
  o.proved = e.proved_optimal;
  o.bound_seconds = e.lower_bound;
  o.bound = e.bound;
  o.best_seconds = e.solution.total_seconds;
  return o;
}

class ExactSearcher : public Searcher {
 public:
  ExactSearcher()
      : Searcher("exact",
                 "the proven optimum where elimination or branch and bound allow it, else "
                 "the best found from autoddl's answer, with a lower bound") {}

  Maybe<std::vector<int>> Search(const SearchInput& input) const override {
    const auto& options = input.options.searcher_options.Get<ExactSearcherOptions>();
    OFL_ASSIGN_OR_RETURN(Restricted r, RestrictToPins(input, {}));
    ExactOptions exact = options.exact;
    if (options.starts_from_autoddl) {
      // Asked for only when exact has not proved its answer by elimination:
      // the whole autoddl searcher's answer, so an unproved exact is never
      // worse than autoddl.
      exact.start = [&]() -> Maybe<std::vector<int>> {
        PlanOptions o = input.options;
        o.searcher = "autoddl";
        PlanStats ignored;
        OFL_ASSIGN_OR_RETURN(std::vector<int> c,
                             RunSearcher({input.graph, input.model, o, &ignored}));
        return ToRestricted(r, c);  // same pins: nothing is cut
      };
    }
    const auto started = std::chrono::steady_clock::now();
    OFL_ASSIGN_OR_RETURN(ExactResult e, ExactSearch(r.graph(), exact));
    PlanStats* stats = input.stats;
    stats->optimality = OptimalityOf(e, exact.time_budget_seconds, SecondsSince(started));
    stats->exact_proved = e.proved_optimal;
    stats->lower_bound = e.lower_bound;
    stats->exact_start_seconds = e.start_seconds;
    stats->pruned = e.num_pruned;
    stats->note = e.note;
    if (e.answer_is_start) {
      stats->note += std::string(stats->note.empty() ? "" : "; ") +
                     "the answer is autoddl's, which branch and bound did not improve";
    }
    return ToOriginal(r, e.solution.choice);
  }
};

}  // namespace

Maybe<Optimality> MeasureOptimality(const SearchInput& input, const std::vector<int>& choice,
                                    double cap_seconds) {
  const auto started = std::chrono::steady_clock::now();
  OFL_ASSIGN_OR_RETURN(auto allowed,
                       AllowedCandidates(input.graph, input.model, input.options.pinned));
  OFL_ASSIGN_OR_RETURN(Restricted r, Restrict(input.model.graph(), allowed));
  ExactOptions exact = input.options.searcher_options.Get<ExactSearcherOptions>().exact;
  exact.time_budget_seconds = cap_seconds;
  std::vector<int> start = ToRestricted(r, choice);  // empty (none) if it breaks a pin
  exact.start = [start]() -> Maybe<std::vector<int>> { return start; };
  OFL_ASSIGN_OR_RETURN(ExactResult e, ExactSearch(r.graph(), exact));
  return OptimalityOf(e, exact.time_budget_seconds, SecondsSince(started));
}

OFL_REGISTER_SEARCHER(1, std::make_shared<ExactSearcher>());

}  // namespace ofl
