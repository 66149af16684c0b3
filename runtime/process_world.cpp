#include "runtime/process_world.h"

#include <unistd.h>

#include <algorithm>
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

// A number of seconds in [low, 86400] from the environment, as milliseconds.
Maybe<milliseconds> MillisecondsFromEnv(const char* name, milliseconds fallback, double low,
                                        const char* meaning) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  OFL_ENSURE(*end == '\0' && seconds >= low && seconds <= 86400, name, "='", text,
             "' is not a number of seconds in ", low, "..86400 (", meaning, ")");
  return milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* text = std::getenv(name);
  return text == nullptr || *text == '\0' ? fallback : std::string(text);
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

std::string Text(const std::vector<char>& v) { return std::string(v.begin(), v.end()); }
std::vector<char> Bytes(const std::string& s) { return std::vector<char>(s.begin(), s.end()); }

std::string HostName() {
  char name[256] = {};
  return ::gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string("?");
}

std::string JoinText(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

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
  OFL_ASSIGN_OR_RETURN(o.heartbeat, MillisecondsFromEnv("OFL_HEARTBEAT_TIMEOUT_S", o.heartbeat, 0,
                                                        "0: no heartbeat"));
  OFL_ASSIGN_OR_RETURN(o.timeout, MillisecondsFromEnv("OFL_WORLD_TIMEOUT_S", o.timeout, 0.001,
                                                      "joining and store collectives"));
  o.gloo.iface = EnvOr("OFL_IFACE", "");
  o.gloo.hostname = EnvOr("OFL_BIND_ADDR", IsLoopback(o.master_addr) ? "127.0.0.1" : "");
  return o;
}

Maybe<std::shared_ptr<ProcessWorld>> ProcessWorld::Create(const WorldOptions& options) {
  OFL_ENSURE(
      options.num_processes >= 1 && options.process >= 0 && options.process < options.num_processes,
      "world: process ", options.process, " of ", options.num_processes);
  OFL_ENSURE(options.devices_per_process >= 1,
             "world: devices_per_process=", options.devices_per_process, " must be >= 1");
  OFL_ENSURE(options.heartbeat.count() >= 0, "world: heartbeat=", options.heartbeat.count(),
             " ms must be >= 0 (0: none)");
  std::shared_ptr<ProcessWorld> w(new ProcessWorld(options));
  if (options.num_processes == 1) return w;
  const std::string where = StrCat(options.master_addr, ":", options.master_port);
  if (options.process == 0) {
    // Listen where the others look for us; 0.0.0.0 when that address is not
    // one of this host's (e.g. a name that resolves elsewhere).
    auto server = TcpStoreServer::Start(options.master_addr, options.master_port);
    if (!server.ok() && !IsLoopback(options.master_addr)) {
      server = TcpStoreServer::Start("0.0.0.0", options.master_port);
    }
    if (!server.ok()) {
      return Status(server.status().code(),
                    StrCat("process 0 of job '", options.job_id, "': ", server.status().message(),
                           " (another job's store may use MASTER_PORT=", options.master_port,
                           ": give each job its own)"));
    }
    w->server_ = std::move(server).value();
  }
  OFL_ASSIGN_OR_RETURN(
      w->store_, TcpStore::Connect(options.master_addr, options.master_port, options.timeout));
  OFL_ASSIGN_OR_RETURN(
      w->monitor_, TcpStore::Connect(options.master_addr, options.master_port, options.timeout));
  OFL_RETURN_IF_ERROR(w->CheckStoreJob());
  OFL_RETURN_IF_ERROR(w->Claim());
  Status joined = w->Join();
  if (!joined.ok()) {  // the others learn of it now, not at their own timeout
    (void)w->store_->SetIfAbsent(w->Key("lost"), Bytes(joined.message()));
    return joined;
  }
  return w;
}

Status ProcessWorld::CheckStoreJob() {
  const std::string key = "ofl/store-job";  // outside every job's keys: whose store this is
  if (server_ != nullptr) OFL_RETURN_IF_ERROR(store_->Set(key, Bytes(options_.job_id)));
  auto job = store_->Get(key, options_.timeout);
  OFL_RETURN_IF_ERROR(job.status());
  const std::string owner = Text(job.value());
  OFL_ENSURE(owner == options_.job_id, "process ", options_.process, " of job '", options_.job_id,
             "': the store at ", store_->address(), " belongs to job '", owner,
             "' (another job's process 0 hosts it on MASTER_PORT=", options_.master_port,
             "): give each job its own MASTER_PORT");
  return Status::OK();
}

Status ProcessWorld::Claim() {
  const std::string me = StrCat("pid ", ::getpid(), " on ", HostName());
  OFL_ASSIGN_OR_RETURN(bool mine,
                       store_->SetIfAbsent(Key(StrCat("member/", options_.process)), Bytes(me)));
  if (mine) return Status::OK();
  auto other = store_->Get(Key(StrCat("member/", options_.process)), options_.timeout);
  const std::string reason =
      StrCat("two processes claim to be process ", options_.process, " of job '", options_.job_id,
             "' at the store ", store_->address(), " (", other.ok() ? Text(other.value()) : "?",
             " and ", me,
             "): two jobs share MASTER_ADDR:MASTER_PORT and the job id; give each job its own "
             "MASTER_PORT or OFL_JOB_ID");
  // A job still assembling cannot tell its own processes from the other
  // job's: it stops too. A running job is left alone.
  OFL_ASSIGN_OR_RETURN(bool started, store_->Check({Key("started")}));
  if (!started) (void)store_->SetIfAbsent(Key("lost"), Bytes(reason));
  return InvalidArgument(reason);
}

