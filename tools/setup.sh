#!/usr/bin/env bash
# Sets up eaglesim on Debian/Ubuntu: installs missing packages (idempotent), configures and
# builds. Usage: tools/setup.sh [BUILD_DIR]   (default: build)
# Environment: EAGLESIM_CUDA=AUTO|ON|OFF (default AUTO), SKIP_APT=1 to skip package checks,
#              EAGLESIM_BUILD_TYPE (default Release), EAGLESIM_JOBS (default: all cores),
#              EAGLESIM_FUZZ=1 to also install clang and its sanitizer/libFuzzer runtimes
#              (tools/fuzz.sh), EAGLESIM_SETUP_ONLY=1 to install packages and stop.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-build}
case "$build_dir" in /*) ;; *) build_dir="$here/$build_dir" ;; esac

packages=(build-essential cmake ninja-build pkg-config libcli11-dev libspdlog-dev libfmt-dev
          nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
          chromium python3 time)
# clang-14 only recommends libclang-rt-14-dev, which holds the ASan/UBSan and libFuzzer runtimes.
[ "${EAGLESIM_FUZZ:-0}" = "1" ] && packages+=(clang libclang-rt-14-dev)

if [ "${SKIP_APT:-0}" != "1" ] && command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "setup: all packages present"
  fi
fi

[ "${EAGLESIM_SETUP_ONLY:-0}" = "1" ] && exit 0

# The CUDA toolkit on Debian lives in /usr/local/cuda and is not on PATH by default.
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

cmake -S "$here" -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE="${EAGLESIM_BUILD_TYPE:-Release}" \
  -DEAGLESIM_CUDA="${EAGLESIM_CUDA:-AUTO}"
cmake --build "$build_dir" -j "${EAGLESIM_JOBS:-$(nproc)}"
echo "setup: built $build_dir/eaglesim"
