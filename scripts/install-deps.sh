#!/usr/bin/env bash
# Installs, from Debian 12's archive, whatever gpuagg's build, tests, examples and benchmarks
# need and this machine lacks. Run as root. Installs nothing when all is there.
set -euo pipefail
packages=(
  cmake g++ make                     # build
  opencl-c-headers opencl-clhpp-headers ocl-icd-opencl-dev  # OpenCL and its C++ bindings
  pocl-opencl-icd                    # OpenCL on the CPU, for machines without a GPU
  libboost-dev                       # Boost.Compute (baselines, device vectors in tests)
  doctest-dev                        # tests
  libcli11-dev nlohmann-json3-dev    # benchmark CLI, tuner cache
  libopenmpi-dev openmpi-bin         # gpuagg/mpi.hpp and its tests under mpirun (optional: without
                                     # them the rest builds and mpi_test is not registered)
  clinfo
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
