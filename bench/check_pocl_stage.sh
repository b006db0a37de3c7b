#!/usr/bin/env bash
# Checks, HERE (as root), that bench/pocl_env.sh gives a working PoCL from .device/pocl.tar.xz
# alone: in a private mount namespace the system's PoCL, LLVM 15, clang, hwloc, z3, the ICD
# vendors and ld.so.cache are hidden, then clinfo must list PoCL from /tmp/gpuagg-pocl and
# multi_device_test (built in build/default) must pass on two devices of it.
#   bench/check_pocl_stage.sh   (after bench/stage_pocl.sh)
if [ "${1:-}" != inside ]; then rm -rf /tmp/gpuagg-pocl; exec unshare -m bash "$0" inside; fi
mkdir -p /tmp/md_empty /tmp/md_vendors && rm -f /tmp/md_vendors/*
set -e
for d in /usr/lib/llvm-15 /usr/share/pocl /usr/lib/x86_64-linux-gnu/pocl /etc/OpenCL/vendors; do mount --bind /tmp/md_empty $d; done
for f in /usr/lib/x86_64-linux-gnu/libLLVM-15.so.1 /usr/lib/x86_64-linux-gnu/libpocl.so.2.10.0 /usr/lib/x86_64-linux-gnu/libhwloc.so.15.6.1 /usr/lib/x86_64-linux-gnu/libz3.so.4 /etc/ld.so.cache; do mount --bind /dev/null $f; done
export OCL_ICD_VENDORS=/tmp/md_vendors
source bench/pocl_env.sh
ls $GPUAGG_POCL/lib
clinfo -l; ldd $GPUAGG_POCL/usr/lib/x86_64-linux-gnu/libpocl.so.2 | grep -c "not found" || true
POCL_DEVICES="pthread pthread" build/default/tests/multi_device_test 2>&1 | grep -E "ERROR|Status"
