#include "runtime/process_world.h"

#include <cstdlib>
#include <thread>

namespace ofl {

namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kPollSlice{100};

// An integer environment variable in [low, high]; `fallback` when unset.
Maybe<int64_t> IntFromEnv(const char* name, int64_t fallback, int64_t low, int64_t high) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  OFL_ENSURE(*end == '\0' && value >= low && value <= high, name, "='", text,
             "' is not an integer in ", low, "..", high);
  return static_cast<int64_t>(value);
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* text = std::getenv(name);
  return text == nullptr || *text == '\0' ? fallback : std::string(text);
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

std::string Text(const std::vector<char>& v) { return std::string(v.begin(), v.end()); }

}  // namespace

Maybe<WorldOptions> ProcessWorld::OptionsFromEnv() {
  WorldOptions o;
  OFL_ASSIGN_OR_RETURN(o.num_processes, IntFromEnv("WORLD_SIZE", 1, 1, 1 << 20));
  OFL_ASSIGN_OR_RETURN(o.process, IntFromEnv("RANK", 0, 0, o.num_processes - 1));
  OFL_ASSIGN_OR_RETURN(o.devices_per_process, IntFromEnv("OFL_DEVICES_PER_PROCESS", 1, 1, 4096));
  if (o.num_processes > 1) {
    OFL_ASSIGN_OR_RETURN(StoreAddress address, StoreAddressFromEnv());
    o.master_addr = address.host;
    o.master_port = address.port;
  }
  o.job_id = EnvOr("OFL_JOB_ID", StrCat("port", o.master_port));
  o.gloo.iface = EnvOr("OFL_IFACE", "");
  o.gloo.hostname = EnvOr("OFL_BIND_ADDR", IsLoopback(o.master_addr) ? "127.0.0.1" : "");
  return o;
}

Maybe<std::shared_ptr<ProcessWorld>> ProcessWorld::Create(const WorldOptions& options) {
  OFL_ENSURE(options.num_processes >= 1 && options.process >= 0 &&
                 options.process < options.num_processes,
             "world: process ", options.process, " of ", options.num_processes);
  OFL_ENSURE(options.devices_per_process >= 1, "world: devices_per_process=",
             options.devices_per_process, " must be >= 1");
  std::shared_ptr<ProcessWorld> w(new ProcessWorld(options));
  if (options.num_processes == 1) return w;
  if (options.process == 0) {
    // Listen where the others look for us; 0.0.0.0 when that address is not
    // one of this host's (e.g. a name that resolves elsewhere).
    auto server = TcpStoreServer::Start(options.master_addr, options.master_port);
    if (!server.ok() && !IsLoopback(options.master_addr)) {
      server = TcpStoreServer::Start("0.0.0.0", options.master_port);
    }
    OFL_RETURN_IF_ERROR(server.status());
    w->server_ = std::move(server).value();
  }
  OFL_ASSIGN_OR_RETURN(w->store_, TcpStore::Connect(options.master_addr, options.master_port,
                                                    options.timeout));
  OFL_ASSIGN_OR_RETURN(w->monitor_, TcpStore::Connect(options.master_addr, options.master_port,
                                                      options.timeout));
  const int64_t k = options.devices_per_process, first = options.process * k;
  const std::string ranks =
      k == 1 ? StrCat("rank ", first) : StrCat("ranks ", first, "..", first + k - 1);
  OFL_RETURN_IF_ERROR(w->monitor_->WatchConnection(
      w->Key("lost"), StrCat("lost process ", options.process, " (", ranks,
                             "): its connection to the store at ", w->store_->address(),
                             " closed (the process died)")));
  // Everyone is connected (and watched) before anyone goes on.
  OFL_RETURN_IF_ERROR(w->Barrier("joined"));
  return w;
}

Maybe<std::shared_ptr<ProcessWorld>> ProcessWorld::FromEnv() {
  static std::mutex mu;
  static std::shared_ptr<ProcessWorld> world;
  std::lock_guard<std::mutex> lock(mu);
  if (world == nullptr) {
    OFL_ASSIGN_OR_RETURN(WorldOptions options, OptionsFromEnv());
    OFL_ASSIGN_OR_RETURN(world, Create(options));
  }
  return world;
}

