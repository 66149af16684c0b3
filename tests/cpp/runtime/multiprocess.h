// Test helper: runs one scenario in N processes. Each process is this test
// binary again (/proc/self/exe, a fresh process: no fork of a threaded one),
// filtered to one worker test (GlooWorker.Run by default), told its scenario, rank, world size
// and store port through OFL_MP_* environment variables. The parent waits for
// all of them until a deadline, kills the ones still running (each by its own
// pid) and reaps every child. Outputs go to temporary files, returned so a
// failing test can print them. Used by one test thread at a time.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace ofl {
namespace mp {

struct Child {
  pid_t pid = -1;
  int exit_code = -1;  // -1: killed after the deadline or by a signal
  std::string output;
};

// A port that was free a moment ago (bound to 0 and released).
inline int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `scenario` on ranks 0..n-1; returns one Child per rank.
// `worker` is the gtest filter of the test that runs scenarios in a child.
inline std::vector<Child> Run(const std::string& scenario, int n, int port,
                              std::chrono::seconds deadline_after,
                              const std::string& worker = "GlooWorker.Run") {
  std::vector<Child> children(n);
  std::vector<std::string> logs(n);
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string(*e).rfind("OFL_MP_", 0) != 0) env.emplace_back(*e);
    }
    env.push_back("OFL_MP_SCENARIO=" + scenario);
    env.push_back("OFL_MP_RANK=" + std::to_string(r));
    env.push_back("OFL_MP_SIZE=" + std::to_string(n));
    env.push_back("OFL_MP_PORT=" + std::to_string(port));
    std::vector<char*> envp;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string exe = "/proc/self/exe", filter = "--gtest_filter=" + worker;
    char* argv[] = {exe.data(), filter.data(), nullptr};
    char tmpl[] = "/tmp/ofl_mp_XXXXXX";
    int fd = ::mkstemp(tmpl);
    ::close(fd);
    logs[r] = tmpl;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, tmpl, O_WRONLY | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&children[r].pid, exe.c_str(), &actions, nullptr, argv, envp.data()) != 0) {
      children[r].pid = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
  }
  const auto deadline = std::chrono::steady_clock::now() + deadline_after;
  int running = 0;
  for (auto& c : children) running += c.pid > 0;
  while (running > 0 && std::chrono::steady_clock::now() < deadline) {
    for (auto& c : children) {
      int status = 0;
      if (c.pid > 0 && c.exit_code == -1 && ::waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --running;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& c : children) {  // past the deadline: end each by its own pid
    if (c.pid > 0 && c.exit_code == -1) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, nullptr, 0);
    }
  }
  for (int r = 0; r < n; ++r) {
    children[r].output = Slurp(logs[r]);
    ::unlink(logs[r].c_str());
  }
  return children;
}

// Everything the children printed, for a failure message.
inline std::string Outputs(const std::vector<Child>& children) {
  std::string out;
  for (size_t r = 0; r < children.size(); ++r) {
    out += "---- rank " + std::to_string(r) + " (exit " + std::to_string(children[r].exit_code) +
           ")\n" + children[r].output;
  }
  return out;
}

inline int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? -1 : std::atoi(v);
}

}  // namespace mp
}  // namespace ofl
