#!/usr/bin/env bash
# The main job: set up (scripts/setup.sh, idempotent), then evaluate every compressor of
# configs/quickstart.toml on the first questions of the bundled HotpotQA evaluation file, with the
# in-process llama.cpp Qwen2.5-Coder-1.5B reader for every compressor and every question. Prints
# the table and where the report is (report.html, plots/, summary.md).
#
#   bash scripts/quickstart.sh              # the first N questions (below), runs/quickstart
#   bash scripts/quickstart.sh --full       # all 100 questions, runs/quickstart-full (~2 h on 2 quiet cores)
#   bash scripts/quickstart.sh --no-setup   # skip scripts/setup.sh (already set up)
#   bash scripts/quickstart.sh --dry-run    # print the evaluate command and stop (nothing is set up or run)
#   bash scripts/quickstart.sh --quiet ...  # any other argument goes to 'ragsift evaluate'
#
# Re-running continues an interrupted run (--resume). Scores and reader answers are cached in
# ~/.cache/ragsift ([evaluation] cache = "shared"), so --full reuses what the quickstart computed.
set -euo pipefail
cd "$(dirname "$0")/.."

# N: the whole job (setup excluded) within about 15 minutes on a quiet 2-core machine.
N=10
out=runs/quickstart
limit=(--limit "$N")
setup=1
dry_run=0
pass=()
for arg in "$@"; do
  case "$arg" in
    --full) out=runs/quickstart-full; limit=(--limit 100) ;;
    --no-setup) setup=0 ;;
    --dry-run) dry_run=1 ;;
    *) pass+=("$arg") ;;
  esac
done

cmd=(.venv/bin/ragsift evaluate --config configs/quickstart.toml --out "$out" --resume "${limit[@]}" ${pass[@]+"${pass[@]}"})
if [ "$dry_run" = 1 ]; then
  printf '%q ' "${cmd[@]}"
  echo
  exit 0
fi
if [ "$setup" = 1 ]; then
  bash scripts/setup.sh
fi
"${cmd[@]}"
# --out given among the extra arguments wins (argparse keeps the last one)
for ((i = 0; i < ${#pass[@]}; i++)); do
  case "${pass[$i]}" in
    --out|-o) out=${pass[$((i + 1))]:-$out} ;;
    --out=*) out=${pass[$i]#--out=} ;;
  esac
done
echo
echo "Report:  $out/report.html (plots in $out/plots/)"
echo "Summary: $out/summary.md (numbers: $out/summary.json; predictions: $out/predictions/)"
