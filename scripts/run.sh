#!/usr/bin/env bash
# scripts/run.sh: set up and build (scripts/lib/setup.sh), then run the main
# job where its prediction can be checked: a small GPT planned by autoddl on
# this machine's calibrated local cluster (calibrated once, on process 0, and
# shared) and trained 30 steps as 2 processes of one world (the launcher),
# one rank and one kernel thread each (OMP/OpenBLAS threads 1), then the
# rule-based preset the cost model ranks best; it prints predicted (the full
# model) beside measured step time per strategy and warns where they differ
# by more than 1.5x. The JSON report and the plot go to out/. Extra arguments
# go to the trainer, e.g. --steps 100.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
OFL_TARGETS="${OFL_TARGETS-_C}" ofl_setup
cd "$OFL_ROOT"
export PYTHONPATH="$OFL_ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
exec "$OFL_PY" -m oneflow_lite.train --model gpt --nproc 2 --devices 2 --hierarchy 2 --threads 1 \
  --cluster local_kernels \
  --searcher autoddl --steps 30 --compare expert --report out/train_report.json --plot out/train_report.png "$@"
