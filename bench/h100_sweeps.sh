#!/usr/bin/env bash
# The H100 sweeps behind bench/results/h100 (run on the GPU machine after .device/setup.sh and
# bench/device_env.sh, with gpuagg_bench built in build/h100). Writes CSVs to $OUT.
# Stage 1 (search spaces, 2^27 rows, every configuration): space_lo / space_hi.
# Stage 2: the live tuner against exhaustive search; baselines; distributions; host input.
set -uo pipefail
bench=build/h100/bench/gpuagg_bench
stage=${1:-2}
# At most 8 files come back: steps write to $tmp, then the CSVs of a kind are joined. Every
# step gets its own time limit, and each stage ends by its $deadline (the second argument, in
# seconds from now; each stage has a default) and logs to its $log.
tmp=$(mktemp -d)
join_csv() { local out=$1; shift; awk 'FNR > 1 || NR == 1' "$@" > "$out"; }
peers_csv() { grep -E "^(groups|[0-9]+,torch)" $log | awk '!seen[$0]++' > "$1"; }  # peers.py's CSV lines in $log
step() {  # step LIMIT NAME COMMAND...
  local limit=$1 name=$2; shift 2
  local left=$((deadline - SECONDS)); ((left < limit)) && limit=$left
  ((limit <= 5)) && { echo "$name skipped: no time left" | tee -a $log; return; }
  timeout $limit "$@" >> $log 2>&1
  echo "$name rc=$? after ${SECONDS}s" | tee -a $log
}
if [[ $stage == 3 ]]; then
  # The speed work: whole queries with pooled buffers and 4 blocks in flight; WORKGROUPLOCAL
  # with a partial local table for a heavy hitter; and the gaps of stage 2.
  log=$OUT/stage3.log; deadline=$((SECONDS + ${2:-420}))
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
if [[ $stage == 5 ]]; then
  # Speed work, second round: registers of each AGGREGATE kernel; WORKGROUPLOCAL's replicated
  # local tables (automatic copies against 1) at three block sizes; host input from pinned
  # arrays and pageable vectors; the PyTorch peers of the same shape.
  log=$OUT/stage5.log; deadline=$((SECONDS + ${2:-420}))
  GPUAGG_BUILD_OPTIONS=-cl-nv-verbose GPUAGG_SHOW_BUILD_LOG=1 timeout 60 $bench --rows-log2 20 --groups-log2 4 \
    --strategies workgroup_local,shared,independent --configs default --reps 1 --query-reps 1 > $tmp/regs.txt 2>&1
  grep -iE "ptxas|registers|spill|bytes stack|build log" $tmp/regs.txt > $OUT/registers.log
  step 60 peers python3 .device/peers.py --rows-log2 27 --reps 3 --groups-log2 0,4,10,16,20,24
  peers_csv $OUT/peers_gpu_5.csv
  for mib in 16 64 256; do for copies in 0 1; do
    step 60 wgl_${mib}_${copies} $bench --rows-log2 27 --groups-log2 0,4,10 --strategies workgroup_local,direct \
      --configs 1x256,2x256,4x256,8x256 --probe-blocks 4 --reps 1 --query-reps 3 --in-flight 4 --block-mib $mib \
      --local-copies $copies --csv $tmp/wgl_${mib}_${copies}.csv
  done; done
  join_csv $OUT/wgl_copies_blocks.csv $tmp/wgl_*.csv
  for input in pinned pageable; do
    step 60 host_$input $bench --rows-log2 27 --groups-log2 4,16 --strategies default --configs default --reps 1 \
      --query-reps 3 --in-flight 4 --input $input --csv $tmp/host_$input.csv
  done
  join_csv $OUT/host_input_5.csv $tmp/host_*.csv
  exit
