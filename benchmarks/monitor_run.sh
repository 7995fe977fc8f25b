#!/usr/bin/env bash
# Log, every 20 s, what a running 'ragsift evaluate --out RUN_DIR' has spent: unix time, the load
# average (1, 5, 15 min), the evaluate process's id and CPU seconds (user + system, all threads),
# and the lines of each predictions file. Stops when process DRIVER_PID (the script that runs the
# evaluation, e.g. scripts/quickstart.sh) exits. benchmarks/main_job.py --monitor reads the log.
#   bash benchmarks/monitor_run.sh runs/quickstart-full runs/quickstart-full.monitor DRIVER_PID &
set -u
run=$1; log=$2; driver=$3
tck=$(getconf CLK_TCK)
while [ -e "/proc/$driver" ]; do
  pid=$(pgrep -f "ragsift evaluate .*--out $run " | head -1)
  cpu=NA
  if [ -n "$pid" ]; then
    cpu=$(sed 's/^[0-9]* ([^)]*) /X X /' "/proc/$pid/stat" 2>/dev/null | awk -v t="$tck" '{print ($14+$15)/t}')
  fi
  counts=""
  for f in "$run"/predictions/*.jsonl; do
    if [ -f "$f" ]; then counts="$counts $(basename "$f" .jsonl)=$(wc -l < "$f")"; fi
  done
  echo "$(date -u +%s) $(cut -d' ' -f1-3 /proc/loadavg) pid=$pid cpu=${cpu:-NA}$counts" >> "$log"
  sleep 20
done
echo "$(date -u +%s) driver exited" >> "$log"