Status ProcessWorld::Join() {
  const WorldOptions& o = options_;
  const int64_t k = o.devices_per_process, first = o.process * k;
  const std::string ranks =
      k == 1 ? StrCat("rank ", first) : StrCat("ranks ", first, "..", first + k - 1);
  const std::string lost = StrCat("lost process ", o.process, " (", ranks, "): ");
  if (o.heartbeat.count() > 0) monitor_->set_reply_slack(o.heartbeat);
  OFL_RETURN_IF_ERROR(monitor_->WatchConnection(
      Key("lost"),
      StrCat(lost, "its connection to the store at ", store_->address(),
             " closed (the process died)"),
      o.heartbeat,
      StrCat(lost, "no heartbeat for ", o.heartbeat.count(),
             " ms (the process is stopped or hung, e.g. SIGSTOP or a debugger)")));
  if (o.heartbeat.count() > 0) {
    beating_ = true;
    heart_ = std::thread([this] { Beat(); });
  }
  // Everyone is connected (and watched) before anyone goes on.
  Status s = Barrier("joined");
  if (s.code() == StatusCode::kTimeout) {
    std::vector<std::string> absent;
    for (int64_t p = 0; p < o.num_processes; ++p) {
      auto here = store_->Check({Key(StrCat("member/", p))});
      if (here.ok() && !here.value()) absent.push_back(std::to_string(p));
    }
    return Status(
        StatusCode::kTimeout,
        StrCat("process ", o.process, " of job '", o.job_id, "': process(es) ",
               absent.empty() ? "?" : JoinText(absent, ", "), " of ", o.num_processes,
               " did not join the store at ", store_->address(), " within ", o.timeout.count(),
               " ms (did they start, with the same MASTER_ADDR, "
               "MASTER_PORT, WORLD_SIZE and OFL_JOB_ID?)"));
  }
  OFL_RETURN_IF_ERROR(s);
  joined_ = true;
  if (o.process == 0) OFL_RETURN_IF_ERROR(store_->Set(Key("started"), Bytes("1")));
  return Status::OK();
}

void ProcessWorld::Beat() {
  const auto every = std::max(milliseconds(10), options_.heartbeat / 8);
  std::unique_lock<std::mutex> lock(mu_);
  while (!beat_stop_.wait_for(lock, every, [&] { return !beating_; })) {
    lock.unlock();
    const bool ok = monitor_->Beat().ok();
    lock.lock();
    if (!ok) return;  // the store is gone: CheckFailure reports it
  }
}

void ProcessWorld::StopBeating() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    beating_ = false;
  }
  beat_stop_.notify_all();
  if (heart_.joinable()) heart_.join();
}

Status ProcessWorld::ReportLost(const WorldOptions& options, const std::string& reason) {
  OFL_ASSIGN_OR_RETURN(
      auto store, TcpStore::Connect(options.master_addr, options.master_port, options.timeout));
  OFL_ASSIGN_OR_RETURN(bool set,
                       store->SetIfAbsent(StrCat("ofl/", options.job_id, "/lost"), Bytes(reason)));
  (void)set;  // a loss seen first (by the store's watch) stays
  return Status::OK();
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
  StopBeating();
  if (monitor_ == nullptr) return;
  (void)monitor_->Leave();
  (void)store_->Add(Key("left"), 1);
  // The host stays until the others have left (bounded); a world that never
  // joined has nobody to wait for: its failure was reported at its timeout.
  if (server_ != nullptr && joined_) {
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
                    " does not answer: the process died, or it is stopped or hung: ",
                    present.status().message(), ")");
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
      return Status(StatusCode::kInternal,
                    StrCat("process ", options_.process, ": ", what, " stopped: ", failure));
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
  Status waited = WaitOrFail(keys, scope, "all-gather '" + name + "'");
  if (waited.code() == StatusCode::kTimeout) {  // name who is late: hung, or elsewhere
    std::vector<std::string> late;
    for (int64_t p = 0; p < options_.num_processes; ++p) {
      auto here = store_->Check({keys[p]});
      if (here.ok() && !here.value()) late.push_back(std::to_string(p));
    }
    return Status(StatusCode::kTimeout,
                  StrCat("process ", options_.process, ": all-gather '", name, "': process(es) ",
                         late.empty() ? "?" : JoinText(late, ", "), " did not arrive within ",
                         options_.timeout.count(), " ms (hung, or busy elsewhere)"));
  }
  OFL_RETURN_IF_ERROR(waited);
  std::vector<std::vector<char>> out;
  for (const std::string& key : keys) {
    OFL_ASSIGN_OR_RETURN(std::vector<char> v, store_->Get(key, options_.timeout));
    out.push_back(std::move(v));
  }
  return out;
}

std::string ProcessWorld::Late(const std::string& name, milliseconds wait) {
  if (store_ == nullptr) return "";
  const auto deadline = Clock::now() + wait;
  std::vector<std::string> late;
  do {
    late.clear();
    for (int64_t p = 0; p < options_.num_processes; ++p) {
      auto here = store_->Check({Key(StrCat(name, "/", p))});
      if (!here.ok()) return "";  // the store is gone: CheckFailure says so
      if (!here.value()) late.push_back(std::to_string(p));
    }
    if (late.empty()) return "";
    std::this_thread::sleep_for(milliseconds(50));
  } while (Clock::now() < deadline);
  return JoinText(late, ", ");
}

Status ProcessWorld::Barrier(const std::string& name, const std::string& scope) {
  return AllGather("barrier/" + name, {}, scope).status();
}

}  // namespace ofl