fi
if [[ $stage == 6 ]]; then
  # Speed work, third round: four rows in flight per work item (GPUAGG_FOR_ROWS) at 64 and
  # 256 MiB blocks; SHARED at high cardinality; the staging copy's threads for pageable input.
  log=$OUT/stage6.log; deadline=$((SECONDS + ${2:-300}))
  GPUAGG_BUILD_OPTIONS=-cl-nv-verbose GPUAGG_SHOW_BUILD_LOG=1 timeout 60 $bench --rows-log2 20 --groups-log2 4 \
    --strategies workgroup_local,shared --configs default --reps 1 --query-reps 1 > $tmp/regs.txt 2>&1
  grep -iE "ptxas|registers|spill|bytes stack|build log" $tmp/regs.txt > $OUT/registers_6.log
  for mib in 64 256; do
    step 50 low_$mib $bench --rows-log2 27 --groups-log2 0,4,10 --strategies workgroup_local,direct \
      --configs 4x256,8x256,16x256 --probe-blocks 4 --reps 1 --query-reps 3 --block-mib $mib --csv $tmp/low_$mib.csv
  done
  step 90 high $bench --rows-log2 27 --groups-log2 12,16,20,24 --strategies shared,direct \
    --configs 1x1024,2x1024,4x512,8x256,16x256 --probe-blocks 4 --reps 1 --query-reps 3 --csv $tmp/high.csv
  join_csv $OUT/unrolled.csv $tmp/low_*.csv $tmp/high.csv
  for threads in 8 16; do
    step 40 pageable_$threads $bench --rows-log2 27 --groups-log2 4 --strategies default --configs default --reps 1 \
      --query-reps 3 --in-flight 4 --input pageable --copy-threads $threads --csv $tmp/pageable_$threads.csv
  done
  join_csv $OUT/pageable_threads.csv $tmp/pageable_*.csv
  exit
fi
if [[ $stage == 7 ]]; then
  # The speed targets in one lease: PyTorch peers at every power of two, then gpuagg (hashing,
  # direct addressing, sort + reduce_by_key) at the same group counts with --peers; skewed keys;
  # host input. Needs gpuagg_bench built (GPUAGG_BENCH_ONLY_UINT32=ON suffices).
  log=$OUT/stage7.log; deadline=$((SECONDS + ${2:-540}))
  step 150 peers python3 .device/peers.py --rows-log2 27 --reps 3 --groups-log2 $(seq -s, 0 28)
  peers_csv $OUT/peers_gpu_7.csv
  step 230 uniform $bench --rows-log2 27 --groups-log2 0:28 --strategies workgroup_local,shared,direct,sort_reduce \
    --configs 4x256,16x256,4x512,16x512,1x1024 --probe-blocks 4 --reps 1 --query-reps 3 \
    --peers $OUT/peers_gpu_7.csv --csv $OUT/targets_uniform.csv
  for dist in zipf heavy; do
    step 60 $dist $bench --rows-log2 27 --groups-log2 4,10,16,20,24 --distribution $dist \
      --strategies default,workgroup_local,shared,direct --lenient --configs 4x256,16x256,4x512 --probe-blocks 4 \
      --reps 1 --query-reps 3 --csv $tmp/skew_$dist.csv
  done
  join_csv $OUT/skew_7.csv $tmp/skew_*.csv
  for input in pinned pageable; do
    step 50 host_$input $bench --rows-log2 27 --groups-log2 4,10,16,20 --strategies default --configs default \
      --reps 1 --query-reps 3 --in-flight 4 --input $input --csv $tmp/host_$input.csv
  done
  join_csv $OUT/host_7.csv $tmp/host_*.csv
  exit
fi
if [[ $stage == 8 ]]; then
  # Cacheable key reads in the hash tables against volatile ones (-DGPUAGG_VOLATILE_KEY_READS),
  # SHARED and direct addressing at 2^12 to 2^22 groups, WORKGROUPLOCAL at 2^0 to 2^10.
  log=$OUT/stage8.log; deadline=$((SECONDS + ${2:-300}))
  for mode in plain volatile; do
    [[ $mode == volatile ]] && export GPUAGG_BUILD_OPTIONS=-DGPUAGG_VOLATILE_KEY_READS
    step 80 high_$mode $bench --rows-log2 27 --groups-log2 12:22:2 --strategies shared,direct \
      --configs 4x256,16x256,4x512,1x1024 --probe-blocks 4 --reps 1 --query-reps 3 --csv $tmp/high_$mode.csv
    step 40 low_$mode $bench --rows-log2 27 --groups-log2 0,4,8,10 --strategies workgroup_local,direct \
      --configs 4x256,16x256 --probe-blocks 4 --reps 1 --query-reps 3 --csv $tmp/low_$mode.csv
    unset GPUAGG_BUILD_OPTIONS
  done
  for mode in plain volatile; do join_csv $OUT/key_reads_$mode.csv $tmp/high_$mode.csv $tmp/low_$mode.csv; done
  exit
