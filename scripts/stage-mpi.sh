#!/usr/bin/env bash
# Stages Debian 12's Open MPI for the GPU machine, which has no MPI and cannot install one:
# run here (after scripts/install-deps.sh), from anywhere in the checkout:
#   scripts/stage-mpi.sh
# It writes .device/mpi.tar.xz (Open MPI's and PMIx's files at their Debian paths, and the
# shared libraries they load that are not glibc's, by soname, in deps/) and .device/mpi-setup.sh.
# (.device/ is git-ignored.)
# On the device, after the kit (carry [".device"]):
#   source .device/setup.sh && source .device/mpi-setup.sh && <configure, build, ctest -R mpi_test>
set -euo pipefail
root=$(git rev-parse --show-toplevel)
packages=(openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2)
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { echo "stage-mpi: $p is not installed (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree="$work/tree"
mkdir -p "$tree/deps"
# The packages' files (not their documentation), symlinks as they are.
dpkg -L "${packages[@]}" | while read -r f; do
  case "$f" in /usr/share/doc/* | /usr/share/man/* | /usr/share/lintian/*) continue ;; esac
  if [ -L "$f" ] || [ -f "$f" ]; then echo "${f#/}"; fi
done | sort -u | tar -C / --no-recursion -cf - -T - | tar -C "$tree" -xf -
# The alternatives' names CMake's FindMPI looks for, beside the .openmpi ones they point to.
for name in mpicc mpicxx mpic++ mpirun mpiexec; do
  target=$(readlink -f "/usr/bin/$name")
  ln -sf "$(basename "$target")" "$tree/usr/bin/$name"
done
ln -sfn ../lib/x86_64-linux-gnu/openmpi/include "$tree/usr/include/mpi" 2>/dev/null || true
# Every library the staged programs and plugins load, but glibc's and the compiler runtime's
# (the device's own, newer, serve): by soname, so the device can drop those it has itself.
find "$tree" -type f \( -name '*.so*' -o -perm -u+x \) -print0 | while IFS= read -r -d '' f; do
  file -b "$f" | grep -q ELF || continue
  ldd "$f" 2>/dev/null | awk '/=> \// {print $1, $3}'
done | sort -u | while read -r soname path; do
  case "$soname" in
    linux-vdso* | ld-linux* | libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | libresolv.so* | \
      libutil.so* | libstdc++.so* | libgcc_s.so*) continue ;;
  esac
  case "$path" in "$tree"/*) continue ;; esac
  # Open MPI's and PMIx's own libraries are in the tree at their paths already.
  # (ldd names /lib/... where Debian's merged /usr installed /usr/lib/...)
  [ -e "$tree$path" ] || [ -e "$tree/usr${path#/usr}" ] && continue
  cp -L "$path" "$tree/deps/$soname"
done
mkdir -p "$root/.device"
tar -C "$tree" -cJf "$root/.device/mpi.tar.xz" .
cp "$root/scripts/mpi-device-setup.sh" "$root/.device/mpi-setup.sh"
echo "staged Open MPI: $(du -h "$root/.device/mpi.tar.xz" | cut -f1) in .device/mpi.tar.xz, $(ls "$tree/deps" | wc -l) libraries in deps/"
