#!/usr/bin/env bash
# scripts/run.sh: set up and build (scripts/lib/setup.sh), then run the main
# job: a small GPT planned by autoddl for 4 virtual CPU devices (a 2 x 2
# mesh of the calibrated local cluster), trained 30 steps, then the expert
# preset the cost model ranks best, side by side; the JSON report and the
# plot go to out/. Extra arguments go to the trainer, e.g. --steps 100.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
ofl_setup
cd "$OFL_ROOT"
export PYTHONPATH="$OFL_ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$OFL_PY" -m oneflow_lite.train --model gpt --devices 4 --hierarchy 2,2 --searcher autoddl \
  --steps 30 --compare expert --report out/train_report.json --plot out/train_report.png "$@"