fi
if [[ $stage == 9 ]]; then
  # The closing run of the speed work: every target in one lease (peers, uniform at every power
  # of two, skew, host input), the live tuner against exhaustive search, and a profile of
  # AGGREGATE if Nsight Compute is installed. Needs gpuagg_bench (GPUAGG_BENCH_ONLY_UINT32=ON
  # suffices).
  log=$OUT/stage9.log; deadline=$((SECONDS + ${2:-540}))
  step 30 peers python3 .device/peers.py --rows-log2 27 --reps 3 --groups-log2 $(seq -s, 0 28)
  peers_csv $OUT/peers_gpu_9.csv
  step 150 uniform $bench --rows-log2 27 --groups-log2 0:28 --strategies workgroup_local,shared,direct,sort_reduce \
    --configs 4x256,16x256,4x512,16x512,1x1024 --probe-blocks 4 --reps 1 --query-reps 3 \
    --peers $OUT/peers_gpu_9.csv --csv $OUT/targets_9.csv
  for dist in zipf heavy; do
    step 40 $dist $bench --rows-log2 27 --groups-log2 4,10,16,20,24 --distribution $dist \
      --strategies default,workgroup_local,shared,direct --lenient --configs 4x256,16x256,4x512 --probe-blocks 4 \
      --reps 1 --query-reps 3 --csv $tmp/skew_$dist.csv
  done
  join_csv $OUT/skew_9.csv $tmp/skew_*.csv
  step 25 host_pinned $bench --rows-log2 27 --groups-log2 4,10,16,20 --strategies default --configs default \
    --reps 1 --query-reps 3 --in-flight 4 --input pinned --csv $tmp/host_1.csv
  step 25 host_pageable $bench --rows-log2 27 --groups-log2 4,10,16,20 --strategies default --configs default \
    --reps 1 --query-reps 3 --in-flight 4 --input pageable --csv $tmp/host_2.csv
  step 25 host_pageable_16threads $bench --rows-log2 27 --groups-log2 4,16 --strategies default --configs default \
    --reps 1 --query-reps 3 --in-flight 4 --input pageable --copy-threads 16 --csv $tmp/host_3.csv
  join_csv $OUT/host_9.csv $tmp/host_*.csv
  step 150 tuned $bench --rows-log2 27 --groups-log2 0,4,8,12,16,20 --block-mib 4 \
    --strategies shared,independent,workgroup_local,tuned --configs all --probe-blocks 8 --reps 1 --no-pipelined \
    --tuned-reps 3 --tuned-csv $OUT/tuned_live_9.csv
  { command -v ncu nsys; ls /usr/local/cuda*/bin 2>/dev/null | head; } > $OUT/tools.txt 2>&1
  if command -v ncu > /dev/null; then
    for case in "10 workgroup_local" "22 shared"; do set -- $case
      step 45 ncu_$2 ncu --kernel-name gpuagg_aggregate --launch-count 1 --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section Occupancy $bench --rows-log2 26 --groups-log2 $1 --strategies $2 \
        --configs 16x256 --probe-blocks 1 --reps 1 --query-reps 1 --no-pipelined
    done
  fi
  exit
fi
if [[ $stage == 10 || $stage == 15 ]]; then
  # Every target in one lease: uniform at every power of two, zipf, heavy hitter and sorted runs.
  # Stage 10 measured the run cache; stage 15 the same after the bitmap, interleaved and
  # partitioned tables (NOTES attempts 11 to 13).
  log=$OUT/stage$stage.log; deadline=$((SECONDS + ${2:-400}))
  step 30 peers python3 .device/peers.py --rows-log2 27 --reps 3 --groups-log2 $(seq -s, 0 28)
  peers_csv $OUT/peers_gpu_$stage.csv
  step 170 uniform $bench --rows-log2 27 --groups-log2 0:28 --strategies workgroup_local,shared,direct,sort_reduce \
    --configs 4x256,16x256,4x512,16x512,1x1024 --probe-blocks 4 --reps 1 --query-reps 3 \
    --peers $OUT/peers_gpu_$stage.csv --csv $OUT/targets_$stage.csv
  for dist in zipf heavy sorted; do
    step 40 $dist $bench --rows-log2 27 --groups-log2 4,10,16,20,24 --distribution $dist \
      --strategies default,workgroup_local,shared,direct --lenient --configs 4x256,16x256,4x512 --probe-blocks 4 \
      --reps 1 --query-reps 3 --csv $tmp/skew_$dist.csv
  done
  join_csv $OUT/skew_$stage.csv $tmp/skew_*.csv
  exit
