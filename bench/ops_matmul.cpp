// ops_matmul: how fast an ofl::Session runs one matmul, next to the two
// libraries it is measured against, all with the same pinned thread count.
//
//   matmul_gflops    a graph of one "matmul" op (m x k times k x n, float32)
//                    whose inputs are variables (no feed copies), run with
//                    Session::Run and no fetches; threads via
//                    SessionOptions::num_threads.
//   onednn_gflops    oneDNN's matmul primitive, called directly
//                    (omp_set_num_threads).
//   openblas_gflops  cblas_sgemm, called directly (openblas_set_num_threads).
//   reference_gflops the faster of the two libraries.
//
// The three are interleaved: after --warmup untimed calls of each, every
// round times one call of each side, their order rotated from round to
// round, so that a load change on the shared machine hits all sides alike.
// Each figure is 2*m*n*k / the median seconds per call over --reps rounds;
// "session_over_onednn_by_round" is the median of the rounds' ratios of the
// Session's call time to oneDNN's. "cpu_isa" is the level our kernels ran
// (ops/cpu_isa.h: OFL_CPU_ISA forces a lower one, and caps oneDNN with it)
// and "onednn_isa" the one oneDNN reports. One JSON object goes to stdout (bench/run.sh merges
// it into bench/results/ops.json). Exit status: 0 when every part ran; 2 when
// the Session part failed or its product differs from OpenBLAS's by more
// than kMaxAbsDiff (the error is in "matmul_error"; every figure that was
// measured is still there); 1 on bad arguments.
//
// Rerun: bench/run.sh ops, or build/bench/ops_matmul --threads 2 --reps 20.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_version.h"
#include "oneflow_lite/api/op_tools.h"
#include "oneflow_lite/api/session.h"

namespace {

// Largest |ours - OpenBLAS| accepted for the Session's product.
constexpr double kMaxAbsDiff = 1e-2;

struct Options {
  int64_t m = 1024, n = 1024, k = 1024;
  int threads = 2;
  int warmup = 3;
  int reps = 20;
};

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double gflops = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

Timing TimingOf(const Options& o, const std::vector<double>& ms) {
  Timing t;
  t.median_ms = Median(ms);
  t.min_ms = *std::min_element(ms.begin(), ms.end());
  t.gflops = 2.0 * o.m * o.n * o.k / (t.median_ms * 1e-3) / 1e9;
  return t;
}

// The ms of each call: `warmup` untimed calls of every side, then `reps`
// rounds of one timed call per side, the order rotated each round.
std::vector<std::vector<double>> TimeInterleaved(const Options& o,
                                                 const std::vector<std::function<void()>>& fns) {
  for (const auto& fn : fns) {
    for (int i = 0; i < o.warmup; ++i) fn();
  }
  std::vector<std::vector<double>> ms(fns.size());
  for (int r = 0; r < o.reps; ++r) {
    for (size_t j = 0; j < fns.size(); ++j) {
      const size_t side = (j + r) % fns.size();
      auto t0 = std::chrono::steady_clock::now();
      fns[side]();
      auto t1 = std::chrono::steady_clock::now();
      ms[side].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }
  return ms;
}

std::vector<float> RandomMatrix(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(rows * cols);
  for (float& x : v) x = dist(gen);
  return v;
}

std::function<void()> OpenBlasCall(const Options& o, const std::vector<float>& a,
                                   const std::vector<float>& b, std::vector<float>* c) {
  return [&o, &a, &b, c] {
    openblas_set_num_threads(o.threads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, o.m, o.n, o.k, 1.0f, a.data(), o.k,
                b.data(), o.n, 0.0f, c->data(), o.n);
  };
}

// oneDNN's matmul primitive on a, b, c, made once.
struct OneDnnMatmul {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul matmul;
  dnnl::memory a_mem, b_mem, c_mem;

  OneDnnMatmul(const Options& o, std::vector<float>& a, std::vector<float>& b,
               std::vector<float>* c) {
    using dnnl::memory;
    memory::desc a_md({o.m, o.k}, memory::data_type::f32, memory::format_tag::ab);
    memory::desc b_md({o.k, o.n}, memory::data_type::f32, memory::format_tag::ab);
    memory::desc c_md({o.m, o.n}, memory::data_type::f32, memory::format_tag::ab);
    matmul =
        dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine));
    a_mem = memory(a_md, engine, a.data());
    b_mem = memory(b_md, engine, b.data());
    c_mem = memory(c_md, engine, c->data());
  }
  void operator()(int threads) {
    omp_set_num_threads(threads);
    matmul.execute(stream,
                   {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    stream.wait();
  }
};

ofl::Tensor TensorOf(const std::vector<float>& v, int64_t rows, int64_t cols) {
  ofl::Tensor t(ofl::Shape{rows, cols}, ofl::DataType::kFloat32);
  std::memcpy(t.data<float>(), v.data(), v.size() * sizeof(float));
  return t;
}

// The Session part: a one-op graph whose inputs are variables.
struct SessionMatmul {
  std::unique_ptr<ofl::Session> session;
  std::string output;
};

// Builds the Session and runs it once, checked against `expected` (the
// OpenBLAS product): an error message, or "" with *max_abs_diff filled in.
std::string MakeSession(const Options& o, const std::vector<float>& a, const std::vector<float>& b,
                        const std::vector<float>& expected, SessionMatmul* out,
                        double* max_abs_diff) {
  ofl::OpGraph graph;
  ofl::Status s = graph.AddVariable("a", TensorOf(a, o.m, o.k), /*trainable=*/false);
  if (s.ok()) s = graph.AddVariable("b", TensorOf(b, o.k, o.n), /*trainable=*/false);
  if (!s.ok()) return s.message();
  auto outputs = graph.AddOp("matmul", {"a", "b"}, ofl::AttrMap{}, "matmul");
  if (!outputs.ok()) return outputs.status().message();
  ofl::SessionOptions options;
  options.num_threads = o.threads;
  auto session = ofl::Session::Create(graph, options);
  if (!session.ok()) return session.status().message();
  out->session = std::move(session.value());
  out->output = outputs.value()[0];

  std::vector<ofl::Tensor> results;
  s = out->session->Run({}, {out->output}, &results);
  if (!s.ok()) return s.message();
  const float* y = results[0].data<float>();
  *max_abs_diff = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    *max_abs_diff = std::max(*max_abs_diff, static_cast<double>(std::fabs(y[i] - expected[i])));
  }
  return "";
}

const char* OneDnnIsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

std::string JsonString(const std::string& s) {
  std::ostringstream out;
  out << '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out << buf;
    } else {
      out << c;
    }
  }
  out << '"';
  return out.str();
}

