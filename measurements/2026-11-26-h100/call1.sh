#!/bin/bash
# Device call 1: Fig. 8's four paper-protocol runs (TF32) side by side in their own session (they
# outlive this call on a warm machine), and beside them gpu-check's correctness steps; wait for the
# runs until the deadline, then bring back every record written so far.
set -u
DEADLINE=${DEADLINE:-540} DEVICE=${DEVICE:-cuda} PRECISION=${PRECISION:-tf32} PROFILE=${PROFILE:-paper}
RUNS=${RUNS:-/root/fig8runs}
export PYTHONUNBUFFERED=1 FSSL_DATA=/tmp/data FSSL_PROJECT=$PWD
mkdir -p /tmp/data $RUNS && tar xzf .gpu/data.tar.gz -C /tmp/data
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/nvidia_smi.csv 2>&1
python3 -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'numpy', numpy.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')"
FSSL_RUNS=$RUNS setsid python3 -m studies.fedmix.train_fig8 --device $DEVICE --precision $PRECISION \
    --profile $PROFILE > $RUNS/../fig8.log 2>&1 < /dev/null &
echo $! > $RUNS.pid
echo "[call1] fig8 started at ${SECONDS}s"
sleep 20
timeout 200 python3 -m fssl_core gpu-check device=$DEVICE steps=environment,cohort,resume out=$OUT/check_a budget=190 \
    > $OUT/check_a.log 2>&1
echo "[call1] gpu-check correctness steps done at ${SECONDS}s (rc $?)"
FSSL_RUNS=/root/cmp timeout 240 python3 .gpu/compare_cpu_cuda.py ${CMP_RUN:-4f2419290c715e49} $OUT/cpu_vs_cuda.json \
    > $OUT/cpu_vs_cuda.log 2>&1
echo "[call1] CPU vs CUDA comparison done at ${SECONDS}s (rc $?)"
while kill -0 $(cat $RUNS.pid) 2>/dev/null && [ $SECONDS -lt $DEADLINE ]; do sleep 5; done
echo "[call1] fig8 running: $(kill -0 $(cat $RUNS.pid) 2>/dev/null && echo still || echo no longer) at ${SECONDS}s"
tr '\r' '\n' < $RUNS/../fig8.log | grep -v '^runs ' | tail -40
tr '\r' '\n' < $RUNS/../fig8.log | tail -3
tar czf $OUT/fig8_runs.tgz --exclude=checkpoint.pt --exclude=.lock --exclude='.*.tmp' -C "$(dirname $RUNS)" "$(basename $RUNS)"
ls -la $OUT