fi
if [[ $stage == 11 ]]; then
  # PARTITION (rows ordered into runs by table region before AGGREGATE) for tables larger than
  # the L2: off (1) against automatic (0) from 2^18 to 2^28 groups, then fixed run counts.
  log=$OUT/stage11.log; deadline=$((SECONDS + ${2:-420}))
  $bench --rows-log2 10 --groups-log2 4 --strategies shared --configs default --reps 1 --query-reps 1 2>&1 | head -1 >> $log
  step 40 peers python3 .device/peers.py --rows-log2 27 --reps 3 --groups-log2 $(seq -s, 18 28)
  peers_csv $OUT/peers_gpu_11.csv
  for parts in 1 0; do
    step 120 part_$parts $bench --rows-log2 27 --groups-log2 18:28 --strategies shared,direct \
      --configs 4x256,16x256,4x512 --probe-blocks 4 --reps 1 --query-reps 3 --partitions $parts \
      --peers $OUT/peers_gpu_11.csv --csv $tmp/part_$parts.csv
  done
  for parts in 8 32 128 512; do
    step 40 fixed_$parts $bench --rows-log2 27 --groups-log2 21,24,28 --strategies shared,direct --configs 16x256 \
      --probe-blocks 4 --reps 1 --query-reps 3 --partitions $parts --csv $tmp/fixed_$parts.csv
  done
  join_csv $OUT/partition_11.csv $tmp/part_*.csv $tmp/fixed_*.csv
  exit
fi
if [[ $stage == 12 ]]; then
  # Direct addressing's global table as a bitmap of used buckets (no keys): uniform at every
  # power of two, zipf and heavy hitter; SHARED with hashing alongside, unchanged, as the control.
  log=$OUT/stage12.log; deadline=$((SECONDS + ${2:-400}))
  step 40 peers python3 .device/peers.py --rows-log2 27 --reps 3 --groups-log2 $(seq -s, 0 28)
  peers_csv $OUT/peers_gpu_12.csv
  step 150 uniform $bench --rows-log2 27 --groups-log2 0:28 --strategies direct,shared \
    --configs 4x256,16x256,4x512 --probe-blocks 4 --reps 1 --query-reps 3 \
    --peers $OUT/peers_gpu_12.csv --csv $OUT/targets_12.csv
  for dist in zipf heavy; do
    step 40 $dist $bench --rows-log2 27 --groups-log2 10,16,20,24 --distribution $dist \
      --strategies direct --lenient --configs 4x256,16x256 --probe-blocks 4 \
      --reps 1 --query-reps 3 --csv $tmp/skew_$dist.csv
  done
  join_csv $OUT/skew_12.csv $tmp/skew_*.csv
  exit
fi
if [[ $stage == 13 ]]; then
  # The interleaved global table (a bucket's key and accumulator in one record) against arrays,
  # SHARED and WORKGROUPLOCAL with hashing, 2^8 to 2^28 groups.
  log=$OUT/stage13.log; deadline=$((SECONDS + ${2:-400}))
  step 40 peers python3 .device/peers.py --rows-log2 27 --reps 3 --groups-log2 $(seq -s, 8 28)
  peers_csv $OUT/peers_gpu_13.csv
  for il in 0 1; do
    step 150 il_$il $bench --rows-log2 27 --groups-log2 8:28 --strategies shared,workgroup_local \
      --configs 4x256,16x256,4x512 --probe-blocks 4 --reps 1 --query-reps 3 --interleaved $il \
      --peers $OUT/peers_gpu_13.csv --csv $tmp/il_$il.csv
  done
  join_csv $OUT/interleaved_13.csv $tmp/il_*.csv
  exit
fi
if [[ $stage == 14 ]]; then
  # PARTITION with the chunk-sorted SCATTER: none against 8 to 1024 runs, 2^20 to 2^28 groups.
  log=$OUT/stage14.log; deadline=$((SECONDS + ${2:-300}))
  for parts in 1 8 32 128 512 1024; do
    step 60 part_$parts $bench --rows-log2 27 --groups-log2 20:28 --strategies shared,direct --configs 4x256,16x256 \
      --probe-blocks 4 --reps 1 --query-reps 3 --partitions $parts --csv $tmp/part_$parts.csv
  done
  join_csv $OUT/partition_14.csv $tmp/part_*.csv
  exit