ProcessWorld::~ProcessWorld() { Shutdown(); }

void ProcessWorld::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_ || store_ == nullptr) return;
    shut_down_ = true;
  }
  (void)monitor_->Leave();
  (void)store_->Add(Key("left"), 1);
  if (server_ != nullptr) {  // the host stays until the others have left (bounded)
    const auto deadline = Clock::now() + options_.timeout;
    while (Clock::now() < deadline) {
      auto left = store_->Add(Key("left"), 0);
      if (!left.ok() || left.value() >= options_.num_processes) break;
      if (!CheckFailure().empty()) break;
      std::this_thread::sleep_for(milliseconds(20));
    }
  }
}

std::string ProcessWorld::Key(const std::string& name) const {
  return StrCat("ofl/", options_.job_id, "/", name);
}

int64_t ProcessWorld::NextSequence(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  return sequences_[what]++;
}

std::string ProcessWorld::NextScope(const std::string& owner) {
  const int64_t n = NextSequence(owner + "/op");
  if (n >= 2 && options_.process == 0 && store_ != nullptr) {
    (void)store_->DeletePrefix(Key(StrCat(owner, "/op", n - 2, "/")));
  }
  return StrCat(owner, "/op", n);
}

void ProcessWorld::Fail(const std::string& scope, const std::string& reason) {
  if (store_ == nullptr) return;
  (void)store_->SetIfAbsent(Key(scope + "/failure"),
                            std::vector<char>(reason.begin(), reason.end()));
}

std::string ProcessWorld::CheckFailure(const std::string& scope) {
  if (monitor_ == nullptr) return "";
  std::vector<std::string> keys = {Key("lost")};
  if (!scope.empty()) keys.push_back(Key(scope + "/failure"));
  for (const std::string& key : keys) {
    auto present = monitor_->Check({key});
    if (!present.ok()) {
      return StrCat("lost process 0 (the store it hosts at ", monitor_->address(),
                    " does not answer: ", present.status().message(), ")");
    }
    if (!present.value()) continue;
    auto value = monitor_->Get(key, milliseconds(1000));
    return value.ok() ? Text(value.value()) : value.status().message();
  }
  return "";
}

Status ProcessWorld::WaitOrFail(const std::vector<std::string>& keys, const std::string& scope,
                                const std::string& what) {
  if (store_ == nullptr) return Status::OK();
  const auto deadline = Clock::now() + options_.timeout;
  for (;;) {
    Status s = store_->Wait(keys, kPollSlice);
    if (s.ok()) return s;
    if (s.code() != StatusCode::kTimeout) return s;  // the store is gone
    const std::string failure = CheckFailure(scope);
    if (!failure.empty()) {
      return Status(StatusCode::kInternal, StrCat("process ", options_.process, ": ", what,
                                                  " stopped: ", failure));
    }
    if (Clock::now() >= deadline) {
      return Status(StatusCode::kTimeout,
                    StrCat("process ", options_.process, ": ", what, " timed out after ",
                           options_.timeout.count(), " ms: ", s.message()));
    }
  }
}

Maybe<std::vector<std::vector<char>>> ProcessWorld::AllGather(const std::string& name,
                                                              const std::vector<char>& mine,
                                                              const std::string& scope) {
  if (store_ == nullptr) return std::vector<std::vector<char>>{mine};
  OFL_RETURN_IF_ERROR(store_->Set(Key(StrCat(name, "/", options_.process)), mine));
  std::vector<std::string> keys;
  for (int64_t p = 0; p < options_.num_processes; ++p) keys.push_back(Key(StrCat(name, "/", p)));
  OFL_RETURN_IF_ERROR(WaitOrFail(keys, scope, "all-gather '" + name + "'"));
  std::vector<std::vector<char>> out;
  for (const std::string& key : keys) {
    OFL_ASSIGN_OR_RETURN(std::vector<char> v, store_->Get(key, options_.timeout));
    out.push_back(std::move(v));
  }
  return out;
}

Status ProcessWorld::Barrier(const std::string& name, const std::string& scope) {
  return AllGather("barrier/" + name, {}, scope).status();
}

}  // namespace ofl
