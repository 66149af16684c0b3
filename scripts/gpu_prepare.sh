#!/usr/bin/env bash
# scripts/gpu_prepare.sh: run HERE (a Debian 12 machine with apt) before a GPU
# run. Fetches the Debian packages the build needs and the bare GPU machine
# lacks (glog, gflags, oneTBB, protobuf + protoc, oneDNN, OpenBLAS, Gloo,
# GoogleTest, Google Benchmark and their shared-library closure, less what
# any CUDA image with a compiler has: libc6, libstdc++6, libgcc-s1, libgomp1,
# zlib1g, liblzma5) with `apt-get download` into .gpu_debs/ (git-ignored;
# the device tool's `carry` takes it). scripts/gpu_check.sh unpacks them
# there with `dpkg -x` into a private prefix.
#
# Prints the folder's size and fails when it is over OFL_GPU_DEBS_MAX_MB
# (default 40: the device tool carries 64 MiB in all, working tree
# included). Re-running downloads only what is missing; a MANIFEST lists
# package, version and bytes.
#
# glibc: these are Debian 12 builds; their newest symbol versions (objdump -T
# over every unpacked library and protoc, 2026-12-01) are GLIBC_2.34 and
# GLIBCXX_3.4.30, so they load on x86-64 Linux with glibc >= 2.34 and GCC
# 12's libstdc++ or newer (Ubuntu 22.04 and 24.04 qualify; the GPU image's
# Python 3.12.3 suggests 24.04: glibc 2.39). The build there uses that
# machine's own compiler and CUDA; only these libraries, headers, CMake
# configs and protoc come from here.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${OFL_GPU_DEBS:-$ROOT/.gpu_debs}"
MAX_MB="${OFL_GPU_DEBS_MAX_MB:-40}"

# One line per package: what the build needs (-dev: headers, CMake configs,
# .so links) and what those load at run time.
OFL_GPU_PACKAGES=(
  libgoogle-glog-dev libgoogle-glog0v6 libgflags-dev libgflags2.2 libunwind8 libunwind-dev
  libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5 libhwloc15
  libprotobuf-dev libprotobuf32 libprotobuf-lite32 libprotoc32 protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian
  libopenblas-dev libopenblas0 libopenblas0-pthread libopenblas-pthread-dev libgfortran5
  libquadmath0
  libdnnl-dev libdnnl2 ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-c-headers
  opencl-clhpp-headers
  libgloo-dev libgloo0 libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200
)

mkdir -p "$DEST"
cd "$DEST"
missing=()
for pkg in "${OFL_GPU_PACKAGES[@]}"; do
  compgen -G "${pkg}_*.deb" >/dev/null || missing+=("$pkg")
done
if ((${#missing[@]} > 0)); then
  echo "[gpu_prepare] apt-get download ${missing[*]}" >&2
  apt-get download "${missing[@]}" >/dev/null
fi

: >MANIFEST
for deb in *.deb; do
  printf '%s %s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
    "$(stat -c %s "$deb")" >>MANIFEST
done
bytes=$(du -cb ./*.deb | tail -1 | cut -f1)
mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
echo "[gpu_prepare] $(ls ./*.deb | wc -l) packages, $mb MiB in $DEST" >&2
if awk -v b="$bytes" -v m="$MAX_MB" 'BEGIN { exit !(b > m * 1048576) }'; then
  echo "[gpu_prepare] over the budget of $MAX_MB MiB" >&2
  exit 1
fi
