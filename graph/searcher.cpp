// The searcher registry (searcher.h).
#include "graph/searcher.h"

#include <glog/logging.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

namespace ofl {

namespace {

struct Entry {
  std::shared_ptr<const Searcher> searcher;
  int order = 0;
  bool built_in = false;
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, Entry> entries;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry();  // never destroyed: used until exit
  return *registry;
}

// Names in listing order; the caller holds the mutex.
std::vector<const Entry*> Listed(const Registry& r) {
  std::vector<const Entry*> out;
  for (const auto& [name, entry] : r.entries) out.push_back(&entry);
  std::stable_sort(out.begin(), out.end(),
                   [](const Entry* a, const Entry* b) { return a->order < b->order; });
  return out;
}

Status Add(std::shared_ptr<const Searcher> searcher, int order, bool built_in) {
  CHECK(searcher != nullptr);
  OFL_ENSURE(!searcher->name().empty(), "register searcher: the name is empty");
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const std::string name = searcher->name();
  OFL_ENSURE(r.entries.count(name) == 0, "register searcher: '", name, "' is already registered");
  r.entries.emplace(name, Entry{std::move(searcher), order, built_in});
  return Status::OK();
}

}  // namespace

bool SearcherRegistry::RegisterStatic(std::shared_ptr<const Searcher> searcher, int order) {
  const Status s = Add(std::move(searcher), order, /*built_in=*/true);
  CHECK(s.ok()) << s.message();
  return true;
}

Status SearcherRegistry::Register(std::shared_ptr<const Searcher> searcher, int order) {
  return Add(std::move(searcher), order, /*built_in=*/false);
}

Status SearcherRegistry::Unregister(const std::string& name) {
  std::shared_ptr<const Searcher> removed;  // released after the lock
  Registry& r = TheRegistry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.entries.find(name);
    OFL_ENSURE(it != r.entries.end(), "unregister searcher: '", name, "' is not registered");
    OFL_ENSURE(!it->second.built_in, "unregister searcher: '", name,
               "' is built in; only searchers registered at run time can be removed");
    removed = std::move(it->second.searcher);
    r.entries.erase(it);
  }
  return Status::OK();
}

Maybe<std::shared_ptr<const Searcher>> SearcherRegistry::Find(const std::string& name) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(name);
  if (it != r.entries.end()) return it->second.searcher;
  std::ostringstream valid;
  for (const Entry* e : Listed(r)) {
    valid << (valid.tellp() > 0 ? ", " : "") << e->searcher->name();
  }
  return InvalidArgument("plan: unknown searcher '", name, "'; valid: ", valid.str());
}

std::vector<SearcherInfo> SearcherRegistry::List() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<SearcherInfo> out;
  for (const Entry* e : Listed(r)) out.push_back({e->searcher->name(), e->searcher->description()});
  return out;
}

Maybe<std::vector<int>> RunSearcher(const SearchInput& input) {
  OFL_ASSIGN_OR_RETURN(std::shared_ptr<const Searcher> searcher,
                       SearcherRegistry::Find(input.options.searcher));
  return searcher->Search(input);
}

}  // namespace ofl
