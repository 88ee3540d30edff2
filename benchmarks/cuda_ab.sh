#!/usr/bin/env bash
# Two source trees' GPU training step, interleaved, on a machine with an NVIDIA GPU:
#   bash benchmarks/cuda_ab.sh OLD_SRC NEW_SRC [ROUNDS] [BENCH FLAGS...]
# e.g. after `mkdir -p .devdata/old && git archive HEAD src | tar -x -C .devdata/old`:
#   bash benchmarks/cuda_ab.sh .devdata/old/src src 3
# Each round runs `scalegnn bench step --device cuda --repeat 9 --threads 4` (plus the flags
# given) once per tree, the order alternating from round to round, then profiles each tree's
# step once (benchmarks/cuda_profile.py, its last JSON line). Prints one line per run and the
# medians; the full JSON lines go to $LOGS (default /tmp/cuda_ab), copied to $OUT when set.
set -u
OLD=$1 NEW=$2 ROUNDS=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
LOGS=${LOGS:-/tmp/cuda_ab}
mkdir -p "$LOGS" && : > "$LOGS/runs.jsonl"
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba_cache}
DEV=${DEV:-cuda}   # DEV=cpu: a dry run where there is no GPU
run() {   # run NAME SRC [FLAGS]: one bench step, its JSON line tagged with NAME
    local name=$1 src=$2
    shift 2
    PYTHONPATH=$src timeout 240 python3 -m scalegnn bench step --device "$DEV" --repeat 9 \
        --threads 4 "$@" 2>"$LOGS/$name.err" | tail -n 1 \
        | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); r['tree']='$name'; print(json.dumps(r))" \
        >> "$LOGS/runs.jsonl" || echo "$name failed: $(tail -n 3 "$LOGS/$name.err")"
}
for ((i = 0; i < ROUNDS; i++)); do
    if ((i % 2 == 0)); then run old "$OLD" "$@"; run new "$NEW" "$@"
    else run new "$NEW" "$@"; run old "$OLD" "$@"; fi
done
for tree in old new; do
    src=$OLD; [ $tree = new ] && src=$NEW
    PYTHONPATH=$src timeout 240 python3 benchmarks/cuda_profile.py --device "$DEV" --threads 4 "$@" \
        > "$LOGS/profile_$tree.txt" 2>&1
    echo "profile $tree $(tail -n 1 "$LOGS/profile_$tree.txt")"
done
python3 - "$LOGS/runs.jsonl" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
keys = ("iteration_ms", "iteration_gpu_ms", "transfer_ms", "transfer_bytes", "cpu_per_iteration",
        "cuda_peak_mb")
for r in rows:
    print(r["tree"], " ".join(f"{k}={r.get(k)}" for k in keys))
for tree in ("old", "new"):
    mine = [r for r in rows if r["tree"] == tree]
    if mine:
        print("median", tree, " ".join(
            f"{k}={statistics.median(r[k] for r in mine):.4g}" for k in keys
            if all(isinstance(r.get(k), (int, float)) for r in mine)))
EOF
if [ -n "${OUT:-}" ]; then cp "$LOGS"/* "$OUT"/ 2>/dev/null; fi
