# Source on the GPU machine after `source .device/setup.sh` (which points OCL_ICD_VENDORS at
# $GPUAGG_SYSROOT/vendors and registers NVIDIA's driver there):
#   source .device/setup.sh && source bench/pocl_env.sh && clinfo -l
# Unpacks .device/pocl.tar.xz (bench/stage_pocl.sh) into /tmp/gpuagg-pocl (the path the
# tarball's libpocl was patched for) and registers PoCL's ICD beside NVIDIA's, so the CPU is an
# OpenCL device too ("Portable Computing Language / pthread-..."). Safe to source twice.
_gpuagg_pocl_tar="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.device/pocl.tar.xz"
export GPUAGG_POCL=/tmp/gpuagg-pocl
if [ ! -f "$GPUAGG_POCL/.unpacked" ]; then
  if [ ! -f "$_gpuagg_pocl_tar" ]; then
    # stage_pocl.sh's two parts: one carried by an earlier command into /tmp/gpuagg-pocl-parts,
    # the other here in .device (or both here).
    mkdir -p /tmp/gpuagg-pocl-parts
    cp "$(dirname "$_gpuagg_pocl_tar")"/pocl.part.* /tmp/gpuagg-pocl-parts/ 2> /dev/null
    cat /tmp/gpuagg-pocl-parts/pocl.part.* > /tmp/gpuagg-pocl.tar.xz
    _gpuagg_pocl_tar=/tmp/gpuagg-pocl.tar.xz
  fi
  mkdir -p "$GPUAGG_POCL" && tar xJf "$_gpuagg_pocl_tar" -C "$GPUAGG_POCL" && touch "$GPUAGG_POCL/.unpacked"
fi
# The packed libraries the system lacks (by soname, as the dynamic loader sees it) go on
# LD_LIBRARY_PATH; newer system versions of the others stay in use.
mkdir -p "$GPUAGG_POCL/lib"
for _so in $(cat "$GPUAGG_POCL/fallback.list"); do
  if ! /sbin/ldconfig -p 2>/dev/null | grep -q " $_so "; then
    ln -sf "$GPUAGG_POCL/fallback/$_so" "$GPUAGG_POCL/lib/$_so"
  fi
done
export LD_LIBRARY_PATH="$GPUAGG_POCL/lib:$GPUAGG_POCL/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "${OCL_ICD_VENDORS:=$GPUAGG_POCL/vendors}"
export OCL_ICD_VENDORS
echo "$GPUAGG_POCL/usr/lib/x86_64-linux-gnu/libpocl.so.2" > "$OCL_ICD_VENDORS/pocl.icd"
# PoCL's kernel cache, out of the home directory.
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-/tmp/gpuagg-pocl-cache}"
unset _gpuagg_pocl_tar _so
