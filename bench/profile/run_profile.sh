#!/usr/bin/env bash
# Nsight Compute profiles of gpuagg's AGGREGATE (through its CUDA twin) and of PyTorch's peer
# kernels, for SELECT g, sum(v) GROUP BY g over 2^27 uniform uint32 rows. On the GPU machine,
# from the repository root:
#   source .device/setup.sh && bench/profile/run_profile.sh   (or: bench/suite.sh --parts profile)
# Writes to $OUT (default build/profile_out): profile.csv (one row per kernel x group count),
# twin_runs.csv (the twin's own timings and checks), profile.log, raw.tar.gz (ncu's raw CSVs and
# reports, the generated OpenCL and CUDA sources, ptxas' register counts).
# Environment: PROFILE_GROUPS (default 4,10,16,20,21,24,28), PROFILE_ROWS_LOG2 (27),
# PROFILE_REPS (5), PROFILE_ARCH (sm_90a, what NVIDIA's OpenCL compiler targets on the H100),
# GPUAGG_INCLUDE (gpuagg's headers, default include/: e.g. a snapshot of the commit the OpenCL
# figures were measured at), PROFILE_REFERENCE and PROFILE_REFERENCE_PEERS (the OpenCL and
# PyTorch figures to compare with, from the same lease), PROFILE_DEADLINE_S
# (540: the profiling steps are cut short so that the join still runs within it).
# What is missing on the machine (nvcc, ncu, torch, peers.py) is reported and its steps skipped.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${OUT:-$root/build/profile_out}"
work="${PROFILE_WORK:-/tmp/gpuagg_profile}"
groups="${PROFILE_GROUPS:-4,10,16,20,21,24,28}"
rows_log2="${PROFILE_ROWS_LOG2:-27}"
reps="${PROFILE_REPS:-5}"
arch="${PROFILE_ARCH:-sm_90a}"
include="${GPUAGG_INCLUDE:-$root/include}"
reference="${PROFILE_REFERENCE:-$root/bench/results/h100/profile_reference.csv}"
reference_peers="${PROFILE_REFERENCE_PEERS:-$root/bench/results/h100/profile_reference_peers.csv}"
peers="${PROFILE_PEERS:-$root/.device/peers.py}"
deadline=$((SECONDS + ${PROFILE_DEADLINE_S:-540}))  # the whole script, so its files are written in time
export PYTHONUNBUFFERED=1
mkdir -p "$out" "$work/src" "$work/cubin"
log="$out/profile.log"
exec > >(tee -a "$log") 2>&1
started=$SECONDS
missing=()
step() { echo "== [$((SECONDS - started)) s] $*"; }
have() {
  if command -v "$1" >/dev/null 2>&1; then return 0; fi
  echo "MISSING: $1 ($2)"
  missing+=("$1")
  return 1
}

step "environment"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 || echo "MISSING: nvidia-smi"
have nvcc "builds the CUDA twin and the harness" && nvcc --version | tail -1
have ncu "Nsight Compute: no profiles without it" && ncu --version | tail -1
have python3 "the transform and the bookkeeping" || exit 1
have g++ "builds the dump tool" || exit 1
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>/dev/null || { echo "MISSING: torch (no peers)"; missing+=(torch); }
[[ -f "$peers" ]] || { echo "MISSING: $peers (no peers)"; missing+=(peers.py); }
echo "headers: $include ($(cat "$include/../COMMIT" 2>/dev/null || echo "the working tree")), kernels.inc sha256 $(sha256sum "$include/gpuagg/kernels.inc" | cut -c1-16)"
echo "groups 2^{$groups}, 2^$rows_log2 rows, $reps timed repetitions, $arch"

step "dump the OpenCL programs (gpuagg_dump_source) and turn them into CUDA (cl_to_cuda.py)"
g++ -std=c++20 -O1 -I"$include" "$here/dump_source.cpp" -o "$work/dump_source" || exit 1
"$work/dump_source" --all "$work/src" >/dev/null || exit 1
variants=(shared_hash shared_direct workgroup_local_hash workgroup_local_direct)
for v in "${variants[@]}"; do
  python3 "$here/cl_to_cuda.py" "$work/src/$v.cl" -o "$work/src/$v.cu" --params "$work/cubin/$v.params" || exit 1
done

if have nvcc "the twin"; then
  step "nvcc -arch=$arch -cubin (ptxas -v in $work/src/*.ptxas) and the harness"
  pids=()  # (a bare `wait` would also wait for the log's tee)
  for v in "${variants[@]}"; do
    nvcc -arch="$arch" -cubin -lineinfo -Xptxas -v -o "$work/cubin/$v.cubin" "$work/src/$v.cu" \
      >"$work/src/$v.ptxas" 2>&1 &
    pids+=($!)
  done
  nvcc -O2 -std=c++17 -o "$work/cl_on_cuda" "$here/cl_on_cuda.cu" -lcuda >"$work/src/harness.build" 2>&1 &
  pids+=($!)
  wait "${pids[@]}"
  for v in "${variants[@]}"; do
    [[ -f "$work/cubin/$v.cubin" ]] || { echo "nvcc failed on $v:"; tail -20 "$work/src/$v.ptxas"; exit 1; }
    echo "$v: AGGREGATE $(grep -A3 "entry function 'gpuagg_aggregate'" "$work/src/$v.ptxas" | grep -o 'Used [0-9]* registers.*' | head -1)"
  done
  [[ -x "$work/cl_on_cuda" ]] || { echo "the harness did not build:"; cat "$work/src/harness.build"; exit 1; }
  if command -v cuobjdump >/dev/null; then
    for v in "${variants[@]}"; do
      echo "$v: AGGREGATE's memory instructions: $(cuobjdump -sass -fun gpuagg_aggregate "$work/cubin/$v.cubin" 2>/dev/null |
        grep -oE '\b(ATOMS|ATOMG|ATOM|REDG|RED|LDG|LDS|STG|STS|LD|ST)(\.[A-Z0-9_]+)*' | sort | uniq -c | sort -rn |
        awk '{printf "%s %s, ", $1, $2}')"
    done
  fi
