#!/bin/bash
# A/B of commits in one lease. Here (with git): bench/ab_commits.sh prepare SHA... puts each
# commit's tree under ab/<sha> (untracked, so it travels with the working tree). On the GPU
# machine: bench/ab_commits.sh run "BENCH ARGS" builds gpuagg_bench of every ab/<sha> and of the
# working tree ("tree"), then runs the arguments with each, twice, alternating, CSVs under $OUT.
# s24_ab_*.csv: bench/ab_commits.sh run "--rows-log2 27 --groups-log2 12,14 --strategies
# shared,direct --configs 16x256 --probe-blocks 4 --reps 1 --query-reps 3".
set -u
if [[ ${1:-} == prepare ]]; then
  shift
  rm -rf ab
  for sha in "$@"; do
    mkdir -p ab/$sha && git archive $sha | tar -x -C ab/$sha && rm -rf ab/$sha/bench/results
  done
  exit
fi
args=${2:?usage: bench/ab_commits.sh prepare SHA... | run "BENCH ARGS"}
jobs=$(( $(nproc) / ($(ls ab | wc -l) + 1) ))
for dir in ab/*; do
  (cd $dir && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGPUAGG_BENCH_ONLY_UINT32=ON > /dev/null 2>&1 &&
   cmake --build build --target gpuagg_bench -j$jobs > /dev/null 2>&1; echo "$dir built rc=$?") &
done
(cmake -S . -B build/h100 -DCMAKE_BUILD_TYPE=Release -DGPUAGG_BENCH_ONLY_UINT32=ON > /dev/null 2>&1 &&
 cmake --build build/h100 --target gpuagg_bench -j$jobs > /dev/null 2>&1; echo "tree built rc=$?") &
wait
for rep in 1 2; do
  for dir in ab/* tree; do
    bin=$dir/build/bench/gpuagg_bench; [[ $dir == tree ]] && bin=build/h100/bench/gpuagg_bench
    name=$(basename $dir)
    $bin $args --csv $OUT/ab_${name}_$rep.csv 2>&1 | grep "best" | sed "s/^/$name $rep /"
  done
done
