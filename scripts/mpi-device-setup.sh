# Source on the GPU machine after the kit's setup:
#   source .device/setup.sh && source .device/mpi-setup.sh
# (scripts/stage-mpi.sh made .device/mpi.tar.xz and copied this file there.) Unpacks Debian
# 12's Open MPI into /tmp/gpuagg-mpi and points Open MPI, PMIx, CMake and the loader at it.
# Safe to source twice.
_gpuagg_mpi_kit="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GPUAGG_MPI_ROOT=/tmp/gpuagg-mpi
if [ ! -f "$GPUAGG_MPI_ROOT/.unpacked" ]; then
  mkdir -p "$GPUAGG_MPI_ROOT" && tar xJf "$_gpuagg_mpi_kit/mpi.tar.xz" -C "$GPUAGG_MPI_ROOT"
  # A library the system has under the same soname is the system's (as new or newer, and what
  # its other programs load): the staged copy goes, so only what the system lacks is added.
  for _lib in "$GPUAGG_MPI_ROOT"/deps/*; do
    [ -e "$_lib" ] || continue
    if /sbin/ldconfig -p 2>/dev/null | grep -q "^[[:space:]]$(basename "$_lib") "; then rm -f "$_lib"; fi
  done
  touch "$GPUAGG_MPI_ROOT/.unpacked"
fi
# Open MPI and PMIx find their plugins, help files and configuration under DESTDIR + the
# Debian paths they were built with.
export OPAL_DESTDIR="$GPUAGG_MPI_ROOT"
export PMIX_DESTDIR="$GPUAGG_MPI_ROOT"
export PATH="$GPUAGG_MPI_ROOT/usr/bin:$PATH"
export LD_LIBRARY_PATH="$GPUAGG_MPI_ROOT/usr/lib/x86_64-linux-gnu:$GPUAGG_MPI_ROOT/usr/lib/x86_64-linux-gnu/openmpi/lib:$GPUAGG_MPI_ROOT/usr/lib/x86_64-linux-gnu/pmix2/lib:$GPUAGG_MPI_ROOT/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export MPI_HOME="$GPUAGG_MPI_ROOT/usr"
# One host, no network: shared memory between the ranks, nothing else tried.
export OMPI_MCA_btl=self,vader
export OMPI_MCA_pml=ob1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
unset _gpuagg_mpi_kit _lib
