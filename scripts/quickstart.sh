#!/usr/bin/env bash
# The main job: set up (scripts/setup.sh, idempotent), then evaluate every compressor of
# configs/quickstart.toml on the first questions of the bundled HotpotQA evaluation file, with the
# in-process llama.cpp Qwen2.5-Coder-1.5B reader for every compressor and every question. Prints
# the table and where the report is (report.html, plots/, summary.md).
#
#   bash scripts/quickstart.sh              # the first N questions (below), runs/quickstart
#   bash scripts/quickstart.sh --full       # all 100 questions, runs/quickstart-full (hours on 2 cores), in
#                                           # steps of 10 questions: stopped early, every compressor has
#                                           # the same first questions (rerun to continue)
#   bash scripts/quickstart.sh --no-setup   # skip scripts/setup.sh (already set up)
#   bash scripts/quickstart.sh --dry-run    # print the evaluate command and stop (nothing is set up or run)
#   bash scripts/quickstart.sh --quiet ...  # any other argument goes to 'ragsift evaluate'
#
# Re-running continues an interrupted run (--resume). Scores and reader answers are cached in
# ~/.cache/ragsift ([evaluation] cache = "shared"), so --full reuses what the quickstart computed.
set -euo pipefail
cd "$(dirname "$0")/.."

# N: the whole job (setup excluded) within about 15 minutes on a quiet 2-core machine. Seconds per
# question on this project's 2-core machine when it was quiet (llama.cpp / torch on 2 threads):
#   reading (1.5B reader; issue 12, first 30 questions): ~13 s with all 10 documents (1,100-1,950
#     prompt tokens), ~2.4 s with the gold sentences (~100 tokens): ~2 s + ~7 ms per prompt token;
#   none 13 (20 s measured on question 11 on 2026-12-01 at load ~1) | oracle 2.4 | BM25 top-2/3/5
#   and random ~2.5-3 each | embedding ~3.5 | fusion-trained ~3 | EXIT trained ~9 scoring
#   (BENCHMARKS.md "EXIT scoring": 10 questions in 89 s) + ~2-3 reading | ECoRAG trained ~13
#   reflection (BENCHMARKS.md "ECoRAG reflection", all 5 steps) + ~5 reading 20 sentences |
#   RECOMP-extractive ~1 scoring + ~8 reading its ~900 tokens | Selective-Context and LongLLMLingua
#   ~5-8 scoring on SmolLM2 + ~7-8 reading half of the text, each
#   => ~105 s per question for the 13 compressors,
# plus one untimed warm-up question per compressor (~105 s) and ~1 min of start-up, model loading,
# statistics and report: N = 6 is about 14 minutes. Measured on the same machine under load
# (2026-12-01 01:00-03:00 UTC, load average 15-33 on 2 cores: other jobs running): a 'none' question
# took 5-14 min wall time and ~65 CPU seconds, so such a run says nothing about the quiet figure.
N=6
out=runs/quickstart
limits=("$N")
setup=1
dry_run=0
pass=()
for arg in "$@"; do
  case "$arg" in
    --full) out=runs/quickstart-full; limits=(10 20 30 40 50 60 70 80 90 100) ;;
    --no-setup) setup=0 ;;
    --dry-run) dry_run=1 ;;
    *) pass+=("$arg") ;;
  esac
done

evaluate() {  # the first $1 questions (a rerun continues: --resume)
  local cmd=(.venv/bin/ragsift evaluate --config configs/quickstart.toml --out "$out" --resume --limit "$1"
             ${pass[@]+"${pass[@]}"})
  if [ "$dry_run" = 1 ]; then
    printf '%q ' "${cmd[@]}"
    echo
  else
    "${cmd[@]}"
  fi
}
if [ "$setup" = 1 ] && [ "$dry_run" = 0 ]; then
  bash scripts/setup.sh
fi
for n in "${limits[@]}"; do
  evaluate "$n"
done
[ "$dry_run" = 1 ] && exit 0
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
