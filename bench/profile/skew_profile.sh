#!/usr/bin/env bash
# Target 3's misses (skewed keys) under Nsight Compute: the CUDA twin of AGGREGATE on zipf and
# 90%-heavy-hitter input next to the same kernel on uniform input. One text report per case
# (SpeedOfLight, MemoryWorkloadAnalysis, WarpStateStats) in $OUT/skew_profile.txt, after the
# twin's own timing of each case. Run on the GPU machine from the repository root:
#   source .device/setup.sh && bench/profile/skew_profile.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${OUT:-$root/build/profile_out}"
work="${PROFILE_WORK:-/tmp/gpuagg_skew_profile}"
mkdir -p "$out" "$work"
report="$out/skew_profile.txt"
g++ -std=c++20 -O1 -I"${GPUAGG_INCLUDE:-$root/include}" "$here/dump_source.cpp" -o "$work/dump_source" || exit 1
"$work/dump_source" --all "$work" >/dev/null || exit 1
pids=()
for v in shared_hash workgroup_local_hash; do
  python3 "$here/cl_to_cuda.py" "$work/$v.cl" -o "$work/$v.cu" --params "$work/$v.params" || exit 1
  python3 "$here/cl_to_cuda.py" "$work/$v.cl" -D GPUAGG_RUN_CACHE -o "$work/${v}_rc.cu" --params "$work/${v}_rc.params" ||
    exit 1
  for c in "$v" "${v}_rc"; do nvcc -arch=sm_90a -cubin -lineinfo -o "$work/$c.cubin" "$work/$c.cu" & pids+=($!); done
done
nvcc -O2 -std=c++17 -o "$work/cl_on_cuda" "$here/cl_on_cuda.cu" -lcuda & pids+=($!)
wait "${pids[@]}"
# distribution strategy groups_log2 work_groups_per_cu work_group_size run_cache (the driver's
# choices for these inputs: the run cache for the heavy hitter, not for zipf)
cases=("zipf shared 16 16 256 0" "uniform shared 16 16 256 0" "zipf shared 20 16 256 0"
       "heavy workgroup_local 10 4 256 1" "uniform workgroup_local 10 4 256 0")
for c in "${cases[@]}"; do
  set -- $c
  args=(--cubin-dir "$work" --strategy "$2" --scheme hash --groups-log2 "$3" --wgs-per-cu "$4" --wg-size "$5"
        --run-cache "$6" --distribution "$1")
  echo "==== $c" >>"$report"
  timeout 60 "$work/cl_on_cuda" "${args[@]}" --reps 3 2>&1 | grep -E "AGGREGATE|verified|groups:" >>"$report"
  timeout 90 ncu --replay-mode kernel --clock-control none --profile-from-start off --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section WarpStateStats -k regex:gpuagg_aggregate --launch-count 1 \
    "$work/cl_on_cuda" "${args[@]}" --reps 1 --profile >>"$report" 2>&1
  echo "ncu rc=$?" >>"$report"
done
grep -cE "verified" "$report"