fi

python3 "$here/collect.py" plan --reference "$reference" --groups "$groups" >"$work/plan.txt"
metrics=""
if [[ ! " ${missing[*]} " =~ " ncu " && -x "$work/cl_on_cuda" ]]; then
  step "ncu: which metrics it takes (a 2^20-row run of the twin; a refused metric is dropped and the run retried)"
  ncu --query-metrics >"$work/metrics_available.txt" 2>&1 || true
  echo "4 shared hash 4 256 0" >"$work/plan_tiny.txt"
  drop=""
  for attempt in 1 2 3 4 5 6; do
    metrics=$(python3 "$here/collect.py" metrics --available "$work/metrics_available.txt" --drop "$drop" 2>/dev/null)
    ncu --replay-mode kernel --clock-control none --profile-from-start off --metrics "$metrics" \
      -k regex:gpuagg_aggregate "$work/cl_on_cuda" --cubin-dir "$work/cubin" --plan "$work/plan_tiny.txt" \
      --rows-log2 20 --reps 1 --profile >"$work/ncu_check.txt" 2>&1
    status=$?
    refused=$(grep -oE "(Failed to find metric|[Uu]nknown metric|[Ii]nvalid metric)[^a-z]*[a-z0-9_]+__[A-Za-z0-9_.]+" \
      "$work/ncu_check.txt" | grep -oE "[a-z0-9_]+__[A-Za-z0-9_.]+" | sort -u | paste -sd, -)
    if [[ -n "$refused" ]]; then
      echo "ncu refused: $refused"
      drop="${drop:+$drop,}$refused"
      continue
    fi
    if [[ $status -ne 0 ]] || grep -q "==ERROR==" "$work/ncu_check.txt"; then
      echo "ncu failed on the check run (status $status):"
      grep -E "ERROR|WARN" "$work/ncu_check.txt" | head -10
      grep -q "gpuagg_aggregate" "$work/ncu_check.txt" || { metrics=""; missing+=(ncu-profiling); }
    fi
    break
  done
  [[ -n "$metrics" ]] && echo "metrics: $metrics"
  grep -E "verified|MISMATCH" "$work/ncu_check.txt" | head -3
fi
ncu_common=(--replay-mode kernel --clock-control none --profile-from-start off --metrics "$metrics" -f)
export_csv() {  # report -> raw CSV, base units
  ncu --import "$1.ncu-rep" --csv --page raw --print-units base --print-kernel-base function >"$2" 2>"$2.err" ||
    ncu --import "$1.ncu-rep" --csv --page raw --print-units base >"$2" 2>>"$2.err" ||
    { echo "exporting $1 failed:"; cat "$2.err"; }
}

rm -f "$out/twin_runs.csv"
if [[ -x "$work/cl_on_cuda" ]]; then
  harness=("$work/cl_on_cuda" --cubin-dir "$work/cubin" --plan "$work/plan.txt" --rows-log2 "$rows_log2" --reps "$reps"
    --csv "$out/twin_runs.csv")
  if [[ -n "$metrics" ]]; then
    step "the twin under ncu: one AGGREGATE per run profiled, $reps timed around it"
    timeout $(( (deadline - SECONDS) * 3 / 5 )) ncu "${ncu_common[@]}" -k regex:gpuagg_aggregate -o "$work/twin" "${harness[@]}" --profile
    echo "exit status $?"
    export_csv "$work/twin" "$work/twin_ncu.csv"
  else
    step "the twin without ncu (timings and checks only)"
    timeout $(( (deadline - SECONDS) * 3 / 5 )) "${harness[@]}"
    echo "exit status $?"
  fi
fi

if [[ -n "$metrics" && ! " ${missing[*]} " =~ " torch " && -f "$peers" ]]; then
  step "PyTorch's peers under ncu: the timed dense and unique queries per group count"
  timeout $((deadline - SECONDS - 20)) ncu "${ncu_common[@]}" --target-processes all -o "$work/peers" \
    python3 "$here/peers_profiled.py" --peers "$peers" --rows-log2 "$rows_log2" --groups-log2 "$groups" --reps 1 \
    2> >(tee "$work/peers_ranges.txt" >&2)
  echo "exit status $?"
  export_csv "$work/peers" "$work/peers_ncu.csv"
fi

step "join -> $out/profile.csv"
python3 "$here/collect.py" join --twin "$out/twin_runs.csv" --twin-ncu "$work/twin_ncu.csv" \
  --peers-ncu "$work/peers_ncu.csv" --ranges "$work/peers_ranges.txt" --reference "$reference" --reference-peers "$reference_peers" \
  --rows $((1 << rows_log2)) -o "$out/profile.csv"
(cd "$work" && tar czf "$out/raw.tar.gz" plan.txt src cubin/*.params ./*.csv ./*.err ./*.txt ./*.ncu-rep 2>/dev/null)
ls -la "$out"
[[ ${#missing[@]} -eq 0 ]] || echo "missing on this machine: ${missing[*]}"
step "done"
