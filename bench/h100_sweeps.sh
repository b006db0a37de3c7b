#!/usr/bin/env bash
# The H100 sweeps behind bench/results/h100 (run on the GPU machine after .device/setup.sh and
# bench/device_env.sh, with gpuagg_bench built in build/h100). Writes CSVs to $OUT.
# Stage 1 (search spaces, 2^27 rows, every configuration): space_lo / space_hi.
# Stage 2: the live tuner against exhaustive search; baselines; distributions; host input.
set -uo pipefail
bench=build/h100/bench/gpuagg_bench
stage=${1:-2}
if [[ $stage == 3 ]]; then
  # The speed work: whole queries with pooled buffers and 4 blocks in flight; WORKGROUPLOCAL
  # with a partial local table for a heavy hitter; and the gaps of stage 2.
  tmp=$(mktemp -d); log=$OUT/stage3.log; deadline=$((SECONDS + ${2:-420}))
  step() { local limit=$1 name=$2; shift 2; local left=$((deadline - SECONDS)); ((left < limit)) && limit=$left
    ((limit <= 5)) && { echo "$name skipped" | tee -a $log; return; }
    timeout $limit "$@" >> $log 2>&1; echo "$name rc=$? after ${SECONDS}s" | tee -a $log; }
  step 70 pooled $bench --rows-log2 27 --groups-log2 4,10,16,20,24 --strategies workgroup_local,shared,direct \
    --configs sweep --probe-blocks 4 --reps 1 --query-reps 5 --in-flight 4 --csv $OUT/pooled_queries.csv
  step 60 heavy_local $bench --rows-log2 27 --groups-log2 12:28:4 --distribution heavy --strategies workgroup_local \
    --lenient --configs sweep --probe-blocks 4 --reps 1 --query-reps 3 --csv $OUT/heavy_local.csv
  step 60 baselines $bench --rows-log2 27 --groups-log2 24,26,28 --strategies sort_reduce,sort_atomics --reps 2 \
    --csv $OUT/baselines_c.csv
  step 60 sorted $bench --rows-log2 27 --groups-log2 16:28:4 --distribution sorted --strategies shared,direct \
    --configs sweep --probe-blocks 4 --reps 1 --query-reps 3 --csv $OUT/distributions_c.csv
  step 90 peers_cpu python3 .device/peers.py --rows-log2 27 --no-gpu --cpu --reps 2 --groups-log2 16,20,24
  grep -E "^[0-9]+,(pyarrow|pandas)" $log > $OUT/peers_cpu_c.csv || true
  exit
fi
if [[ $stage == 4 ]]; then
  # Gaps of stages 2 and 3 (cut by time limits), and value types other than uint32.
  tmp=$(mktemp -d); log=$OUT/stage4.log; deadline=$((SECONDS + ${2:-420}))
  step() { local limit=$1 name=$2; shift 2; local left=$((deadline - SECONDS)); ((left < limit)) && limit=$left
    ((limit <= 5)) && { echo "$name skipped" | tee -a $log; return; }
    timeout $limit "$@" >> $log 2>&1; echo "$name rc=$? after ${SECONDS}s" | tee -a $log; }
  step 150 baselines $bench --rows-log2 27 --groups-log2 24,26,28 --strategies sort_reduce,sort_atomics --reps 2 \
    --csv $OUT/baselines_d.csv
  step 90 sorted $bench --rows-log2 27 --groups-log2 24,28 --distribution sorted --strategies shared,direct \
    --configs sweep --probe-blocks 4 --reps 1 --query-reps 3 --csv $tmp/sorted.csv
  step 50 zipf $bench --rows-log2 27 --groups-log2 28 --distribution zipf --strategies shared,direct \
    --configs sweep --probe-blocks 4 --reps 1 --query-reps 3 --csv $tmp/zipf.csv
  awk 'FNR > 1 || NR == 1' $tmp/sorted.csv $tmp/zipf.csv > $OUT/distributions_d.csv
  for value in int64 double; do
    step 60 $value $bench --rows-log2 27 --groups-log2 4,16,24 --value-type $value \
      --strategies workgroup_local,shared,direct --configs default --reps 1 --query-reps 3 --csv $tmp/values_$value.csv
  done
  awk 'FNR > 1 || NR == 1' $tmp/values_*.csv > $OUT/value_types.csv
  exit
fi
if [[ $stage == 1 ]]; then
  timeout 470 $bench --rows-log2 27 --groups-log2 0:14:2 --strategies shared,independent,workgroup_local,direct \
    --configs all --probe-blocks 8 --reps 1 --query-reps 5 --csv $OUT/space_lo.csv --blocks-csv $OUT/space_lo_blocks.csv
  timeout 540 $bench --rows-log2 27 --groups-log2 16:28:2 --strategies shared,direct --configs all --probe-blocks 8 \
    --reps 1 --query-reps 5 --csv $OUT/space_hi.csv --blocks-csv $OUT/space_hi_blocks.csv
  exit
fi
# At most 8 files come back: steps write to $tmp, then the CSVs of a kind are joined. Every
# step gets its own time limit, and the whole stage ends by $deadline (seconds from now).
tmp=$(mktemp -d)
log=$OUT/sweeps.log
deadline=$((SECONDS + ${2:-540}))
join_csv() { local out=$1; shift; awk 'FNR > 1 || NR == 1' "$@" > "$out"; }
step() {  # step LIMIT NAME COMMAND...
  local limit=$1 name=$2; shift 2
  local left=$((deadline - SECONDS)); ((left < limit)) && limit=$left
  ((limit <= 5)) && { echo "$name skipped: no time left" | tee -a $log; return; }
  timeout $limit "$@" >> $log 2>&1
  echo "$name rc=$? after ${SECONDS}s" | tee -a $log
}
# The tuner inside real queries (4 MiB blocks: 128 blocks to tune on), after exhaustive search
# over the same blocks in the same run.
step 150 tuned $bench --rows-log2 27 --block-mib 4 --groups-log2 0:28:4 \
  --strategies shared,independent,workgroup_local,tuned --configs all --probe-blocks 4 --reps 1 --tuned-reps 3 \
  --no-pipelined --csv $OUT/tuned_space.csv --tuned-csv $OUT/tuned_live.csv
step 90 baselines $bench --rows-log2 27 --groups-log2 0:28:4 --strategies sort_reduce,sort_atomics --reps 2 \
  --csv $OUT/baselines.csv
for dist in zipf heavy sorted; do
  step 60 $dist $bench --rows-log2 27 --groups-log2 0:28:4 --distribution $dist \
    --strategies shared,workgroup_local,direct --configs sweep --probe-blocks 4 --reps 1 --query-reps 3 \
    --csv $tmp/dist_$dist.csv
done
join_csv $OUT/distributions.csv $tmp/dist_*.csv
for input in pinned pageable; do
  step 60 $input $bench --rows-log2 27 --groups-log2 0:28:4 --input $input --strategies shared,direct \
    --configs default --reps 1 --query-reps 3 --csv $tmp/input_$input.csv
done
join_csv $OUT/host_input.csv $tmp/input_*.csv
# The CPU peers (pyarrow, pandas on the host's cores), as long as time is left.
step 60 peers_cpu python3 .device/peers.py --rows-log2 27 --no-gpu --cpu --reps 2 --groups-log2 0,8,16,24
grep -E "^[0-9]+,(pyarrow|pandas)" $log > $OUT/peers_cpu.csv || true