fi
if [[ $stage == 17 ]]; then
  # WORKGROUPLOCAL's 64-bit local adds from two 32-bit atomics: up to 2^11 groups, uniform, and
  # the skewed inputs at 2^10, against stage 15.
  log=$OUT/stage17.log; deadline=$((SECONDS + ${2:-300}))
  step 20 peers python3 .device/peers.py --rows-log2 27 --reps 3 --groups-log2 $(seq -s, 0 11)
  peers_csv $OUT/peers_gpu_17.csv
  step 90 uniform $bench --rows-log2 27 --groups-log2 0:11 --strategies workgroup_local,direct \
    --configs 4x256,16x256,4x512,16x512,1x1024 --probe-blocks 4 --reps 1 --query-reps 3 \
    --peers $OUT/peers_gpu_17.csv --csv $OUT/targets_17.csv
  for dist in zipf heavy; do
    step 40 $dist $bench --rows-log2 27 --groups-log2 4,10 --distribution $dist \
      --strategies default,workgroup_local,direct --lenient --configs 4x256,16x256,4x512 --probe-blocks 4 \
      --reps 1 --query-reps 3 --csv $tmp/skew_$dist.csv
  done
  join_csv $OUT/skew_17.csv $tmp/skew_*.csv
  exit
fi
if [[ $stage == 18 ]]; then
  # The live tuner with the refined search's cheaper measurements (paired and first-block
  # rejection, the quiet window) against exhaustive search in the same run, as stage 9.
  log=$OUT/stage18.log; deadline=$((SECONDS + ${2:-200}))
  step 170 tuned $bench --rows-log2 27 --groups-log2 0,4,8,12,16,20 --block-mib 4 \
    --strategies shared,independent,workgroup_local,tuned --configs all --probe-blocks 8 --reps 1 --no-pipelined \
    --tuned-reps 3 --tuned-csv $OUT/tuned_live_18.csv
  exit
fi
if [[ $stage == 19 ]]; then
  # The run cache's hot-key register: zipf, heavy hitter and uniform at the skew target's group
  # counts (target 3 compares each with half the uniform figure).
  log=$OUT/stage19.log; deadline=$((SECONDS + ${2:-300}))
  for dist in uniform zipf heavy; do
    step 80 $dist $bench --rows-log2 27 --groups-log2 4,10,16,20,24 --distribution $dist \
      --strategies default,workgroup_local,shared,direct --lenient --configs 4x256,16x256,4x512 --probe-blocks 4 \
      --reps 1 --query-reps 3 --csv $tmp/skew_$dist.csv
  done
  join_csv $OUT/skew_19.csv $tmp/skew_*.csv
  exit
fi
if [[ $stage == 20 ]]; then
  # Fixed host cost per query (attempt 16): target 1's group counts, whole queries with the host
  # time per phase (CSV columns host_*_ms). s20_wall_before.csv and s20_wall_pageable.csv are the
  # same sweep in the same lease, built with the driver's earlier waits restored (host timing
  # kept), and with only the counters' and the sample's reads into pageable memory restored.
  log=$OUT/stage20.log; deadline=$((SECONDS + ${2:-120}))
  step 100 wall $bench --rows-log2 27 --groups-log2 0:10 --strategies workgroup_local,direct --configs 4x256,16x256 \
    --probe-blocks 1 --reps 1 --query-reps 9 --csv $OUT/wall_20.csv
  exit
fi
if [[ $stage == 21 ]]; then
  # SHARED's hot-key table (attempt 17): zipf keys with the table (automatic) and without it, the
  # default strategy beside them; group counts around target 3's misses (2^16-2^24).
  log=$OUT/stage21.log; deadline=$((SECONDS + ${2:-300}))
  for hot in auto off; do
    flag=$([[ $hot == auto ]] && echo -1 || echo 0)
    step 100 zipf_$hot $bench --rows-log2 27 --groups-log2 12:24:2 --distribution zipf --strategies default,shared \
      --hot-table $flag --configs 4x256,16x256,4x512,8x512 --probe-blocks 4 --reps 1 --query-reps 3 \
      --csv $tmp/hot_$hot.csv
  done
  join_csv $OUT/hot_table_21.csv $tmp/hot_*.csv
  exit
