#!/usr/bin/env bash
# bench/run.sh SUITE: set up and build (scripts/lib/setup.sh), run a benchmark
# suite, write bench/results/SUITE.json. Suites:
#   ops   bench/ops_matmul.cpp (one matmul: ofl::Session vs oneDNN vs
#         OpenBLAS) + bench/ops_gpt.py (one GPT training step), merged by
#         bench/merge_results.py into bench/results/ops.json.
# Environment: OFL_BENCH_THREADS (default 2) kernel threads for every part;
# OFL_BENCH_TORCH_PYTHON, an interpreter that imports torch, for the PyTorch
# peer (default: the project venv's, which has no torch: the field is null).
# Exit status: non-zero when any part failed; the results file is still
# written, with the failing part's error in it.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../scripts/lib/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/setup.sh"

usage() { echo "usage: bench/run.sh ops" >&2; }
if (($# != 1)); then usage; exit 1; fi
suite=$1

run_ops() {
  local threads=${OFL_BENCH_THREADS:-2} results=bench/results
  local cpp_json=$results/ops_matmul.json.tmp py_json=$results/ops_gpt.json.tmp
  mkdir -p "$results"
  local load_before cpp_rc=0 py_rc=0 merge_rc=0
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)

  echo "bench: ops_matmul (threads=$threads)" >&2
  "$OFL_BUILD_DIR/bench/ops_matmul" --threads "$threads" --reps 20 >"$cpp_json" || cpp_rc=$?
  echo "bench: ops_gpt.py (threads=$threads)" >&2
  OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads \
    PYTHONPATH="$OFL_ROOT/python" "$OFL_PY" bench/ops_gpt.py --threads "$threads" \
    --torch-python "${OFL_BENCH_TORCH_PYTHON:-$OFL_PY}" >"$py_json" ||
    py_rc=$?

  "$OFL_PY" bench/merge_results.py --out "$results/ops.json" --threads "$threads" \
    --load-before "$load_before" --cpp "$cpp_json" --cpp-rc "$cpp_rc" \
    --python "$py_json" --python-rc "$py_rc" || merge_rc=$?
  rm -f "$cpp_json" "$py_json"
  if ((cpp_rc != 0 || py_rc != 0 || merge_rc != 0)); then
    echo "bench: ops FAILED (ops_matmul exit $cpp_rc, ops_gpt.py exit $py_rc," \
      "merge exit $merge_rc); see $results/ops.json" >&2
    return 1
  fi
  "$OFL_PY" bench/plot_ops.py || return 1
  echo "bench: wrote $results/ops.json and $results/ops.png" >&2
}

case $suite in
  ops)
    ofl_setup
    cd "$OFL_ROOT"
    run_ops
    ;;
  *) usage; exit 1 ;;
esac
