#!/bin/sh
# eaglesim links no CUDA library (the CUDA part is a module opened when a command needs a GPU):
# its dynamic dependencies name none, and the planning commands run with no CUDA part at all.
# Usage: cuda_free_binary.sh EXE REPO
set -eu
exe=$1
repo=$2
needed=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$exe needs: $(echo $needed)"
for lib in $needed; do
  case "$lib" in
    libcuda*|libcublas*|libnccl*|libnvrtc*|libmpi*|libcudnn*) echo "eaglesim needs $lib at start-up"; exit 1 ;;
  esac
done
# A path where no module exists: what a machine without the CUDA part sees.
export EAGLESIM_CUDA_PART=/nonexistent/libeaglesim-cuda.so
cd "$repo"
"$exe" --version > /dev/null
"$exe" run --backend sim --strategy nccl > /dev/null
"$exe" sweep --model llama-3.1-8b --tp 1 --topology 8x-h100-nvswitch --batch 1 > /dev/null
err=$(mktemp)
trap 'rm -f "$err"' EXIT
set +e
"$exe" run --backend cuda --strategy nccl > /dev/null 2> "$err"
rc=$?
set -e
msg=$(cat "$err")
[ "$rc" -eq 3 ] || { echo "run --backend cuda without the CUDA part: exit $rc, expected 3 ($msg)"; exit 1; }
case "$msg" in *EAGLESIM_CUDA_PART*) ;; *) echo "the message does not say where it looked: $msg"; exit 1 ;; esac
echo "planning commands ran without the CUDA part"