fi
if [[ $stage == 22 ]]; then
  # Target 3 after attempts 17 (hot-key table) and 18 (a dominant key's register without runs):
  # uniform, zipf and heavy-hitter keys at its group counts, and the heavy hitter once more with
  # the run cache's runs (options::run_cache = true, the behaviour before attempt 18).
  log=$OUT/stage22.log; deadline=$((SECONDS + ${2:-400}))
  for dist in uniform zipf heavy; do
    step 80 $dist $bench --rows-log2 27 --groups-log2 4,10,16,20,24 --distribution $dist \
      --strategies default,workgroup_local,shared,direct --lenient --configs 4x256,16x256,4x512 --probe-blocks 4 \
      --reps 1 --query-reps 3 --csv $tmp/skew_$dist.csv
  done
  step 80 heavy_runs $bench --rows-log2 27 --groups-log2 4,10,16,20,24 --distribution heavy --run-cache 1 \
    --strategies default,workgroup_local,shared,direct --lenient --configs 4x256,16x256,4x512 --probe-blocks 4 \
    --reps 1 --query-reps 3 --csv $OUT/heavy_runs_22.csv
  join_csv $OUT/skew_22.csv $tmp/skew_*.csv
  exit
fi
if [[ $stage == 23 ]]; then
  # WORKGROUPLOCAL's cold-row queue and SHARED for a dominant key beyond local memory (attempt
  # 19): the heavy hitter automatic, then with the run cache asked for (runs, no queue: the
  # behaviour before), and uniform keys for target 3's reference figures.
  log=$OUT/stage23.log; deadline=$((SECONDS + ${2:-300}))
  for dist in heavy uniform; do
    step 80 $dist $bench --rows-log2 27 --groups-log2 4,10,12,16,20,24 --distribution $dist \
      --strategies default,workgroup_local,shared,direct --lenient --configs 4x256,16x256,4x512 --probe-blocks 4 \
      --reps 1 --query-reps 3 --csv $tmp/q_$dist.csv
  done
  step 80 heavy_runs $bench --rows-log2 27 --groups-log2 4,10,12,16,20,24 --distribution heavy --run-cache 1 \
    --strategies default,workgroup_local,shared,direct --lenient --configs 4x256,16x256,4x512 --probe-blocks 4 \
    --reps 1 --query-reps 3 --csv $OUT/heavy_runs_23.csv
  join_csv $OUT/skew_23.csv $tmp/q_*.csv
  exit
fi
if [[ $stage == 25 ]]; then
  # The live tuner as stage 18, but the exhaustive reference measures each configuration after 4
  # warm blocks (--warm-blocks), on a table as filled as the tuner's later blocks find it; the
  # tuner's decisions in the log (GPUAGG_LOG).
  log=$OUT/stage25.log; deadline=$((SECONDS + ${2:-240}))
  GPUAGG_LOG=1 step 200 tuned $bench --rows-log2 27 --groups-log2 0,4,8,12,16,20 --block-mib 4 \
    --strategies shared,independent,workgroup_local,tuned --configs all --probe-blocks 8 --warm-blocks 4 --reps 1 \
    --no-pipelined --tuned-reps 3 --tuned-csv $OUT/tuned_live_25.csv --blocks-csv $OUT/tuned_space_blocks_25.csv
  exit
fi
if [[ $stage == 26 ]]; then
  # Every target in one lease after attempts 16 to 19 (fewer host waits, the hot-key table, the
  # cold-row queue): peers, uniform at every power of two, zipf, heavy hitter, sorted runs, and
  # host input from pinned and pageable memory.
  log=$OUT/stage26.log; deadline=$((SECONDS + ${2:-560}))
  step 30 peers python3 .device/peers.py --rows-log2 27 --reps 3 --groups-log2 $(seq -s, 0 28)
  peers_csv $OUT/peers_gpu_26.csv
  step 190 uniform $bench --rows-log2 27 --groups-log2 0:28 --strategies workgroup_local,shared,direct,sort_reduce \
    --configs 4x256,16x256,4x512,16x512,1x1024 --probe-blocks 4 --reps 1 --query-reps 3 \
    --peers $OUT/peers_gpu_26.csv --csv $OUT/targets_26.csv
  for dist in zipf heavy sorted; do
    step 60 $dist $bench --rows-log2 27 --groups-log2 4,10,16,20,24 --distribution $dist \
      --strategies default,workgroup_local,shared,direct --lenient --configs 4x256,16x256,4x512 --probe-blocks 4 \
      --reps 1 --query-reps 3 --csv $tmp/skew_$dist.csv
  done
  join_csv $OUT/skew_26.csv $tmp/skew_*.csv
  step 30 host_pinned $bench --rows-log2 27 --groups-log2 4,10,16,20 --strategies default --configs default \
    --reps 1 --query-reps 3 --in-flight 4 --input pinned --csv $tmp/host_1.csv
  step 30 host_pageable $bench --rows-log2 27 --groups-log2 4,10,16,20 --strategies default --configs default \
    --reps 1 --query-reps 3 --in-flight 4 --input pageable --copy-threads 16 --csv $tmp/host_2.csv
  join_csv $OUT/host_26.csv $tmp/host_*.csv
  exit
