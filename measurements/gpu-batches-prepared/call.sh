#!/bin/bash
# Prepared for the next device call (issues 57 item 4 and 65): one command, tested on the CPU first with
#   DEVICE=cpu SIZE=tiny BATCHES=1,2 PROCESSES=1,2 TRAIN_S=60 OUT=/tmp/out bash measurements/gpu-batches-prepared/call.sh
# 1. runs per hour of FedSiam-D at Table 2's protocol: solo processes (1, 16 at once) against batches of 1, 16 and
#    64 runs in one process (bench cases=runs_per_hour; its record goes to $OUT/rph/runs_per_hour.json);
# 2. with the time left (TRAIN_S), FedSiam Table 5 MNIST's Non-IID cells toward 10 seeds on the device, FSSL_BATCH runs a
#    batch (FSSL_BATCH), their records tarred into $OUT/runs.tgz to be committed under runs/.
# Data travel compressed in an ignored folder named in `carry` (.gpu3/mnist.tar.gz, as the earlier calls).
set -u
export PYTHONUNBUFFERED=1 FSSL_PROJECT=$PWD PYTHONPATH=$PWD
if [ -f .gpu3/mnist.tar.gz ]; then
  export FSSL_DATA=/tmp/data
  mkdir -p /tmp/data && tar xzf .gpu3/mnist.tar.gz -C /tmp/data
fi
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT/rph"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || echo "no nvidia-smi") > "$OUT/device.txt" 2>&1
timeout ${RPH_TIMEOUT:-330} python3 -m fssl_core bench cases=runs_per_hour device=$DEVICE size=${SIZE:-full} \
  batches=${BATCHES:-1,16,64} processes=${PROCESSES:-1,16} out=$OUT/rph > "$OUT/rph/bench.log" 2>&1
echo "[call] runs per hour rc $? at ${SECONDS}s"; tail -8 "$OUT/rph/bench.log"
export FSSL_RUNS=/tmp/runs FSSL_BATCH=${FSSL_BATCH:-16} FSSL_WORKERS=1
timeout ${TRAIN_S:-200} python3 -m fssl_core reproduce --profile paper --only fedsiam_table5 --train-only --device $DEVICE \
  --param 'datasets=["mnist"]' --param 'settings=["noniid1","noniid2","noniid3"]' \
  --param 'seeds=[1234,1235,1236,1237,1238,1239,1240,1241,1242,1243]' \
  --param 'methods=["fedsiam_d","fedsiam_mt","fedavg","fedavg_plus","fedsem","fedfixmatch","fedmatch"]' \
  > "$OUT/train.log" 2>&1
echo "[call] training rc $? at ${SECONDS}s (124: cut by TRAIN_S; finished runs are kept)"
tar czf "$OUT/runs.tgz" --exclude=checkpoint.pt --exclude=.lock --exclude='.*.tmp' --exclude='damaged-*' -C /tmp runs 2>/dev/null
ls /tmp/runs 2>/dev/null | wc -l; grep -c result.json <(find /tmp/runs -name result.json) 2>/dev/null
