#!/bin/bash
# One device call (issues 57 item 4, 65 and 74 item 4), under 8 minutes in all; tested on the CPU with
#   DEVICE=cpu SIZE=tiny BATCHES=2 PROCESSES=2 MIXES=2x2 OUT=/tmp/gpucall bash measurements/gpu-batches-prepared/call.sh
# 0. the dry run: the same bench at size=tiny on this device (every way of a level: 1x1, 1x2, 2x1, 2x2), into
#    $OUT/dry; if it fails, nothing else runs (the device time is kept for a fixed rerun);
# 1. runs per hour of FedSiam-D at Table 2's protocol (bench cases=runs_per_hour): the baseline 1 process x 1 run
#    first, then batches of BATCHES runs in one process, PROCESSES solo processes, MIXES processes x batch; each
#    level's peak memory beside the memory model's bytes, and its store writes. The record, $OUT/rph/runs_per_hour.json,
#    is rewritten after every level: a timeout keeps the levels done ("complete": false);
# 2. optional (TRAIN_S=0, the default, skips it): FedSiam Table 5 MNIST's Non-IID cells toward 10 seeds with the
#    time left, FSSL_BATCH runs a batch, their records tarred into $OUT/runs.tgz to be committed under runs/.
# Time: unpacking and nvidia-smi ~10 s + DRY_TIMEOUT 90 s + RPH_TIMEOUT 330 s = 430 s; each step's timeout is also
# cut to what BUDGET_S (470 s) leaves, so training, when asked for, only takes what is left of it.
# Data travel compressed in an ignored folder named in `carry` (.gpu3/mnist.tar.gz, as the earlier calls).
set -u
export PYTHONUNBUFFERED=1 FSSL_PROJECT=$PWD PYTHONPATH=$PWD
if [ -f .gpu3/mnist.tar.gz ]; then
  export FSSL_DATA=/tmp/data
  mkdir -p /tmp/data && tar xzf .gpu3/mnist.tar.gz -C /tmp/data
fi
DEVICE=${DEVICE:-cuda}
BUDGET_S=${BUDGET_S:-470}
left() {   # seconds a step may take: its own limit, cut to what the budget leaves (10 s kept for the tar)
  local cap=$((BUDGET_S - SECONDS - 10))
  echo $(( $1 < cap ? $1 : (cap > 1 ? cap : 1) ))
}
mkdir -p "$OUT/dry" "$OUT/rph"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || echo "no nvidia-smi") > "$OUT/device.txt" 2>&1

timeout $(left ${DRY_TIMEOUT:-90}) python3 -m fssl_core bench cases=runs_per_hour device=$DEVICE size=tiny \
  batches=2 processes=2 mixes=2x2 out=$OUT/dry > "$OUT/dry/bench.log" 2>&1
rc=$?
echo "[call] dry run rc $rc at ${SECONDS}s"; tail -6 "$OUT/dry/bench.log"
if [ $rc -ne 0 ]; then
  echo "[call] the dry run failed: nothing measured (see $OUT/dry/bench.log)"
  exit 1
fi

timeout $(left ${RPH_TIMEOUT:-330}) python3 -m fssl_core bench cases=runs_per_hour device=$DEVICE size=${SIZE:-full} \
  batches=${BATCHES:-16,64} processes=${PROCESSES:-16} mixes=${MIXES:-4x16} out=$OUT/rph > "$OUT/rph/bench.log" 2>&1
echo "[call] runs per hour rc $? at ${SECONDS}s (124: cut by its timeout; the levels done are in the record)"
tail -8 "$OUT/rph/bench.log"

TRAIN_S=${TRAIN_S:-0}
if [ "$TRAIN_S" -gt 0 ]; then
  export FSSL_RUNS=/tmp/runs FSSL_BATCH=${FSSL_BATCH:-16} FSSL_WORKERS=1
  timeout $(left $TRAIN_S) python3 -m fssl_core reproduce --profile paper --only fedsiam_table5 --train-only --device $DEVICE \
    --param 'datasets=["mnist"]' --param 'settings=["noniid1","noniid2","noniid3"]' \
    --param 'seeds=[1234,1235,1236,1237,1238,1239,1240,1241,1242,1243]' \
    --param 'methods=["fedsiam_d","fedsiam_mt","fedavg","fedavg_plus","fedsem","fedfixmatch","fedmatch"]' \
    > "$OUT/train.log" 2>&1
  echo "[call] training rc $? at ${SECONDS}s (124: cut by its timeout; finished runs are kept)"
  tar czf "$OUT/runs.tgz" --exclude=checkpoint.pt --exclude=.lock --exclude='.*.tmp' --exclude='damaged-*' -C /tmp runs 2>/dev/null
  echo "[call] $(find /tmp/runs -name result.json 2>/dev/null | wc -l) finished runs in $OUT/runs.tgz"
fi
echo "[call] done at ${SECONDS}s"