fi
if [[ $stage == 29 ]]; then
  # After stage 26: a single key without the cold-row queue (uniform 2^0, 2^1 as stage 26 ran
  # them), and the heavy hitter at 2^10 with it.
  log=$OUT/stage29.log; deadline=$((SECONDS + ${2:-200}))
  step 60 uniform $bench --rows-log2 27 --groups-log2 0,1 --strategies workgroup_local,direct \
    --configs 4x256,16x256,4x512,16x512,1x1024 --probe-blocks 4 --reps 1 --query-reps 3 --csv $OUT/targets_29.csv
  step 40 heavy $bench --rows-log2 27 --groups-log2 10 --distribution heavy --strategies default,direct \
    --configs 4x256,16x256,4x512 --probe-blocks 4 --reps 1 --query-reps 3 --csv $OUT/skew_29.csv
  exit
fi
if [[ $stage == 33 ]]; then
  # Direct addressing's local table without keys (attempt 21): uniform 2^10 to 2^14, zipf and the
  # heavy hitter at 2^10 and 2^12, against stage 32's figures.
  log=$OUT/stage33.log; deadline=$((SECONDS + ${2:-200}))
  step 60 uniform $bench --rows-log2 27 --groups-log2 10:14 --strategies direct \
    --configs 4x256,16x256,4x512,16x512,1x1024 --probe-blocks 4 --reps 1 --query-reps 3 --csv $OUT/targets_33.csv
  for dist in zipf heavy; do
    step 40 $dist $bench --rows-log2 27 --groups-log2 10,12 --distribution $dist --strategies direct \
      --configs 4x256,16x256,4x512 --probe-blocks 4 --reps 1 --query-reps 3 --csv $tmp/skew_$dist.csv
  done
  join_csv $OUT/skew_33.csv $tmp/skew_*.csv
  exit
fi
if [[ $stage == 34 ]]; then
  # Direct addressing's default for a dominant key after attempt 21: the local table up to a
  # quarter of local memory, SHARED with the run cache beyond (heavy hitter 2^10 to 2^13).
  log=$OUT/stage34.log; deadline=$((SECONDS + ${2:-120}))
  step 60 heavy $bench --rows-log2 27 --groups-log2 10:13 --distribution heavy --strategies direct \
    --configs 4x256,16x256,4x512 --probe-blocks 4 --reps 1 --query-reps 3 --csv $OUT/skew_34.csv
  exit
fi
if [[ $stage == 35 ]]; then
  # Section 3's full evaluation with the current kernels: every configuration of the hash
  # strategies processes the whole 2^27-row input (32 blocks of 4 Mi rows, the paper's 1 GB in
  # 32 blocks), every block profiled. Parts: "lo" 2^0..2^6 groups and "mid" 2^8..2^14, all three
  # strategies; "hi" 2^16..2^28, SHARED (the others cannot hold those tables). Joined here by
  # bench/make_search_space.py into search_space_full.csv.
  part=${2:-lo}
  log=$OUT/stage35_$part.log; deadline=$((SECONDS + ${3:-560}))
  case $part in
    lo) groups=0:6:2; strategies=shared,independent,workgroup_local ;;
    mid) groups=8:14:2; strategies=shared,independent,workgroup_local ;;
    *) groups=16:28:2; strategies=shared ;;
  esac
  step 560 space_$part $bench --rows-log2 27 --block-mib 16 --groups-log2 $groups --strategies $strategies \
    --configs all --probe-blocks 0 --reps 1 --no-pipelined --csv $OUT/space35_$part.csv --blocks-csv $tmp/blocks.csv
  gzip -c $tmp/blocks.csv > $OUT/space35_${part}_blocks.csv.gz
  exit
