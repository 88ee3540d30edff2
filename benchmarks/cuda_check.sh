#!/usr/bin/env bash
# The CUDA path end to end, on a machine with an NVIDIA GPU and a CUDA build of torch (the
# project's CI has none). Run from the repository root; logs go to $LOGS (default
# /tmp/cuda_check), packed after each step into $OUT/logs.tgz when OUT is set.
# Needs Cora as .devdata/cora and a 1-part plan of it in .devdata/cora1, in a folder git
# ignores: `bash benchmarks/cuda_check.sh --prepare` makes them here from ../shared/data/cora
# (the GPU machine cannot reach ../shared; carry .devdata with the call). STEPS="check train ..."
# runs only the steps named (default: all).
set -u
if [ "${1:-}" = "--prepare" ]; then
    mkdir -p .devdata && rm -rf .devdata/cora .devdata/cora1 && cp -r ../shared/data/cora .devdata/ \
        && PYTHONPATH=$PWD/src ${PYTHON:-python3} -m scalegnn partition make .devdata/cora \
            --parts 1 --method rp --out .devdata/cora1 > /dev/null \
        && { grep -qxF "/.devdata/" .git/info/exclude 2>/dev/null \
             || echo "/.devdata/" >> .git/info/exclude; }
    exit $?
fi
LOGS=${LOGS:-/tmp/cuda_check}
mkdir -p "$LOGS"
DEV=${DEV:-cuda}   # DEV=cpu: a dry run of this script where there is no GPU
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba_cache
SG="python3 -m scalegnn"
step() {   # step NAME SECONDS COMMAND...: run, log to $LOGS/NAME.log, record status and time
    local name=$1 limit=$2; shift 2
    if [ -n "${STEPS:-}" ] && [[ " $STEPS " != *" $name "* ]]; then return; fi
    local t0=$SECONDS
    timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
    local rc=$?
    echo "$name rc=$rc $((SECONDS - t0))s" | tee -a "$LOGS/summary.txt"
    if [ -n "${OUT:-}" ]; then tar czf "$OUT/logs.tgz" -C "$LOGS" .; fi
}
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c "import torch, numba, numpy, scipy, sys; print(sys.version.split()[0], 'torch',
torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available(), 'numba',
numba.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__)"
  nproc; } 2>&1 | tee "$LOGS/env.txt"

step dist_data 90 $SG dist-train --nprocs 1 --device $DEV --data .devdata/cora --config configs/shared/cora_rw.yml --set distributed.mode=data --seed 0 --no-progress --out /tmp/r_dp
step dist_full 90 $SG dist-train --nprocs 1 --device $DEV --plan .devdata/cora1 --config configs/shared/cora_rw.yml --seed 0 --no-progress --out /tmp/r_df
step check 150 python3 benchmarks/cuda_check.py --device $DEV
step bench_step 90 $SG bench step --device $DEV --repeat 9 --threads 4
step profile 90 python3 benchmarks/cuda_profile.py --device $DEV --threads 4
step shadow 90 $SG train --device $DEV --data .devdata/cora --config configs/shared/cora_shadow.yml --seed 0 --no-progress --out /tmp/r_sh
step predict 60 $SG predict /tmp/r_sh --device $DEV --split test --out /tmp/p.npy
step train 150 $SG train --device $DEV --no-progress --out /tmp/r_syn
step pytest 90 python3 -m pytest -q -p no:cacheprovider tests/test_ops_spmm.py tests/test_ops_bench.py -k cuda
step pytest_ddp 60 python3 -m pytest -q -p no:cacheprovider tests/test_dist_ddp.py

echo "== tails"
for f in "$LOGS"/*.log; do echo "--- $(basename "$f")"; tail -n 6 "$f" | cut -c1-400; done
echo "== summary"; cat "$LOGS/env.txt" "$LOGS/summary.txt"
