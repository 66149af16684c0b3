// Searcher: one way of choosing a candidate per cost node (DESIGN.md section
// 6), behind one interface, and the registry that names them, like ops'
// (ops/op_registry.h). A searcher is one file under graph/searchers/ that
// registers itself with OFL_REGISTER_SEARCHER and declares its options struct
// (read with options.searcher_options.Get<T>()); a binding may add and remove
// searchers at run time (api/searchers.h). The registry is guarded by a
// mutex; a searcher found stays alive while it runs. Searchers are const and
// stateless: Search may run on many threads at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/auto_parallel.h"

namespace ofl {

// What a searcher searches: the cost model of `graph` under `options`
// (options.searcher is the searcher's own name; options.pinned are NdSbps
// every built-in searcher keeps), and where it reports (pruned candidates,
// starts, notes, optimality; PlanWithModel fills the rest of the stats).
struct SearchInput {
  const OpGraph& graph;
  const CostModel& model;
  const PlanOptions& options;
  PlanStats* stats;
};

class Searcher {
 public:
  Searcher(std::string name, std::string description)
      : name_(std::move(name)), description_(std::move(description)) {}
  virtual ~Searcher() = default;

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }  // one line

  // One candidate index per node of input.model.graph(). Errors: the
  // searcher does not apply (saying why), a bad pin, an infeasible memory
  // limit, a bad option.
  virtual Maybe<std::vector<int>> Search(const SearchInput& input) const = 0;

 private:
  std::string name_;
  std::string description_;
};

struct SearcherInfo {
  std::string name;
  std::string description;
};

class SearcherRegistry {
 public:
  // Listed by `order`, then by name; built-in searchers use 0-99.
  static constexpr int kUserOrder = 1000;
  // A searcher whose name is free: static-initialisation time
  // (OFL_REGISTER_SEARCHER: a taken name is a bug, CHECKed), or at run time
  // (an error naming the taken name).
  static bool RegisterStatic(std::shared_ptr<const Searcher> searcher, int order);
  static Status Register(std::shared_ptr<const Searcher> searcher, int order = kUserOrder);
  // Removes a searcher registered at run time; built-in ones stay (an error).
  static Status Unregister(const std::string& name);
  // Errors: an unknown name, listing the registered ones.
  static Maybe<std::shared_ptr<const Searcher>> Find(const std::string& name);
  static std::vector<SearcherInfo> List();  // in listing order
};

// Runs the registered searcher input.options.searcher names.
Maybe<std::vector<int>> RunSearcher(const SearchInput& input);

}  // namespace ofl

// Registers a searcher (an expression giving a std::shared_ptr<const
// Searcher>) during static initialisation, listed at `order`.
#define OFL_REGISTER_SEARCHER(order, searcher)                                             \
  static const bool OFL_CONCAT(ofl_searcher_registration_, __COUNTER__) [[maybe_unused]] = \
      ::ofl::SearcherRegistry::RegisterStatic(searcher, order)
