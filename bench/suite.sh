#!/usr/bin/env bash
# The benchmark suite, on any machine with an OpenCL device (PoCL on a CPU included). Each part
# writes fixed file names into OUT; bench/report.py makes every table and plot of docs/ from
# them. Every gpuagg result is verified by the program that measures it.
#
#   bench/suite.sh [--parts LIST] [--out DIR] [--rows-log2 N] [--build DIR] [--deadline SECONDS]
#   bench/suite.sh --ab-prepare REV...                     (here, with git)
#   bench/suite.sh --ab "PROGRAM ARGS..." [--out DIR]      (on the device, with ab/ carried)
#
# Parts (default: uniform,skew,host,host-skew,periodic,cold,peers, the default path's run of record; "all": every
# part, more than one 10-minute command on the H100 at 2^27 rows):
#   uniform       groupby_bench: the default call (no options) and the oracle (true group count,
#                 fastest configuration of a sweep) at every even group count up to 2^(rows+1),
#                 device input                                  -> default.csv, sweep.csv
#   skew          the same on zipf, 90% heavy-hitter and sorted keys at 2^4,10,16,20,24
#                                                               -> default.csv, sweep.csv
#   host          pinned and pageable host input at the same five group counts -> default.csv
#   host-skew     pinned and pageable host input on zipf and 90% heavy-hitter keys at 2^16,20,24,
#                 where the host's estimate extrapolates its sample  -> default.csv
#   periodic      keys periodic in the row (row i holds key i % groups, round-robin ids), where
#                 strided samples alias with the period: the default call and the oracle at
#                 2^4,10,16,20,24 on device input (full sweep), at 2^16,20,24 on pinned and
#                 pageable input (the host-skew part's sweep)      -> default.csv, sweep.csv
#   composite     the default call and the oracle with two uint32 key columns, keys(a, b), at
#                 2^10,16,20,24, device input, columns spread over 32 bits and of narrow
#                 ranges (distribution "narrow"), and the single key's default at the same
#                 group counts in the same turns (its rows under the pairs' distribution)
#                 -> composite.csv, composite_sweep.csv, composite_one.csv
#   scattered     the default call and the oracle on one uint32 key column of keys spread over
#                 32 bits (fmix32 of the draw) at 2^4,10,11,12,16,19,20,21,22,24 (2^11 and
#                 2^12: either side of the perfect local table's edge; 2^19 and 2^20 of the
#                 half-load table's; 2^21 and 2^22 of the hash table's PARTITION line), device
#                 input -> scattered.csv
#   direct        the oracle's sweep of SHARED's configurations with direct addressing asked
#                 (options::direct_table) on uniform device keys at every even group count from
#                 2^10: the plan entry's direct-addressing configurations (bench/plan_data.py
#                 --direct)                  -> plan_sweep_direct.csv, plan_direct.csv
#   wide          the same with two uint64 key columns (128 bits: the key dictionary), device
#                 and pinned input                              -> wide.csv
#   tpch          TPC-H Q1 (tpch_q1_bench) at SF 10 and 100 on device, pinned and pageable
#                 input; pyarrow over the same SF 10 columns -> tpch.csv, tpch_pyarrow.csv
#   cold          the first query of a fresh process at 2^4, 2^16, 2^24: every cache empty
#                 (cold-empty), on-disk caches warm (cold-disk), only gpuagg's program binaries
#                 kept (cold-programs)                          -> default.csv
#   peers         PyTorch (peers.py, CUDA only) at the uniform part's group counts -> peers.csv
#   baselines     gpuagg_bench: sort + reduce_by_key and every sort-then-atomics variant
#                                                               -> baselines.csv
#   values        gpuagg_bench's default system with int64 and double values -> values.csv
#   space         section 3's full evaluation: every configuration of the three hash strategies
#                 on the whole input in 32 blocks, every block profiled -> space.csv (one verified
#                 row per configuration), search_space_full.csv (every block: what tuner_eval
#                 replays)
#   replay        tuner_eval on OUT/search_space_full.csv (no device needed) -> tuner_eval.csv,
#                 tuner_ablation.csv
#   live          the live tuner (all strategies, 4 MiB blocks at 2^27 rows: 128 blocks) against
#                 an exhaustive search measured after 4 warm blocks in the same run -> tuned_live.csv
#   live-filled   the same at 2^(rows-5) and 2^(rows-3) groups (2^22, 2^24), the reference after
#                 48 warm blocks (the table full)               -> tuned_live_filled.csv
#   live-queries  six queries of 32 blocks per group count sharing one winners file, against
#                 exhaustive search after 16 warm blocks        -> tuned_queries.csv
#   fill          every block of a query at 2^(rows-3) groups with each of four SHARED
#                 configurations (the table filling)            -> fill.csv, fill_blocks.csv
#   profile       CUDA only (nvcc, ncu): the OpenCL reference run and bench/profile's CUDA twin
#                 under Nsight Compute -> profile_reference.csv, profile_reference_peers.csv,
#                 profile_kernels.csv, profile_twin_runs.csv, profile_skew.txt
# Block sizes scale with --rows-log2 so that block counts stay those of the paper's setup.
#
# The default path's parts share default.csv and sweep.csv: a part run again into the same OUT
# replaces exactly the rows it measured (bench/csv_merge.py, keyed by rows, input,
# distribution, group count, system and phase), so they may run in separate commands into one
# folder. Every other part replaces its own files. Every step runs under a time limit and all of them end by
# --deadline (default 570 s from the start: one command on the GPU machine); a step cut short
# keeps its complete rows and makes the exit status non-zero, as does any failed step.
#
# --ab: the same measurement with several commits in one lease (builds differ only where the
# commits do, so the lease's own variation cancels). Here: `bench/suite.sh --ab-prepare REV...`
# unpacks each commit's tree into ab/<rev> (git-ignored; carry it). On the device:
# `bench/suite.sh --ab "groupby_bench --rows-log2 27 --groups-log2 12,14"` builds PROGRAM in
# every ab/<rev> and in the working tree, then runs it with ARGS twice, alternating, writing
# OUT/ab_<rev|tree>_<rep>.csv.
#
# On the GPU machine: `source .device/setup.sh`; the kit lacks CLI11 and nlohmann-json, which
# this script adds from .device/extra/include when that folder exists (docs/benchmarks.md).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=build/default
out=""
rows=27
parts=uniform,skew,host,host-skew,periodic,cold,peers
deadline_s=570
ab_args=""
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rows-log2) rows=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    --deadline) deadline_s=$2; shift 2 ;;
    --ab) ab_args=$2; shift 2 ;;
    --ab-prepare)
      shift
      (($#)) || { echo "suite.sh: --ab-prepare REV..." >&2; exit 2; }
      rm -rf ab && mkdir -p ab
      for rev in "$@"; do
        sha=$(git rev-parse --short "$rev") || exit 2
        mkdir -p "ab/$sha" && git archive "$sha" | tar -x -C "ab/$sha" && rm -rf "ab/$sha/bench/results" || exit 2
        echo "ab/$sha: $(git log -1 --format=%s "$sha" | cut -c1-80)"
      done
      exit 0 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "suite.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
[[ $parts == all ]] && parts=uniform,skew,host,host-skew,periodic,composite,scattered,direct,wide,tpch,cold,peers,baselines,values,space,replay,live,live-filled,live-queries,fill,profile
known=",uniform,skew,host,host-skew,periodic,composite,scattered,direct,wide,tpch,cold,peers,baselines,values,space,replay,live,live-filled,live-queries,fill,profile,"
for p in ${parts//,/ }; do
  [[ $known == *",$p,"* ]] || { echo "suite.sh: unknown part $p (--help)" >&2; exit 2; }
done
# The headers travel packed where the carry limit is tight (docs/multi_device.md).
[[ ! -d .device/extra/include && -f .device/extra.tar.xz ]] && tar -C .device -xJf .device/extra.tar.xz
[[ -d .device/extra/include ]] && export CPATH="$PWD/.device/extra/include${CPATH:+:$CPATH}"
deadline=$((SECONDS + deadline_s))
failed=0
has() { [[ ",$parts," == *",$1,"* ]]; }

# The programs a part needs, built into $build if they are not there yet.
need() {
  local missing=()
  for t in "$@"; do [[ -x $build/bench/$t ]] || missing+=("$t"); done
  ((${#missing[@]})) || return 0
  echo "suite.sh: building ${missing[*]} in $build"
  { [[ -f $build/CMakeCache.txt ]] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null; } &&
    cmake --build "$build" --target "${missing[@]}" -j"$(nproc)" > /dev/null ||
    { echo "suite.sh: building ${missing[*]} failed (cmake --build $build --target ${missing[*]})" >&2; exit 2; }
}

if [[ -z $out ]]; then
  need groupby_bench
  device=$(clinfo -l 2>/dev/null | sed -n 's/.*Device #0: //p' | head -1)
  out=bench/results/$(echo "${device:-device}" | tr 'A-Z ' 'a-z_' | tr -cd 'a-z0-9_')
fi
mkdir -p "$out"
log=$out/suite.log
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log_start=1
[[ -f $log ]] && log_start=$(($(wc -l < "$log") + 1))
echo "== suite.sh $(date -u +%FT%TZ) parts=$parts rows=2^$rows build=$build" >> "$log"

# step LIMIT NAME [>FILE] COMMAND...: runs it under min(LIMIT, time left), logs its output (its
# standard output to FILE instead, if given) and status.
step() {
  local limit=$1 name=$2 stdout=$log; shift 2
  [[ $1 == ">"* ]] && stdout=${1#>} && shift
  local left=$((deadline - SECONDS))
  ((left < limit)) && limit=$left
  if ((limit <= 5)); then
    echo "$name skipped: no time left before --deadline" | tee -a "$log"
    failed=1
    return 1
  fi
  echo "== $name: $*" >> "$log"
  if [[ $stdout == "$log" ]]; then timeout "$limit" "$@" >> "$log" 2>&1; else timeout "$limit" "$@" > "$stdout" 2>> "$log"; fi
  local rc=$?
  ((rc == 124)) && echo "$name cut short after ${limit}s" >> "$log"
  echo "$name rc=$rc after ${SECONDS}s" | tee -a "$log"
  ((rc == 0)) || failed=1
  return $rc
}
# merge DEST KEY SRC...: complete rows of SRC into OUT/DEST, replacing the rows with their key.
merge() {
  local dest=$1 key=$2; shift 2
  python3 "$here/csv_merge.py" "$out/$dest" "$@" ${key:+--key "$key"} | tee -a "$log"
}
default_key=rows,input,distribution,groups_log2,system,phase
sweep_key=rows,input,distribution,groups_log2
# log2 group counts: every even power up to one past the rows; five for skew and host input.
even=$(seq -s, 0 2 $((rows + 1)))
upto() { local o=""; for g in ${1//,/ }; do ((g <= rows + 1)) && o+="${o:+,}$g"; done; echo "$o"; }
five=$(upto 4,10,16,20,24)
# MiB per column for a block of 2^rows / blocks rows of uint32 (4 bytes): the paper's setup at
# 2^27 rows is 32 blocks of 16 MiB.
block_mib() { python3 -c "print(2**$rows * 4 / $1 / 2**20)"; }
bench=$build/bench/groupby_bench
gbench=$build/bench/gpuagg_bench

if [[ -n $ab_args ]]; then
  program=${ab_args%% *}
  args=${ab_args#"$program"}
  [[ -d ab ]] || { echo "suite.sh: no ab/ (bench/suite.sh --ab-prepare REV... here, then carry ab)" >&2; exit 2; }
  extra=(); [[ $program == gpuagg_bench ]] && extra=(-DGPUAGG_BENCH_ONLY_UINT32=ON)
  jobs=$(($(nproc) / ($(ls ab | wc -l) + 1)))
  ((jobs < 1)) && jobs=1
  for dir in ab/*; do
    (cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release "${extra[@]}" > /dev/null 2>&1 &&
     cmake --build "$dir/build" --target "$program" -j$jobs > /dev/null 2>&1; echo "$dir built rc=$?" | tee -a "$log") &
  done
  ({ [[ -f $build/CMakeCache.txt ]] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null 2>&1; } &&
   cmake --build "$build" --target "$program" -j$jobs > /dev/null 2>&1; echo "tree built rc=$?" | tee -a "$log") &
  wait
  for rep in 1 2; do
    for dir in ab/* tree; do
      bin=$dir/build/bench/$program name=$(basename "$dir")
      [[ $dir == tree ]] && bin=$build/bench/$program
      # shellcheck disable=SC2086
      step 300 "ab_${name}_$rep" "$bin" $args --csv "$out/ab_${name}_$rep.csv"
    done
  done
  exit $failed
fi

# Device input's timed queries: nine of each system, in turns after the oracle's sweep
# (--interleave). Host steps under a millisecond (the key sample's profile, FINALIZE, the
# buffers) took up to twice as long in one system's five queries as in the other's, either
# way round (bench/results/h200, 3f86b31): turns of one system each compared that drift.
paired=(--reps 9 --interleave)
if has uniform; then
  need groupby_bench
  rm -f "$tmp/u.csv" "$tmp/us.csv"
  step 560 uniform "$bench" --rows-log2 "$rows" --groups-log2 "$even" --input device --csv "$tmp/u.csv" \
    --sweep-csv "$tmp/us.csv" "${paired[@]}"
  merge default.csv $default_key "$tmp/u.csv"
  merge sweep.csv $sweep_key "$tmp/us.csv"
fi
if has skew; then
  need groupby_bench
  for dist in zipf heavy sorted; do
    rm -f "$tmp/k.csv" "$tmp/ks.csv"
    step 200 "skew_$dist" "$bench" --rows-log2 "$rows" --groups-log2 "$five" --input device --distribution "$dist" \
      --csv "$tmp/k.csv" --sweep-csv "$tmp/ks.csv" "${paired[@]}"
    merge default.csv $default_key "$tmp/k.csv"
    merge sweep.csv $sweep_key "$tmp/ks.csv"
  done
fi
if has host; then
  need groupby_bench
  # The host oracle sweeps the configurations that won on device input: on host input the
  # transfer bounds the query, and a full sweep would take minutes a group count. The two
  # systems' timed queries alternate (--interleave): the same query's host copy took 22 to 57 ms
  # on pageable memory within one run, drifting over seconds, and turns of one system each
  # compared the drift.
  host_sweep="W:4x256,W:8x256,W:16x128,S:16x256,S:64x256,S:128x256,S:256x64,S:8x64"
  for input in pinned pageable; do
    rm -f "$tmp/h.csv"
    step 250 "host_$input" "$bench" --rows-log2 "$rows" --groups-log2 "$five" --input "$input" --sweep "$host_sweep" \
      --reps 5 --interleave --csv "$tmp/h.csv"
    merge default.csv $default_key "$tmp/h.csv"
  done
fi
host_skew_sweep="W:16x128,S:64x256,S:128x256,S:256x64"
if has host-skew; then
  need groupby_bench
  # Skewed keys from host memory: the host's estimate at these group counts extrapolates its
  # 1/128 sample (a power law's fit for zipf, the hot key set aside for heavy hitters). The
  # oracle sweeps the four configurations that won the host part's group counts.
  for input in pinned pageable; do
    for dist in zipf heavy; do
      rm -f "$tmp/h.csv"
      step 200 "host_${input}_$dist" "$bench" --rows-log2 "$rows" --groups-log2 "$(upto 16,20,24)" --input "$input" \
        --distribution "$dist" --sweep "$host_skew_sweep" --reps 5 --interleave --csv "$tmp/h.csv"
      merge default.csv $default_key "$tmp/h.csv"
    done
  done
fi
if has periodic; then
  need groupby_bench
  rm -f "$tmp/k.csv" "$tmp/ks.csv"
  step 200 periodic_device "$bench" --rows-log2 "$rows" --groups-log2 "$five" --input device --distribution periodic \
    --csv "$tmp/k.csv" --sweep-csv "$tmp/ks.csv" "${paired[@]}"
  merge default.csv $default_key "$tmp/k.csv"
  merge sweep.csv $sweep_key "$tmp/ks.csv"
  for input in pinned pageable; do
    rm -f "$tmp/h.csv"
    step 150 "periodic_$input" "$bench" --rows-log2 "$rows" --groups-log2 "$(upto 16,20,24)" --input "$input" \
      --distribution periodic --sweep "$host_skew_sweep" --reps 5 --interleave --csv "$tmp/h.csv"
    merge default.csv $default_key "$tmp/h.csv"
  done
fi
if has composite; then
  need groupby_bench
  # Two uint32 key columns, keys(a, b), uniform, device input: the default call and the oracle,
  # with the single key's default at the same group count in the same turns (--reference-one:
  # the pairs' ratio to one key then shares the host's state; separate processes differed by
  # more than its margin). The sweep is the evidence the plan runs scattered keys'
  # configurations on 8-byte key words by (tuning.hpp).
  rm -f "$tmp/k.csv" "$tmp/ks.csv" "$tmp/k1.csv"
  step 260 composite "$bench" --rows-log2 "$rows" --groups-log2 "$(upto 10,16,20,24)" --keys two \
    --csv "$tmp/k.csv" --sweep-csv "$tmp/ks.csv" --reference-one "$tmp/k1.csv" "${paired[@]}"
  merge composite.csv $default_key "$tmp/k.csv"
  merge composite_sweep.csv $sweep_key "$tmp/ks.csv"
  merge composite_one.csv $default_key "$tmp/k1.csv"
  # The same with columns of narrow ranges (the key's high and low halves): distribution
  # "narrow" in the same files, its single key's rows too.
  rm -f "$tmp/k.csv" "$tmp/ks.csv" "$tmp/k1.csv"
  step 200 composite_narrow "$bench" --rows-log2 "$rows" --groups-log2 "$(upto 10,16,20,24)" --keys two-narrow \
    --csv "$tmp/k.csv" --sweep-csv "$tmp/ks.csv" --reference-one "$tmp/k1.csv" "${paired[@]}"
  merge composite.csv $default_key "$tmp/k.csv"
  merge composite_sweep.csv $sweep_key "$tmp/ks.csv"
  merge composite_one.csv $default_key "$tmp/k1.csv"
fi
if has scattered; then
  need groupby_bench
  # One uint32 key column spread over 32 bits: keys that collide in a hash table, as most key
  # sets other than the draw's dense range do (the plan's scattered-keys configurations).
  rm -f "$tmp/k.csv"
  step 260 scattered "$bench" --rows-log2 "$rows" --groups-log2 "$(upto 4,10,11,12,16,19,20,21,22,24)" --keys scattered \
    --csv "$tmp/k.csv" "${paired[@]}"
  merge scattered.csv $default_key "$tmp/k.csv"
fi
if has direct; then
  need groupby_bench
  # The oracle's timed queries (plan_direct.csv) say in direct_addressing that the sweep's
  # queries addressed the table directly.
  rm -f "$tmp/d.csv" "$tmp/ds.csv"
  step 300 direct "$bench" --rows-log2 "$rows" --groups-log2 "$(seq -s, 10 2 $((rows + 1)))" --input device \
    --systems oracle --direct-table 1 --sweep shared --sweep-reps 5 --reps 3 --csv "$tmp/d.csv" --sweep-csv "$tmp/ds.csv"
  merge plan_direct.csv $default_key "$tmp/d.csv"
  merge plan_sweep_direct.csv $sweep_key "$tmp/ds.csv"
fi
if has wide; then
  need groupby_bench
  # Two uint64 key columns (128 bits), keys(a, b): the key dictionary, then the ids' query.
  for input in device pinned; do
    rm -f "$tmp/w.csv"
    step 200 "wide $input" "$bench" --rows-log2 "$rows" --groups-log2 "$(upto 10,16,20,24)" --keys wide \
      --systems default --input "$input" --csv "$tmp/w.csv"
    merge wide.csv $default_key "$tmp/w.csv"
  done
fi
if has tpch; then
  need tpch_q1_bench
  # TPC-H Q1 at SF 10 and 100 (SF 100 needs about 7 GB of device memory and 7 GB of pinned host
  # memory), every input kind; then pyarrow over the SF 10 columns the bench dumped, where
  # pyarrow is installed (its answers checked against the bench's CPU pass).
  rm -f "$tmp/q.csv"
  step 240 tpch "$build/bench/tpch_q1_bench" --scale 10,100 --input device,pinned,pageable --reps 5 \
    --csv "$tmp/q.csv" --dump "$tmp/q1"
  merge tpch.csv "" "$tmp/q.csv"
  if python3 -c "import pyarrow" 2> /dev/null; then
    sf10=$(ls -d "$tmp"/q1/sf10.0* | head -1)
    step 120 tpch_pyarrow ">$tmp/a.csv" python3 "$here/tpch_q1_pyarrow.py" "$sf10" --scale 10 --reps 3
    merge tpch_pyarrow.csv "" "$tmp/a.csv"
  fi
  rm -rf "$tmp/q1"
fi
if has cold; then
  need groupby_bench
  # The first query of its shape in a fresh process: with every cache empty (gpuagg's and the
  # OpenCL drivers' own), then in a fresh process with the caches the first one left, then with
  # only gpuagg's program binaries left (the driver's own cache emptied).
  rm -f "$tmp/c.csv"
  for g in $(upto 4,16,24 | tr , ' '); do
    dir=$(mktemp -d)
    for phase in cold-empty cold-disk cold-programs; do
      [[ $phase == cold-programs ]] && rm -rf "$dir/cuda" "$dir/pocl"
      GPUAGG_CACHE_DIR=$dir/gpuagg CUDA_CACHE_PATH=$dir/cuda POCL_CACHE_DIR=$dir/pocl \
        step 60 "${phase}_$g" "$bench" --rows-log2 "$rows" --groups-log2 "$g" --input device --cold --phase "$phase" \
        --csv "$tmp/c.csv"
    done
    rm -rf "$dir"
  done
  merge default.csv $default_key "$tmp/c.csv"
fi
peers_py=""
for p in .device/peers.py ../shared/peers/peers.py; do [[ -f $p ]] && peers_py=$p && break; done
have_torch() { [[ -n $peers_py ]] && python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; }
if has peers; then
  if have_torch; then
    # peers.py checks its own sums (an assertion); a run that failed or was cut short keeps no file.
    step 200 peers ">$tmp/p.csv" python3 "$peers_py" --rows-log2 "$rows" --groups-log2 "$even" --reps 5 &&
      mv "$tmp/p.csv" "$out/peers.csv"
  else
    echo "peers: skipped (no peers.py or no CUDA PyTorch)" | tee -a "$log"
  fi
fi
if has baselines; then
  need gpuagg_bench
  # In pieces, so that a time limit costs only the group counts it cuts.
  rm -f "$tmp"/b_*.csv
  for chunk in $(upto 0,2,4,6,8,10,12):low $(upto 14,16,18,20):mid $(upto 22,24):high22 $(upto 26,28):high26; do
    groups=${chunk%%:*} name=${chunk##*:}
    [[ -z $groups ]] && continue
    step 200 "baselines_$name" "$gbench" --rows-log2 "$rows" --groups-log2 "$groups" \
      --strategies sort_reduce,sort_atomics --reps 2 --csv "$tmp/b_$name.csv"
  done
  merge baselines.csv "" "$tmp"/b_*.csv
fi
if has values; then
  need gpuagg_bench
  rm -f "$tmp"/v_*.csv
  for value in int64 double; do
    step 120 "values_$value" "$gbench" --rows-log2 "$rows" --groups-log2 "$(upto 4,16,24)" --value-type "$value" \
      --strategies default --configs default --reps 1 --query-reps 3 --csv "$tmp/v_$value.csv"
  done
  merge values.csv "" "$tmp"/v_*.csv
fi
if has space; then
  need gpuagg_bench
  # 32 blocks per configuration (16 MiB per column at 2^27 rows); all three hash strategies up
  # to 2^14 groups, SHARED beyond (the others cannot hold those tables).
  rm -f "$tmp"/s_*.csv
  for piece in "$(upto 0,2,4,6):lo:shared,independent,workgroup_local" \
               "$(upto 8,10,12,14):mid:shared,independent,workgroup_local" \
               "$(upto 16,18,20,22,24,26,28):hi:shared"; do
    IFS=: read -r groups name strategies <<< "$piece"
    [[ -z $groups ]] && continue
    step 560 "space_$name" "$gbench" --rows-log2 "$rows" --block-mib "$(block_mib 32)" --groups-log2 "$groups" \
      --strategies "$strategies" --configs all --probe-blocks 0 --reps 1 --no-pipelined \
      --csv "$tmp/s_$name.csv" --blocks-csv "$tmp/s_${name}_blocks.csv"
  done
  merge space.csv "" $(ls "$tmp"/s_*.csv | grep -v _blocks)
  python3 "$here/make_search_space.py" "$out/search_space_full.csv" "$tmp"/s_*_blocks.csv | tee -a "$log"
fi
if has replay; then
  need tuner_eval
  if [[ -f $out/search_space_full.csv ]]; then
    step 300 replay "$build/bench/tuner_eval" --input "$out/search_space_full.csv" --out "$out/tuner_eval.csv"
    grep "^tuner-eval" "$log" | tail -n 2
    # The ablation (each extension alone on Algorithm 1, the default without each): tuner_eval
    # prints it as a table, kept as CSV.
    step 300 replay_ablation ">$tmp/ablation.txt" "$build/bench/tuner_eval" --input "$out/search_space_full.csv" \
      --ablation --variants-only &&
      python3 - "$tmp/ablation.txt" "$out/tuner_ablation.csv" <<'PY'
import csv, sys
rows, header = [], None
for line in open(sys.argv[1]):
    fields = line.split()
    if fields[:2] == ["scenario", "half"]:
        header = ["variant"] + fields[1:]
    elif header and len(fields) >= len(header):
        n = len(header) - 1  # the half and the figures, from the right; the name may hold spaces
        rows.append([" ".join(fields[:-n])] + fields[-n:])
    elif header and not fields:
        break
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
print(f"{sys.argv[2]}: {len(rows)} rows")
PY
  else
    echo "replay: skipped (no $out/search_space_full.csv: run --parts space first)" | tee -a "$log"
    failed=1
  fi
fi
tuned=(--strategies shared,independent,workgroup_local,tuned --configs all --probe-blocks 8 --reps 1 --no-pipelined)
if has live; then
  need gpuagg_bench
  rm -f "$tmp/t.csv"
  GPUAGG_LOG=1 step 560 live "$gbench" --rows-log2 "$rows" --groups-log2 "$(upto 0,4,8,12,16,20,22,24)" \
    --block-mib "$(block_mib 128)" "${tuned[@]}" --warm-blocks 4 --tuned-reps 3 --tuned-csv "$tmp/t.csv"
  merge tuned_live.csv "" "$tmp/t.csv"
fi
if has live-filled; then
  need gpuagg_bench
  rm -f "$tmp/tf.csv"
  # Tables that fill slowly: 2^22 and 2^24 groups at 2^27 rows (a block of 1 Mi rows inserts a
  # fraction of them), the same ratios at other row counts.
  GPUAGG_LOG=1 step 560 live_filled "$gbench" --rows-log2 "$rows" --groups-log2 $((rows - 5)),$((rows - 3)) \
    --block-mib "$(block_mib 128)" --strategies shared,tuned --configs all --probe-blocks 8 --reps 1 --no-pipelined \
    --warm-blocks 48 --tuned-reps 3 --tuned-csv "$tmp/tf.csv"
  merge tuned_live_filled.csv "" "$tmp/tf.csv"
fi
if has live-queries; then
  need gpuagg_bench
  rm -f "$tmp/tq.csv" "$tmp/tuning.json"
  GPUAGG_LOG=1 step 560 live_queries "$gbench" --rows-log2 "$rows" --groups-log2 "$(upto 4,12,16,20,24)" \
    --block-mib "$(block_mib 32)" "${tuned[@]}" --warm-blocks 16 --tuned-reps 5 --tuned-cache "$tmp/tuning.json" \
    --tuned-csv "$tmp/tq.csv"
  merge tuned_queries.csv "" "$tmp/tq.csv"
fi
if has fill; then
  need gpuagg_bench
  rm -f "$tmp/f.csv" "$tmp/fb.csv"
  step 300 fill "$gbench" --rows-log2 "$rows" --groups-log2 $((rows - 3)) --block-mib "$(block_mib 128)" \
    --strategies shared --configs 256x32,32x16,128x256,512x8 --probe-blocks 0 --reps 1 --no-pipelined \
    --csv "$tmp/f.csv" --blocks-csv "$tmp/fb.csv"
  merge fill.csv "" "$tmp/f.csv"
  merge fill_blocks.csv "" "$tmp/fb.csv"
fi
if has profile; then
  if command -v nvcc > /dev/null && command -v ncu > /dev/null; then
    need gpuagg_bench
    groups=$(upto 4,10,16,20,21,24,28)
    rm -f "$tmp/pr.csv"
    # The OpenCL figures the twin is compared with, and the configurations it runs.
    step 240 profile_reference "$gbench" --rows-log2 "$rows" --groups-log2 "$groups" \
      --strategies workgroup_local,shared,direct --configs 4x256,16x256,4x512,16x512,1x1024 --probe-blocks 4 \
      --reps 1 --query-reps 3 --csv "$tmp/pr.csv"
    merge profile_reference.csv "" "$tmp/pr.csv"
    if have_torch; then
      step 60 profile_reference_peers ">$tmp/pp.csv" python3 "$peers_py" --rows-log2 "$rows" \
        --groups-log2 "$groups" --reps 3 && mv "$tmp/pp.csv" "$out/profile_reference_peers.csv"
    fi
    OUT=$tmp/profile PROFILE_GROUPS=$groups PROFILE_ROWS_LOG2=$rows PROFILE_REFERENCE=$out/profile_reference.csv \
      PROFILE_REFERENCE_PEERS=$out/profile_reference_peers.csv PROFILE_PEERS=$peers_py \
      PROFILE_DEADLINE_S=$((deadline - SECONDS - 60)) step 560 profile bench/profile/run_profile.sh
    [[ -f $tmp/profile/profile.csv ]] && cp "$tmp/profile/profile.csv" "$out/profile_kernels.csv"
    [[ -f $tmp/profile/twin_runs.csv ]] && cp "$tmp/profile/twin_runs.csv" "$out/profile_twin_runs.csv"
    OUT=$tmp/profile step 120 profile_skew bench/profile/skew_profile.sh &&
      cp "$tmp/profile/skew_profile.txt" "$out/profile_skew.txt"
  else
    echo "profile: skipped (needs nvcc and ncu: the CUDA twin under Nsight Compute)" | tee -a "$log"
  fi
fi
tail -n +"$log_start" "$log" | grep "groupby-bench: .* verified\|gpuagg-bench: .*verif" | sort | uniq -c
exit $failed