fi
if [[ $stage == 36 ]]; then
  # Stage 25 with the default that scans the start's row and restarts finer passes from every
  # unpruned configuration, and with 2^22 and 2^24 groups (SHARED's ridge in search_space_full).
  log=$OUT/stage36.log; deadline=$((SECONDS + ${2:-540}))
  GPUAGG_LOG=1 step 540 tuned $bench --rows-log2 27 --groups-log2 0,4,8,12,16,20,22,24 --block-mib 4 \
    --strategies shared,independent,workgroup_local,tuned --configs all --probe-blocks 8 --warm-blocks 4 --reps 1 \
    --no-pipelined --tuned-reps 3 --tuned-csv $OUT/tuned_live_36.csv --blocks-csv $tmp/blocks.csv
  gzip -c $tmp/blocks.csv > $OUT/tuned_space_blocks_36.csv.gz
  exit
fi
if [[ $stage == 37 ]]; then
  # Stage 36's 2^22 and 2^24 with the exhaustive reference measured after 48 warm blocks: the
  # tuner converges after 65 to 128 blocks of 4 MiB, when the table holds nearly every group
  # (updates), while stage 36's reference measured blocks 4 to 12, still inserting.
  log=$OUT/stage37.log; deadline=$((SECONDS + ${2:-540}))
  GPUAGG_LOG=1 step 540 tuned $bench --rows-log2 27 --groups-log2 22,24 --block-mib 4 \
    --strategies shared,tuned --configs all --probe-blocks 8 --warm-blocks 48 --reps 1 \
    --no-pipelined --tuned-reps 3 --tuned-csv $OUT/tuned_live_37.csv --blocks-csv $tmp/blocks.csv
  gzip -c $tmp/blocks.csv > $OUT/tuned_space_blocks_37.csv.gz
  exit
fi
if [[ $stage == 39 ]]; then
  # The live tuner learning across queries: the paper's setup (2^27 rows in 32 blocks of 16 MiB
  # per column), six queries per group count sharing one winners file (--tuned-cache), each
  # against exhaustive search measured after 16 warm blocks in the same run. A search the input
  # cuts short is stored provisionally and the next query continues it.
  log=$OUT/stage39.log; deadline=$((SECONDS + ${2:-540}))
  GPUAGG_LOG=1 step 540 tuned $bench --rows-log2 27 --block-mib 16 --groups-log2 4,12,16,20,24 \
    --strategies shared,independent,workgroup_local,tuned --configs all --probe-blocks 8 --warm-blocks 16 --reps 1 \
    --no-pipelined --tuned-reps 5 --tuned-cache $tmp/tuning.json --tuned-csv $OUT/tuned_live_39.csv
  exit
fi
if [[ $stage == 4 ]]; then
  # Gaps of stages 2 and 3 (cut by time limits), and value types other than uint32.
  log=$OUT/stage4.log; deadline=$((SECONDS + ${2:-420}))
  step 150 baselines $bench --rows-log2 27 --groups-log2 24,26,28 --strategies sort_reduce,sort_atomics --reps 2 \
    --csv $OUT/baselines_d.csv
  step 90 sorted $bench --rows-log2 27 --groups-log2 24,28 --distribution sorted --strategies shared,direct \
    --configs sweep --probe-blocks 4 --reps 1 --query-reps 3 --csv $tmp/sorted.csv
  step 50 zipf $bench --rows-log2 27 --groups-log2 28 --distribution zipf --strategies shared,direct \
    --configs sweep --probe-blocks 4 --reps 1 --query-reps 3 --csv $tmp/zipf.csv
  join_csv $OUT/distributions_d.csv $tmp/sorted.csv $tmp/zipf.csv
  for value in int64 double; do
    step 60 $value $bench --rows-log2 27 --groups-log2 4,16,24 --value-type $value \
      --strategies workgroup_local,shared,direct --configs default --reps 1 --query-reps 3 --csv $tmp/values_$value.csv
  done
  join_csv $OUT/value_types.csv $tmp/values_*.csv
  exit
fi
if [[ $stage == 1 ]]; then
  timeout 470 $bench --rows-log2 27 --groups-log2 0:14:2 --strategies shared,independent,workgroup_local,direct \
    --configs all --probe-blocks 8 --reps 1 --query-reps 5 --csv $OUT/space_lo.csv --blocks-csv $OUT/space_lo_blocks.csv
  timeout 540 $bench --rows-log2 27 --groups-log2 16:28:2 --strategies shared,direct --configs all --probe-blocks 8 \
    --reps 1 --query-reps 5 --csv $OUT/space_hi.csv --blocks-csv $OUT/space_hi_blocks.csv
  exit
fi
log=$OUT/sweeps.log
deadline=$((SECONDS + ${2:-540}))
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
