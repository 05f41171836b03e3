#!/bin/bash
# Device call 2 (same warm machine): let Fig. 8's runs finish, then gpu-check's timing steps on the
# otherwise idle GPU, within what is left; bring back the records and the reports.
set -u
LIMIT=${LIMIT:-200} RUNS=${RUNS:-/root/fig8runs}
export PYTHONUNBUFFERED=1 FSSL_DATA=/tmp/data FSSL_PROJECT=$PWD
while kill -0 $(cat $RUNS.pid) 2>/dev/null && [ $SECONDS -lt $((LIMIT - 20)) ]; do sleep 3; done
echo "[call2] fig8 running: $(kill -0 $(cat $RUNS.pid) 2>/dev/null && echo still || echo no longer) at ${SECONDS}s"
tr '\r' '\n' < $RUNS/../fig8.log | grep '^\[fig8\]' | tail -8
tr '\r' '\n' < $RUNS/../fig8.log | tail -2
tar czf $OUT/fig8_runs.tgz --exclude=checkpoint.pt --exclude=.lock --exclude='.*.tmp' -C "$(dirname $RUNS)" "$(basename $RUNS)"
LEFT=$((LIMIT - SECONDS - 45))
if [ $LEFT -gt 40 ] && ! kill -0 $(cat $RUNS.pid) 2>/dev/null; then
  timeout $((LEFT + 35)) python3 -m fssl_core gpu-check device=cuda steps=environment,bench,throughput \
      out=$OUT/check_b budget=$LEFT > $OUT/check_b.log 2>&1
  echo "[call2] gpu-check timing steps rc $? at ${SECONDS}s"
  tail -5 $OUT/check_b.log
fi
ls -la $OUT
