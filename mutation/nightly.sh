#!/usr/bin/env bash
# The nightly lane on one machine, in one command (the local form of .github/workflows/nightly.yml):
#   1. the stateful machine under HypoFuzz (nightly profile, its example database),
#   2. sessionspec conform with the nightly profile against our incremental store,
#   3. the mutation lane: a sample of live/ (conform, the machine, the fast forms) and of the storage readers.
# Usage: mutation/nightly.sh          (about 30 minutes on 2 cores; every phase is time-boxed)
# Knobs: FUZZ_SECONDS (600), CONFORM_SECONDS (600), LIVE_MUTANTS (40), STORAGE_MUTANTS (10),
#        LIVE_MINUTES (20), STORAGE_MINUTES (10), SEED (today's date), OUT (mutation/results/nightly-SEED), WORKERS (2).
# Everything it did and found is in $OUT/SUMMARY.md; exit 1 if any phase found a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
SEED=${SEED:-$(date +%Y%m%d)}
OUT=${OUT:-mutation/results/nightly-$SEED}
FUZZ_SECONDS=${FUZZ_SECONDS:-600}
CONFORM_SECONDS=${CONFORM_SECONDS:-600}
LIVE_MUTANTS=${LIVE_MUTANTS:-40}
STORAGE_MUTANTS=${STORAGE_MUTANTS:-10}
WORKERS=${WORKERS:-2}
LIVE_MINUTES=${LIVE_MINUTES:-20}
STORAGE_MINUTES=${STORAGE_MINUTES:-10}
mkdir -p "$OUT"
export SESSIONSPEC_HYPOTHESIS_DB=${SESSIONSPEC_HYPOTHESIS_DB:-.hypothesis/examples}
export SESSIONSPEC_TRACE_DIR="$OUT/traces"
export PYTHONPATH="$PWD/reference${PYTHONPATH:+:$PYTHONPATH}"
summary="$OUT/SUMMARY.md"
status=0
started=$(date +%s)
echo "# Nightly lane, seed $SEED, $(date '+%Y-%m-%d %H:%M'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" > "$summary"

phase() {  # phase NAME SECONDS-ALLOWED COMMAND... : run, keep the log, note the outcome and the time taken
  local name=$1 limit=$2; shift 2
  local begin=$(date +%s) code=0
  echo "== $name ($(date '+%H:%M'), up to ${limit}s)"
  timeout --signal=INT --kill-after=60 "$limit" nice -n 10 "$@" > "$OUT/$name.log" 2>&1 || code=$?
  local took=$(( $(date +%s) - begin ))
  # timeout ends the endless fuzzer with 124 (or 130 after SIGINT, 137 when its hub ignores SIGINT for the minute of
  # grace and is killed): its budget, not a failure. A failure it finds ends it early, with 1.
  if [ "$name" = fuzz ] && { [ "$code" -eq 124 ] || [ "$code" -eq 130 ] || [ "$code" -eq 137 ]; }; then code=0; fi
  [ "$code" -eq 0 ] || status=1
  printf -- "- **%s**: exit %s after %ss: \`%s\`\n" "$name" "$code" "$took" "$*" >> "$summary"
  tail -n 3 "$OUT/$name.log" | sed 's/^/    /' >> "$summary"
}

phase fuzz "$FUZZ_SECONDS" env HYPOTHESIS_PROFILE=nightly hypothesis fuzz --no-dashboard -n "$WORKERS" -- tests/test_machine.py
phase conform $(( CONFORM_SECONDS + 300 )) python -m sessionspec conform --profile nightly --seconds "$CONFORM_SECONDS" \
  --json "$OUT/conform.json" --traces "$OUT/traces" -- python -m sessionspec serve --impl live
phase mutation-live 7200 python mutation/run.py --target live --sample "$LIVE_MUTANTS" --seed "$SEED" --out "$OUT/live" --minutes "$LIVE_MINUTES" \
  --require-conform 0.95 --require-machine 0.98
phase mutation-storage 7200 python mutation/run.py --target storage --sample "$STORAGE_MUTANTS" --seed "$SEED" --out "$OUT/storage" --minutes "$STORAGE_MINUTES" \
  --require 0.95

echo "- total: $(( $(date +%s) - started ))s; load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$summary"
cat "$summary"
exit $status
