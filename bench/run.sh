#!/usr/bin/env bash
# bench/run.sh SUITE: set up and build (scripts/lib/setup.sh), run a benchmark
# suite, write bench/results/SUITE.json. Suites:
#   ops   bench/ops_matmul.cpp (one matmul: ofl::Session vs oneDNN vs
#         OpenBLAS, calls interleaved) + bench/ops_gpt.py (one GPT training step:
#         our nn.Graph and eager against PyTorch eager in interleaved rounds,
#         OFL_BENCH_ROUNDS, default 5; per-op profiles, peak memory), each under
#         the CPU's own instruction set and, on an AVX-512 CPU, AVX2 forced
#         (ops.json's cpu_isa and by_isa), merged by
#         bench/merge_results.py into bench/results/ops.json. The PyTorch peer
#         runs in .venv-torch, made on first use (torch_python below).
#   runtime  bench/runtime_actor.cpp (us per act and per hop),
#         bench/runtime_allreduce.cpp (in-process all-reduce vs memcpy),
#         bench/runtime_pipeline.cpp (loader/compute overlap, 1 vs 2 slots),
#         bench/runtime_dp.py (GPT data parallel on 2 and 4 virtual devices over 1),
#         merged by bench/merge_runtime.py into bench/results/runtime.json,
#         plotted by bench/plot_runtime.py into bench/results/runtime.png.
#         OFL_BENCH_RUNTIME_PARTS (default actor,allreduce,pipeline,dp) runs
#         only those parts; the others keep the last runtime.json's figures.
#         Thread counts are fixed by what each part measures (README.md).
#   fidelity  bench/fidelity.py (runner: bench/fidelity_runner.py): small GPT and VGG
#         planned on this machine's calibrated cluster under the rule-based presets,
#         autoddl, exact (when it proves) and 3 seeded random strategies, run on
#         2 processes x 1 thread (the headline), 4 processes and 4 virtual devices in
#         one process (reported apart), OFL_BENCH_ROUNDS (default 5) interleaved
#         rounds: predicted vs measured step time, peak memory and bytes per rank
#         (bytes must be equal: exit 3 otherwise), spearman -> bench/results/
#         fidelity.json, plotted by bench/plot_fidelity.py into fidelity.png.
#   search  bench/search_bench.py search: every searcher on GPT-style models (2-96
#         layers, meshes [8] to [128, 8]), a 4-layer MLP and VGG16 (predicted step
#         times, search seconds on one core) -> bench/results/search.json, plotted by
#         bench/plot_search.py into search_time.png and search_step.png.
#   scale   bench/search_bench.py scale: only the search suite's scale rows (autoddl, cost
#         model included, on the 96-layer GPT on [128, 8] and 2 layers on [64, 64], median of 3;
#         the whole --plan-only command of train.py's 96-layer model on [128, 8]) ->
#         bench/results/scale.json (the search suite ends with the same rows).
#   paper   bench/search_bench.py paper: best expert vs autoddl on VGG16 and a
#         Transformer, beside the AutoDDL paper's reductions -> paper.json, paper.png;
#         then bench/paper_measured.py: scaled-down VGG and Transformer on 2 processes
#         of this machine, autoddl vs the best rule-based preset, both run -> the
#         "measured" key of paper.json (OFL_BENCH_ROUNDS rounds, default 5); then, as
#         root, bench/paper_emulated.py: the same models on emulated clusters (2 and 4
#         single-device nodes, 2 nodes x 2 devices; every preset and autoddl) -> the
#         "emulated" key of paper.json and paper_emulated.png.
#   ilp     bench/ilp_crosscheck.py: exact and autoddl against the integer linear
#         program of the same cost graph solved by HiGHS (bench/ilp_model.py), 22
#         graphs of up to ~200 cost nodes -> bench/results/ilp.json.
#   soak    bench/soak.py: 2,000 training steps of ops_gpt.py's GPT on 4 virtual
#         devices (data parallel), VmRSS every 100 steps; fails when it grows 5 % or
#         more after the first 100 steps -> bench/results/soak.json and soak.png.
#         OFL_SOAK_STEPS=N runs N steps instead.
#   gpu   (on a GPU machine, after scripts/gpu_check.sh built OFL_BUILD_DIR
#         with CUDA; no setup step, no venv) bench/gpu_matmul (1024^3 and 8192^3
#         bf16 matmul through the runtime vs cuBLASLt called directly) +
#         bench/gpu_gpt.py (a GPT-2-small bf16-autocast step, ours vs PyTorch,
#         with OFL_GPU_PYTHON, default python3) -> bench/results/gpu.json.
#         Goals: GPT step >= 1.2x PyTorch, both matmuls >= 0.95x.
#   multiprocess  bench/multiprocess_allreduce.cpp (64 MiB all-reduce across 2 and 4
#         processes: ours vs a plain-socket ring, one TCP stream and Gloo's rings) +
#         bench/multiprocess_dp.py (GPT data parallel on 2 and 4 processes over 1, and on
#         2 emulated nodes as root; beside PyTorch DDP on the same settings, launched by
#         torchrun from .venv-torch: bench/multiprocess_peer.py), merged by
#         bench/merge_multiprocess.py into bench/results/multiprocess.json, plotted by
#         bench/plot_multiprocess.py into multiprocess.png. Rounds: OFL_BENCH_AR_ROUNDS
#         (all-reduce, default 15: a round takes about a second) and OFL_BENCH_ROUNDS
#         (training, default 5).
# Environment: OFL_BENCH_THREADS (default 2) kernel threads for every part;
# OFL_BENCH_TORCH_PYTHON, an interpreter that imports torch, for the PyTorch
# peer (default: .venv-torch's, installed on first use).
# Exit status: non-zero when any part failed; the results file is still
# written, with the failing part's error in it.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../scripts/lib/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/setup.sh"