void PrintTiming(const char* name, const Timing& t) {
  std::printf("  \"%s_gflops\": %.2f,\n  \"%s_median_ms\": %.3f,\n  \"%s_min_ms\": %.3f,\n", name,
              t.gflops, name, t.median_ms, name, t.min_ms);
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    long v = std::strtol(argv[++i], nullptr, 10);
    if (v <= 0) return false;
    if (arg == "--threads")
      o->threads = static_cast<int>(v);
    else if (arg == "--warmup")
      o->warmup = static_cast<int>(v);
    else if (arg == "--reps")
      o->reps = static_cast<int>(v);
    else if (arg == "--m")
      o->m = v;
    else if (arg == "--n")
      o->n = v;
    else if (arg == "--k")
      o->k = v;
    else
      return false;
  }
  return o->reps >= 10;
}

// The JSON's closing fields: the two references, the instruction set and
// the libraries' versions.
void PrintReferences(const Timing& blas, const Timing& dnnl, double dnnl_vs_blas,
                     const ofl::KernelIsa& isa) {
  const dnnl_version_t* v = dnnl_version();
  PrintTiming("onednn", dnnl);
  PrintTiming("openblas", blas);
  bool dnnl_faster = dnnl.gflops >= blas.gflops;
  std::printf("  \"reference_gflops\": %.2f,\n  \"reference\": \"%s\",\n",
              dnnl_faster ? dnnl.gflops : blas.gflops, dnnl_faster ? "onednn" : "openblas");
  std::printf("  \"onednn_max_abs_diff_vs_openblas\": %.3g,\n", dnnl_vs_blas);
  std::printf("  \"interleaved\": true,\n  \"cpu_isa\": %s,\n  \"cpu_isa_detected\": %s,\n",
              JsonString(isa.active).c_str(), JsonString(isa.detected).c_str());
  std::printf("  \"cpu_isa_note\": %s,\n  \"onednn_isa\": \"%s\",\n", JsonString(isa.note).c_str(),
              OneDnnIsaName(dnnl::get_effective_cpu_isa()));
  std::printf("  \"onednn_version\": \"%d.%d.%d\",\n", v->major, v->minor, v->patch);
  std::printf("  \"openblas_config\": %s,\n", JsonString(openblas_get_config()).c_str());
  std::printf("  \"openblas_core\": %s\n}\n", JsonString(openblas_get_corename()).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s [--threads 2] [--warmup 3] [--reps 20 (>= 10)] [--m 1024] [--n 1024] "
                 "[--k 1024]\n",
                 argv[0]);
    return 1;
  }
  // The level first: it caps oneDNN (OFL_CPU_ISA) before any primitive exists.
  const ofl::KernelIsa isa = ofl::KernelCpuIsa();
  std::vector<float> a = RandomMatrix(o.m, o.k, 1), b = RandomMatrix(o.k, o.n, 2);
  std::vector<float> c_blas(o.m * o.n), c_dnnl(o.m * o.n);

  std::function<void()> blas_call = OpenBlasCall(o, a, b, &c_blas);
  OneDnnMatmul dnnl_matmul(o, a, b, &c_dnnl);
  blas_call();
  dnnl_matmul(o.threads);
  double dnnl_vs_blas = 0;
  for (size_t i = 0; i < c_blas.size(); ++i) {
    dnnl_vs_blas = std::max(dnnl_vs_blas, static_cast<double>(std::fabs(c_dnnl[i] - c_blas[i])));
  }
  SessionMatmul sm;
  double session_vs_blas = -1;
  std::string error = MakeSession(o, a, b, c_blas, &sm, &session_vs_blas);
  // Inputs in [-1, 1]: float32 rounding over k = 1024 terms stays near 1e-4.
  if (error.empty() && !(session_vs_blas <= kMaxAbsDiff)) {
    error = "matmul result differs from OpenBLAS's by up to " + std::to_string(session_vs_blas);
  }
  std::vector<std::function<void()>> calls = {blas_call, [&] { dnnl_matmul(o.threads); }};
  ofl::Status last;
  if (sm.session != nullptr) {
    calls.push_back([&] {
      std::vector<ofl::Tensor> none;
      ofl::Status r = sm.session->Run({}, {}, &none);
      if (!r.ok() && last.ok()) last = r;
    });
  }
  const std::vector<std::vector<double>> ms = TimeInterleaved(o, calls);
  if (!last.ok() && error.empty()) error = last.message();
  const bool measured = error.empty();
  const Timing blas = TimingOf(o, ms[0]), dnnl = TimingOf(o, ms[1]);
  Timing session;
  double session_over_onednn = 0;
  if (measured) {
    session = TimingOf(o, ms[2]);
    std::vector<double> ratios;
    for (int r = 0; r < o.reps; ++r) ratios.push_back(ms[2][r] / ms[1][r]);
    session_over_onednn = Median(ratios);
  }

  std::printf("{\n  \"benchmark\": \"ops_matmul\",\n");
  std::printf("  \"what\": %s,\n",
              JsonString("float32 matmul (m x k) @ (k x n): GFLOP/s = 2*m*n*k / median seconds per "
                         "call; ofl::Session::Run on a one-op graph with variable inputs and no "
                         "fetches vs oneDNN matmul and OpenBLAS cblas_sgemm called directly")
                  .c_str());
  std::printf("  \"m\": %ld,\n  \"n\": %ld,\n  \"k\": %ld,\n  \"dtype\": \"float32\",\n",
              static_cast<long>(o.m), static_cast<long>(o.n), static_cast<long>(o.k));
  std::printf("  \"threads\": %d,\n  \"warmup\": %d,\n  \"reps\": %d,\n", o.threads, o.warmup,
              o.reps);
  if (measured) {
    PrintTiming("matmul", session);
    std::printf("  \"matmul_max_abs_diff_vs_openblas\": %.3g,\n", session_vs_blas);
    std::printf("  \"session_over_onednn_by_round\": %.4f,\n", session_over_onednn);
  } else {
    std::printf("  \"matmul_gflops\": null,\n");
  }
  if (!error.empty()) std::printf("  \"matmul_error\": %s,\n", JsonString(error).c_str());
  PrintReferences(blas, dnnl, dnnl_vs_blas, isa);
  if (!error.empty()) {
    std::fprintf(stderr, "ops_matmul: the Session part failed: %s\n", error.c_str());
    return 2;
  }
  return 0;
}
