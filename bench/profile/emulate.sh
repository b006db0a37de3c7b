#!/usr/bin/env bash
# A check without a GPU: the CUDA twin (dump_source -> cl_to_cuda.py) and cl_on_cuda.cu, built
# with g++ against cuda_emulation.hpp (blocks one after another, work items as threads) and run
# on small inputs; cl_on_cuda checks every group's sum against its CPU reference. It tests the
# transform's semantics (barriers, atomics, local tables), the argument order and the sizes, not
# speed. Also compiles the twin with nvcc when one is on PATH. Run from anywhere:
#   bench/profile/emulate.sh [work dir]
# GPUAGG_INCLUDE=DIR takes gpuagg's headers from DIR instead of the tree's include/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work/include"
cxx="${CXX:-g++}"

"$cxx" -std=c++20 -O1 -I"${GPUAGG_INCLUDE:-$root/include}" "$here/dump_source.cpp" -o "$work/dump_source"
"$work/dump_source" --all "$work" >/dev/null
variants=()
for s in shared workgroup_local; do
  for k in hash direct; do
    python3 "$here/cl_to_cuda.py" "$work/${s}_$k.cl" -o "$work/${s}_$k.cu" --params "$work/${s}_$k.params"
    python3 "$here/cl_to_cuda.py" "$work/${s}_$k.cl" -D GPUAGG_RUN_CACHE -o "$work/${s}_${k}_rc.cu" \
      --params "$work/${s}_${k}_rc.params"
    variants+=("${s}_$k" "${s}_${k}_rc")
  done
done

if command -v nvcc >/dev/null; then
  for v in "${variants[@]}"; do
    nvcc -arch=sm_90a -cubin -lineinfo -o "$work/$v.cubin" "$work/$v.cu" &
  done
  wait
  echo "nvcc built ${#variants[@]} cubins"
fi

for h in cuda.h cuda_runtime.h cuda_profiler_api.h; do echo '#include "cuda_emulation.hpp"' >"$work/include/$h"; done
objects=()
for v in "${variants[@]}"; do
  # C++ linkage inside a namespace per program (the OpenCL names repeat), and the dynamic
  # local memory is the emulation's global arena.
  sed -e 's/extern "C" __global__/__global__/' -e '/extern __shared__ .*gpuagg_local_arena/d' \
    "$work/$v.cu" >"$work/emulated_$v.inc"
  cat >"$work/emulated_$v.cpp" <<EOF
#include "cuda_emulation.hpp"
namespace v_$v {
#include "emulated_$v.inc"
}
static const bool registered_$v = [] {
  gpuagg_emulated_register("$v", "gpuagg_initialize", &v_$v::gpuagg_initialize);
  gpuagg_emulated_register("$v", "gpuagg_aggregate", &v_$v::gpuagg_aggregate);
  gpuagg_emulated_register("$v", "gpuagg_finalize", &v_$v::gpuagg_finalize);
  return true;
}();
EOF
  "$cxx" -std=c++20 -O1 -w -I"$here" -I"$work" -c "$work/emulated_$v.cpp" -o "$work/emulated_$v.o" &
  objects+=("$work/emulated_$v.o")
done
"$cxx" -std=c++20 -O1 -Wall -Wextra -x c++ -I"$work/include" -I"$here" -c "$here/cl_on_cuda.cu" -o "$work/harness.o" &
wait
"$cxx" -pthread -o "$work/cl_on_cuda_emulated" "$work/harness.o" "${objects[@]}"

cat >"$work/plan.txt" <<'EOF'
# groups_log2 strategy scheme work_groups_per_cu work_group_size run_cache
4 shared hash 2 64 0
4 shared direct 2 64 0
4 workgroup_local hash 2 64 0
4 workgroup_local direct 2 64 0
4 shared hash 2 64 1
4 workgroup_local hash 2 64 1
10 shared hash 2 64 0
10 shared direct 2 64 0
10 workgroup_local hash 2 64 0
10 workgroup_local direct 2 64 0
12 workgroup_local hash 2 32 0
13 shared hash 1 64 0
13 shared direct 1 64 1
EOF
EMULATED_SMS=2 "$work/cl_on_cuda_emulated" --cubin-dir "$work" --plan "$work/plan.txt" --rows-log2 14 --reps 1 \
  --block-rows 5000 --profile --csv "$work/emulated.csv"
echo "emulation passed ($work)"