usage() { echo "usage: bench/run.sh ops|runtime|search|scale|paper|fidelity|calibration|ilp|soak|multiprocess|gpu" >&2; }
if (($# != 1)); then usage; exit 1; fi
suite=$1

# torch_python: prints an interpreter that imports torch: OFL_BENCH_TORCH_PYTHON
# when set, else .venv-torch's (OFL_TORCH_VENV), made here once: a venv of its
# own (never the project's), `pip install torch numpy` from PyPI (the default
# Linux wheel with its nvidia-* packages, about 5 GB: bench/README.md says why
# not lighter), checked by a product of two tensors.
torch_python() {
  if [[ -n ${OFL_BENCH_TORCH_PYTHON:-} ]]; then echo "$OFL_BENCH_TORCH_PYTHON"; return; fi
  local venv=${OFL_TORCH_VENV:-$OFL_ROOT/.venv-torch}
  local check='import torch; torch.randn(2) @ torch.randn(2)'
  if ! "$venv/bin/python" -c "$check" 2>/dev/null; then
    echo "bench: installing PyTorch into $venv (once: about 5 GB, a few minutes)" >&2
    "${OFL_PYTHON:-python3}" -m venv "$venv" >&2 &&
      "$venv/bin/pip" install --quiet torch numpy >&2 &&
      "$venv/bin/python" -c "$check" >&2 || return 1
  fi
  echo "$venv/bin/python"
}

run_ops() {
  local threads=${OFL_BENCH_THREADS:-2} results=bench/results
  local py_json=$results/ops_gpt.json.tmp
  mkdir -p "$results"
  local load_before py_rc=0 merge_rc=0 torch_py="" native isa rc cpp_failed=0
  local -a cpp_args=()
  torch_py=$(torch_python) || echo "bench: no PyTorch peer (its install failed)" >&2
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  # The CPU's own instruction set, then AVX2 forced where the CPU has AVX-512
  # (OFL_CPU_ISA caps our kernels and oneDNN; OPENBLAS_CORETYPE is the machine's).
  native=$(PYTHONPATH="$OFL_ROOT/python" "$OFL_PY" -c \
    'from oneflow_lite import _C; print(_C.cpu_isa_info()["detected"])')
  local -a isas=("$native")
  if [[ $native == avx512 ]]; then isas+=(avx2); fi
  echo "bench: CPU instruction set $native; measuring ${isas[*]}" >&2

  for isa in "${isas[@]}"; do
    echo "bench: ops_matmul (threads=$threads, $isa)" >&2
    rc=0
    if [[ $isa == "$native" ]]; then
      "$OFL_BUILD_DIR/bench/ops_matmul" --threads "$threads" --reps 20 \
        >"$results/ops_matmul_$isa.json.tmp" || rc=$?
    else
      OFL_CPU_ISA=$isa "$OFL_BUILD_DIR/bench/ops_matmul" --threads "$threads" --reps 20 \
        >"$results/ops_matmul_$isa.json.tmp" || rc=$?
    fi
    ((rc == 0)) || cpp_failed=1
    cpp_args+=(--cpp "$results/ops_matmul_$isa.json.tmp" --cpp-rc "$rc")
  done
  echo "bench: ops_gpt.py (threads=$threads, ${OFL_BENCH_ROUNDS:-5} rounds, ${isas[*]})" >&2
  OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads \
    PYTHONPATH="$OFL_ROOT/python" "$OFL_PY" bench/ops_gpt.py --threads "$threads" \
    --rounds "${OFL_BENCH_ROUNDS:-5}" --isas "$(IFS=,; echo "${isas[*]}")" \
    --torch-python "$torch_py" >"$py_json" || py_rc=$?

  "$OFL_PY" bench/merge_results.py --out "$results/ops.json" --threads "$threads" \
    --load-before "$load_before" "${cpp_args[@]}" \
    --python "$py_json" --python-rc "$py_rc" || merge_rc=$?
  for isa in "${isas[@]}"; do rm -f "$results/ops_matmul_$isa.json.tmp"; done
  rm -f "$py_json"
  if ((cpp_failed != 0 || py_rc != 0 || merge_rc != 0)); then
    echo "bench: ops FAILED (ops_matmul failed: $cpp_failed, ops_gpt.py exit $py_rc," \
      "merge exit $merge_rc); see $results/ops.json" >&2
    return 1
  fi
  "$OFL_PY" bench/plot_ops.py || return 1
  echo "bench: wrote $results/ops.json and $results/ops.png" >&2
}

run_runtime() {
  local results=bench/results
  mkdir -p "$results"
  local actor=$results/runtime_actor.json.tmp allreduce=$results/runtime_allreduce.json.tmp
  local pipeline=$results/runtime_pipeline.json.tmp dp=$results/runtime_dp.json.tmp
  local load_before actor_rc=0 allreduce_rc=0 pipeline_rc=0 dp_rc=0 merge_rc=0
  local parts=",${OFL_BENCH_RUNTIME_PARTS:-actor,allreduce,pipeline,dp},"
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  # A part left out of OFL_BENCH_RUNTIME_PARTS keeps its figures from the last runtime.json.
  [[ $parts == *,actor,* ]] || actor=-
  [[ $parts == *,allreduce,* ]] || allreduce=-
  [[ $parts == *,pipeline,* ]] || pipeline=-
  [[ $parts == *,dp,* ]] || dp=-
  local reuse=()
  [[ -f $results/runtime.json ]] && reuse=(--reuse "$results/runtime.json")

  if [[ $actor != - ]]; then
    echo "bench: runtime_actor" >&2
    "$OFL_BUILD_DIR/bench/runtime_actor" >"$actor" || actor_rc=$?
  fi
  if [[ $allreduce != - ]]; then
    echo "bench: runtime_allreduce (64 MiB, 2 and 4 devices)" >&2
    "$OFL_BUILD_DIR/bench/runtime_allreduce" --mb 64 --devices 2,4 >"$allreduce" ||
      allreduce_rc=$?
  fi
  if [[ $pipeline != - ]]; then
    echo "bench: runtime_pipeline" >&2
    "$OFL_BUILD_DIR/bench/runtime_pipeline" >"$pipeline" || pipeline_rc=$?
  fi
  if [[ $dp != - ]]; then
    echo "bench: runtime_dp.py (GPT, batch 16, 1, 2 and 4 ranks on 2 threads)" >&2
    PYTHONPATH="$OFL_ROOT/python" "$OFL_PY" bench/runtime_dp.py --threads 2 >"$dp" || dp_rc=$?
  fi

  "$OFL_PY" bench/merge_runtime.py --out "$results/runtime.json.new" \
    --load-before "$load_before" "${reuse[@]}" \
    --actor "$actor" --actor-rc "$actor_rc" --allreduce "$allreduce" \
    --allreduce-rc "$allreduce_rc" --pipeline "$pipeline" --pipeline-rc "$pipeline_rc" \
    --dp "$dp" --dp-rc "$dp_rc" || merge_rc=$?
  [[ $merge_rc == 0 ]] && mv "$results/runtime.json.new" "$results/runtime.json"
  rm -f "$results/runtime.json.new"
  for f in "$actor" "$allreduce" "$pipeline" "$dp"; do [[ $f == - ]] || rm -f "$f"; done
  if ((actor_rc != 0 || allreduce_rc != 0 || pipeline_rc != 0 || dp_rc != 0 || merge_rc != 0)); then
    echo "bench: runtime FAILED (runtime_actor exit $actor_rc, runtime_allreduce exit" \
      "$allreduce_rc, runtime_pipeline exit $pipeline_rc, runtime_dp.py exit $dp_rc," \
      "merge exit $merge_rc); see $results/runtime.json" >&2
    return 1
  fi
  "$OFL_PY" bench/plot_runtime.py || return 1
  echo "bench: wrote $results/runtime.json and $results/runtime.png" >&2
}

run_fidelity() {
  local results=bench/results rc=0 rounds=${OFL_BENCH_ROUNDS:-5} modes=procs2,procs4,virtual4
  mkdir -p "$results"
  # as root, also 2 emulated nodes of 1 and of 2 devices (network namespaces, shaped links)
  [ "$(id -u)" = 0 ] && modes+=,emulated2,emulated4
  echo "bench: fidelity.py (GPT, VGG; modes $modes; $rounds rounds)" >&2
  PYTHONPATH="$OFL_ROOT/python" "$OFL_PY" bench/fidelity.py --rounds "$rounds" --modes "$modes" \
    --threads "${OFL_BENCH_THREADS:-2}" --out "$results/fidelity.json.tmp" >/dev/null || rc=$?
  if [[ -s $results/fidelity.json.tmp ]]; then
    mv "$results/fidelity.json.tmp" "$results/fidelity.json"
    "$OFL_PY" bench/plot_fidelity.py || rc=1
  else
    rm -f "$results/fidelity.json.tmp"
    rc=1
  fi
  echo "bench: wrote $results/fidelity.json and $results/fidelity.png (exit $rc)" >&2
  return $rc
}

run_calibration() {
  mkdir -p bench/results
  echo "bench: calibration.py (two calibrations, each plan priced under the other's)" >&2
  PYTHONPATH="$OFL_ROOT/python" "$OFL_PY" bench/calibration.py --baseline \
    --out bench/results/calibration.json
}

run_soak() {
  local steps=${OFL_SOAK_STEPS:-2000} threads=${OFL_BENCH_THREADS:-2}
  echo "bench: soak.py ($steps steps, 4 virtual devices, threads=$threads)" >&2
  PYTHONPATH="$OFL_ROOT/python" "$OFL_PY" bench/soak.py --steps "$steps" --threads "$threads"
}

run_multiprocess() {
  local results=bench/results rounds=${OFL_BENCH_ROUNDS:-5} ar_rounds=${OFL_BENCH_AR_ROUNDS:-15}
  mkdir -p "$results"
  local load_before dp=$results/multiprocess_dp.json.tmp dp_rc=0 merge_rc=0 parts=() small=() procs
  local torch_py=""
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  for procs in 2 4; do
    local out=$results/multiprocess_allreduce_$procs.jsonl.tmp rc=0
    echo "bench: multiprocess_allreduce ($procs processes, 64 MiB, $ar_rounds rounds)" >&2
    "$OFL_BUILD_DIR/bench/multiprocess_allreduce" --procs "$procs" --mb 64 --rounds "$ar_rounds" \
      >"$out" || rc=$?
    parts+=("$procs:$out:$rc")
    out=$results/multiprocess_allreduce_small_$procs.jsonl.tmp rc=0
    echo "bench: multiprocess_allreduce ($procs processes, 64 KiB, $ar_rounds rounds)" >&2
    "$OFL_BUILD_DIR/bench/multiprocess_allreduce" --procs "$procs" --mb 0.0625 \
      --rounds "$ar_rounds" >"$out" || rc=$?
    small+=("$procs:$out:$rc")
  done
  torch_py=$(torch_python) || echo "bench: no PyTorch DDP peer (its install failed)" >&2
  echo "bench: multiprocess_dp.py (GPT, batch 16, 1, 2 and 4 processes and 2 emulated nodes" \
    "(as root), ours and PyTorch DDP, $rounds rounds)" >&2
  PYTHONPATH="$OFL_ROOT/python" "$OFL_PY" bench/multiprocess_dp.py --rounds "$rounds" \
    --torch-python "$torch_py" >"$dp" || dp_rc=$?
  "$OFL_PY" bench/merge_multiprocess.py --out "$results/multiprocess.json" \
    --load-before "$load_before" --allreduce "${parts[@]}" --allreduce-small "${small[@]}" \
    --dp "$dp" --dp-rc "$dp_rc" ||
    merge_rc=$?
  rm -f "$dp" "$results"/multiprocess_allreduce_*.jsonl.tmp
  "$OFL_PY" bench/plot_multiprocess.py || merge_rc=1
  if ((merge_rc != 0)); then
    echo "bench: multiprocess FAILED (see errors in $results/multiprocess.json)" >&2
    return 1
  fi
  echo "bench: wrote $results/multiprocess.json and $results/multiprocess.png" >&2
}

# one_core ARGS...: "$OFL_PY" ARGS on one core (taskset where there is one),
# one thread in every pool (HiGHS's too); the search and ILP benches time it.
one_core() {
  local pin=()
  if command -v taskset >/dev/null; then pin=(taskset -c 0); fi
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH="$OFL_ROOT/python" \
    "${pin[@]}" "$OFL_PY" "$@"
}

run_search() {  # $1: search, scale or paper; one core, one thread everywhere
  local results=bench/results load_before
  mkdir -p "$results"
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "bench: search_bench.py $1 (one core)" >&2
  one_core bench/search_bench.py "$1" --out "$results/$1.json" \
    --load-before "$load_before" || return 1
  if [[ $1 == scale ]]; then echo "bench: wrote $results/scale.json" >&2; return 0; fi
  "$OFL_PY" bench/plot_search.py || return 1
  echo "bench: wrote $results/$1.json and its plots" >&2
}

run_ilp() {  # one core, one thread everywhere (HiGHS too)
  local results=bench/results load_before
  mkdir -p "$results"
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "bench: ilp_crosscheck.py (one core)" >&2
  one_core bench/ilp_crosscheck.py --out "$results/ilp.json" \
    --load-before "$load_before" || return 1
  echo "bench: wrote $results/ilp.json" >&2
}

run_gpu() {
  local results=bench/results py=${OFL_GPU_PYTHON:-python3} mm_rc=0 gpt_rc=0
  local mm=$results/gpu_matmul.json.tmp gpt=$results/gpu_gpt.json.tmp
  mkdir -p "$results"
  if [[ -x "$OFL_BUILD_DIR/bench/gpu_matmul" ]]; then
    "$OFL_BUILD_DIR/bench/gpu_matmul" 1024 8192 >"$mm" || mm_rc=$?
  else
    echo "{\"name\": \"gpu_matmul\", \"error\": \"$OFL_BUILD_DIR/bench/gpu_matmul not built (a CUDA build?)\"}" >"$mm"
    mm_rc=1
  fi
  PYTHONPATH="$OFL_ROOT/python:$OFL_ROOT/bench${PYTHONPATH:+:$PYTHONPATH}" \
    "$py" bench/gpu_gpt.py >"$gpt" || gpt_rc=$?
  "$py" - "$mm" "$gpt" "$results/gpu.json" <<'PY'
import json, sys
mm = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
gpt_text = open(sys.argv[2]).read().strip()
gpt = json.loads(gpt_text) if gpt_text else {"error": "gpu_gpt.py printed nothing"}
out = {"matmul": mm, "gpt": gpt,
       "goals": {"gpt_speedup_min": 1.2, "matmul_ratio_min": 0.95}}
json.dump(out, open(sys.argv[3], "w"), indent=2)
print(json.dumps(out, indent=2))
PY
  rm -f "$mm" "$gpt"
  ((mm_rc == 0 && gpt_rc == 0))
}

case $suite in
  gpu)
    cd "$OFL_ROOT"
    run_gpu
    ;;
  ilp)
    ofl_setup
    cd "$OFL_ROOT"
    run_ilp
    ;;
  fidelity)
    ofl_setup
    cd "$OFL_ROOT"
    run_fidelity
    ;;
  calibration)
    ofl_setup
    cd "$OFL_ROOT"
    run_calibration
    ;;
  search|scale)
    ofl_setup
    cd "$OFL_ROOT"
    run_search "$suite"
    ;;
  paper)
    ofl_setup
    cd "$OFL_ROOT"
    run_search paper
    echo "bench: paper_measured.py (2 processes x 1 thread, ${OFL_BENCH_ROUNDS:-5} rounds)" >&2
    PYTHONPATH="$OFL_ROOT/python" "$OFL_PY" bench/paper_measured.py \
      --rounds "${OFL_BENCH_ROUNDS:-5}" >/dev/null
    if [ "$(id -u)" = 0 ]; then
      echo "bench: paper_emulated.py (emulated clusters, ${OFL_BENCH_ROUNDS:-5} rounds)" >&2
      PYTHONPATH="$OFL_ROOT/python" "$OFL_PY" bench/paper_emulated.py \
        --rounds "${OFL_BENCH_ROUNDS:-5}"
    else
      echo "bench: paper_emulated.py skipped: emulated clusters need root" >&2
    fi
    ;;
  runtime)
    ofl_setup
    cd "$OFL_ROOT"
    run_runtime
    ;;
  ops)
    ofl_setup
    cd "$OFL_ROOT"
    run_ops
    ;;
  multiprocess)
    ofl_setup
    cd "$OFL_ROOT"
    run_multiprocess
    ;;
  soak)
    ofl_setup
    cd "$OFL_ROOT"
    run_soak
    ;;
  *) usage; exit 1 ;;
esac
