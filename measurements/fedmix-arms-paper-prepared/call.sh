#!/bin/bash
# Prepared for a device call: FedMix's arms at the paper protocol (studies/fedmix/arms.py --protocol paper:
# Fig. 8's cells on FedMatch's BN-free ResNet-9, E on the BatchNorm one, the first 60 rounds), the seeds in SEEDS side
# by side, then arms.csv and the run records tarred into $OUT (runs.tgz: no checkpoints; a run cut by TRAIN_S is lost).
# The carried data: mkdir -p .gpu3 && tar czf .gpu3/fmnist.tar.gz -C ../shared/data FashionMNIST   (carry: .gpu3)
# Tested on the CPU first (the wiring only: other run ids, one round on a sliver of the data):
#   DEVICE=cpu PRECISION=fp32 SEEDS=1 WORKERS=2 TRAIN_S=1200 OUT=/tmp/out \
#   SET="--set rounds=1 --set resplit_train=1200 --set resplit_test=200 --set server_labeled=100" \
#   bash measurements/fedmix-arms-paper-prepared/call.sh
set -u
export PYTHONUNBUFFERED=1 FSSL_PROJECT=$PWD PYTHONPATH=$PWD
if [ -f .gpu3/fmnist.tar.gz ]; then
  export FSSL_DATA=/tmp/data
  mkdir -p /tmp/data && tar xzf .gpu3/fmnist.tar.gz -C /tmp/data
fi
DEVICE=${DEVICE:-cuda}
ARMS=${ARMS_DIR:-/tmp/arms}
mkdir -p "$OUT" "$ARMS"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || echo "no nvidia-smi") > "$OUT/device.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__)" >> "$OUT/device.txt" 2>&1
COMMON="--protocol paper --device $DEVICE --precision ${PRECISION:-tf32} --seeds ${SEEDS:-1} ${SET:-}"
timeout ${TRAIN_S:-480} python3 -m studies.fedmix.arms train "$ARMS" $COMMON --workers ${WORKERS:-6} \
  > "$OUT/train.log" 2>&1
echo "[call] training rc $? at ${SECONDS}s (124: cut by TRAIN_S; finished runs are kept)"
python3 -m studies.fedmix.arms summary "$ARMS" $COMMON > "$OUT/summary.log" 2>&1
cp "$ARMS/arms.csv" "$OUT/" 2>/dev/null
tar czf "$OUT/runs.tgz" --exclude=checkpoint.pt --exclude=.lock --exclude='.*.tmp' --exclude='damaged-*' -C "$ARMS" runs
echo "[call] $(find "$ARMS/runs" -name result.json | wc -l) finished run(s)"; tail -4 "$OUT/summary.log"
