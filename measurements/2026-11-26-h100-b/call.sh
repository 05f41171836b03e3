#!/bin/bash
# One device call: gpu-check's five steps on the otherwise idle GPU (budget 420 s), then FedSiam-D's
# committed CPU paper-protocol run (Table 2 protocol, 50 rounds) retrained on CUDA in exact FP32 and
# compared round by round. Everything written goes under $OUT.
set -u
export PYTHONUNBUFFERED=1 FSSL_DATA=/tmp/data FSSL_PROJECT=$PWD PYTHONPATH=$PWD
mkdir -p /tmp/data && tar xzf .gpu3/mnist.tar.gz -C /tmp/data
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/nvidia_smi.csv 2>&1
python3 -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'numpy', numpy.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')"
timeout ${CHECK_TIMEOUT:-470} python3 -m fssl_core gpu-check device=${DEVICE:-cuda} out=$OUT/check budget=${BUDGET:-420} ${STEPS:+steps=$STEPS} > $OUT/check.log 2>&1
echo "[call] gpu-check rc $? at ${SECONDS}s"
grep -E "^\[gpu-check" $OUT/check.log | tail -25
FSSL_RUNS=/tmp/cmp CMP_DEVICE=${DEVICE:-cuda} timeout ${CMP_TIMEOUT:-110} python3 .gpu3/compare_cpu_cuda.py ${CMP_RUN:-4f2419290c715e49} $OUT/cpu_vs_cuda.json > $OUT/cpu_vs_cuda.log 2>&1
echo "[call] CPU vs CUDA rc $? at ${SECONDS}s"
tail -3 $OUT/cpu_vs_cuda.log
tar czf $OUT/cmp_run.tgz --exclude=checkpoint.pt --exclude=.lock --exclude='.*.tmp' -C /tmp cmp 2>/dev/null
ls -la $OUT $OUT/check
