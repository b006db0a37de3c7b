#!/usr/bin/env bash
# The benchmark suite, on any machine with an OpenCL device: the default group_by call (no
# options) against the oracle (true group count + the fastest fixed configuration of a sweep),
# warm and cold, on device and host input and four key distributions, beside the PyTorch and
# pyarrow peers where they are installed. Every result is verified by groupby_bench.
#
#   bench/suite.sh [--build DIR] [--out DIR] [--rows-log2 N] [--parts uniform,skew,host,cold,peers]
#
# Writes to OUT (default bench/results/<device>/): default.csv (every timed query, all parts),
# sweep.csv (every configuration the oracle swept: the recorded search space the plan's
# per-device entry is written from, bench/plan_data.py), peers.csv, suite.log.
# bench/report.py makes the docs' tables from them.
set -uo pipefail
build=build/default
out=""
rows=27
parts=uniform,skew,host,cold,peers
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rows-log2) rows=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    *) echo "suite.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bench=$build/bench/groupby_bench
[[ -x $bench ]] || { echo "suite.sh: $bench not built (cmake --build $build --target groupby_bench)" >&2; exit 2; }
if [[ -z $out ]]; then
  device=$($bench --help >/dev/null 2>&1; clinfo -l 2>/dev/null | sed -n 's/.*Device #0: //p' | head -1)
  out=bench/results/$(echo "${device:-device}" | tr 'A-Z ' 'a-z_' | tr -cd 'a-z0-9_')
fi
mkdir -p "$out"
log=$out/suite.log
csv=$out/default.csv
sweep=$out/sweep.csv
has() { [[ ",$parts," == *",$1,"* ]]; }
step() {  # step NAME COMMAND...: runs it, logs its output and status
  local name=$1; shift
  echo "== $name: $*" >> "$log"
  "$@" >> "$log" 2>&1
  local rc=$?
  echo "$name rc=$rc after ${SECONDS}s" | tee -a "$log"
  ((rc == 0)) || failed=1
}
failed=0
# Group counts: every even power of two up to one past the rows; the skew and host parts at the
# five counts the targets name.
all=0:$((rows + 1)):2
five=4,10,16,20,24
((rows < 24)) && five=4,10,16
((rows < 24)) && all=0:$((rows + 1)):4
# The host oracle sweeps the configurations that won on device input: on host input the
# transfer bounds the query, and a full sweep would take minutes a group count.
host_sweep="W:4x256,W:8x256,W:16x128,S:16x256,S:64x256,S:128x256,S:256x64,S:8x64"

if has uniform; then
  step uniform "$bench" --rows-log2 "$rows" --groups-log2 "$all" --input device --csv "$csv" --sweep-csv "$sweep"
fi
if has skew; then
  for dist in zipf heavy sorted; do
    step "skew_$dist" "$bench" --rows-log2 "$rows" --groups-log2 "$five" --input device --distribution "$dist" \
      --csv "$csv" --sweep-csv "$sweep"
  done
fi
if has host; then
  for input in pinned pageable; do
    step "host_$input" "$bench" --rows-log2 "$rows" --groups-log2 "$five" --input "$input" --sweep "$host_sweep" \
      --reps 3 --csv "$csv"
  done
fi
if has cold; then
  # The first query of its shape in a fresh process: with every cache empty (gpuagg's and the
  # OpenCL drivers' own), then again in a fresh process with the caches the first one left,
  # then with only gpuagg's program binaries left.
  for g in 4 16 24; do
    ((g > rows + 1)) && continue
    dir=$(mktemp -d)
    for phase in cold-empty cold-disk cold-programs; do
      # cold-programs: the driver's own cache emptied, gpuagg's program binaries kept.
      [[ $phase == cold-programs ]] && rm -rf "$dir/cuda" "$dir/pocl"
      GPUAGG_CACHE_DIR=$dir/gpuagg CUDA_CACHE_PATH=$dir/cuda POCL_CACHE_DIR=$dir/pocl \
        step "${phase}_$g" "$bench" --rows-log2 "$rows" --groups-log2 "$g" --input device --cold --phase "$phase" \
        --csv "$csv"
    done
    rm -rf "$dir"
  done
fi
if has peers; then
  peers=""
  for p in .device/peers.py ../shared/peers/peers.py; do [[ -f $p ]] && peers=$p && break; done
  if [[ -n $peers ]] && python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    echo "== peers" >> "$log"
    PYTHONUNBUFFERED=1 python3 "$peers" --rows-log2 "$rows" --groups-log2 "$(echo "$all" | awk -F: '{s=""; for (k=$1; k<=$2; k+=$3) s=s (s==""?"":",") k; print s}')" \
      --reps 5 > "$out/peers.csv" 2>> "$log"
    echo "peers rc=$? after ${SECONDS}s" | tee -a "$log"
  else
    echo "peers: skipped (no peers.py or no CUDA PyTorch)" | tee -a "$log"
  fi
fi
grep -h "groupby-bench: .* verified" "$log" | tail -n 20
exit $failed
