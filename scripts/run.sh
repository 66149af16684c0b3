#!/usr/bin/env bash
# scripts/run.sh: set up and build (scripts/lib/setup.sh), then run the main
# job: train the GPT model for 30 steps on one CPU device. Extra arguments go
# to the trainer, e.g. ./scripts/run.sh --steps 100.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
ofl_setup
cd "$OFL_ROOT"
export PYTHONPATH="$OFL_ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$OFL_PY" -m oneflow_lite.train --model gpt --steps 30 "$@"
