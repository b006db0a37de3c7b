#!/usr/bin/env bash
# Packs PoCL 3.1 (the CPU as an OpenCL device) and every library it needs at run time, from
# Debian 12 packages, into .device/pocl.tar.xz, for the GPU machine (Ubuntu 24.04, no package
# install, no network), where bench/pocl_env.sh unpacks and registers it beside NVIDIA's
# driver. Run HERE (Debian 12, apt configured), from anywhere inside the checkout:
#   ../shared/device/stage.sh && bench/stage_pocl.sh
#
# What PoCL needs at run time, and where it comes from in the tarball:
#   libpocl.so.2, its pthread device plugin           libpocl2
#   the kernel library (kernel-*.bc) and headers      libpocl2-common, libpocl2 (usr/share/pocl;
#                                                     found relative to libpocl.so: ../../share/pocl)
#   libclang-cpp, libLLVM (it JIT-compiles kernels)   libclang-cpp15, libllvm15
#   libhwloc, libz3, libxml2 + ICU 72, libedit        libhwloc15, libz3-4, libxml2, libicu72, libedit2
#   the linker for each kernel's shared object        clang's driver runs in process (libclang-cpp)
#                                                     from the path patched below, and calls the
#                                                     system's `ld` (binutils: there with g++)
# Libraries every Ubuntu 24.04 has in a newer version (libc, libstdc++, libgcc_s, libm, zlib,
# liblzma, libffi8, libtinfo6, libbsd0, libmd0, libudev1) are not packed. The rest go to
# fallback/, which pocl_env.sh puts on LD_LIBRARY_PATH only where the system lacks the soname.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
out="$root/.device/pocl.tar.xz"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

packages=(libpocl2 libpocl2-common libclang-cpp15 libllvm15 libhwloc15 libz3-4 libxml2 libicu72 libedit2 clang-15)
apt-get download "${packages[@]}" >/dev/null
for deb in *.deb; do dpkg-deb -x "$deb" tree; done

prefix=/tmp/gpuagg-pocl  # where pocl_env.sh unpacks it
stage="$work/stage"
mkdir -p "$stage/usr/lib/x86_64-linux-gnu" "$stage/usr/share" "$stage/fallback" "$stage/bin"
lib="$work/tree/usr/lib/x86_64-linux-gnu"
cp -a "$lib"/libpocl.so.2* "$stage/usr/lib/x86_64-linux-gnu/"
cp -a "$lib/pocl" "$stage/usr/lib/x86_64-linux-gnu/"
cp -a "$work/tree/usr/share/pocl" "$stage/usr/share/"
# PoCL hands its kernel link to clang's driver under a path fixed at build time; the driver
# looks for its tools beside that path. Patch it, same length, to the unpacked tree (the
# library's relocation covers its data, not this path).
old=/usr/lib/llvm-15/bin/clang-15
new=$prefix/bin/clang-15
[ ${#old} -eq ${#new} ] || { echo "stage_pocl.sh: $new must have ${#old} characters" >&2; exit 1; }
for so in "$stage"/usr/lib/x86_64-linux-gnu/libpocl.so.2.*; do
  [ -L "$so" ] && continue
  grep -c "$old" "$so" >/dev/null || { echo "stage_pocl.sh: $old not in $so" >&2; exit 1; }
  sed -i "s|$old|$new|g" "$so"
done
cp -a "$work/tree/usr/lib/llvm-15/bin/clang-15" "$stage/bin/"
# The libraries the system may lack (pocl_env.sh decides), one file per soname: Debian's
# sonames are often relative links into /usr/lib/llvm-15/lib, which cp -L follows in the tree.
for so in libclang-cpp.so.15 libLLVM-15.so.1 libhwloc.so.15 libz3.so.4 libxml2.so.2 libicuuc.so.72 \
          libicudata.so.72 libedit.so.2; do
  found=$(find "$work/tree" -name "$so" | head -1)
  [ -n "$found" ] || { echo "stage_pocl.sh: $so is in none of the packages" >&2; exit 1; }
  real=$(readlink -f "$found")
  case "$real" in "$work/tree"/*) ;; *) echo "stage_pocl.sh: $found leaves the packages ($real)" >&2; exit 1 ;; esac
  cp "$real" "$stage/fallback/$so"
done
( cd "$stage/fallback" && ls ) > "$stage/fallback.list"
# Only the kernel libraries of the x86-64 variants a server CPU picks (AVX-512, AVX2) and the
# generic fallback; no docs.
rm -rf "$stage/usr/share/doc"
find "$stage/usr/share/pocl" -name 'kernel-x86_64-*.bc' ! -name '*-GENERIC.bc' ! -name '*-avx2.bc' \
  ! -name '*-avx512.bc' -delete

mkdir -p "$root/.device"
tar -C "$stage" -cf - . | xz -T0 -9e > "$out"
# The tracked tree travels with every device command and counts against the same 64 MiB as the
# carried paths, so the tarball goes in two parts, carried by two commands on one warm machine
# (docs/multi_device.md): the first copies its part to /tmp/gpuagg-pocl-parts, pocl_env.sh
# joins them in the second.
rm -f "$root"/.device/pocl.part.*
split -b 40M "$out" "$root/.device/pocl.part."
rm -f "$out"
echo "stage_pocl.sh: $(du -ch "$root"/.device/pocl.part.* | tail -1 | cut -f1) in $root/.device/pocl.part.*"
echo "  on the GPU machine, command 1 (carry .device/pocl.part.aa and the kit): mkdir -p /tmp/gpuagg-pocl-parts && cp .device/pocl.part.aa /tmp/gpuagg-pocl-parts/"
echo "  command 2 (carry .device/pocl.part.ab and the kit): source .device/setup.sh && source bench/pocl_env.sh && clinfo -l"
