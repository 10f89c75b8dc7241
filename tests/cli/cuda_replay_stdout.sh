#!/bin/sh
# eaglesim-cuda-replay's stdout carries only its JSON lines (scripts and mpirun wrappers parse
# it); logs and errors go to stderr. Without a GPU it must exit 3 with an empty stdout and the
# reason on stderr; with one, exit 0 and every stdout line a JSON object.
# Usage: cuda_replay_stdout.sh EAGLESIM_CUDA_REPLAY TRACE
set -u
bin=$1
trace=$2
err=$(mktemp)
trap 'rm -f "$err"' EXIT
out=$("$bin" "$trace" --ranks 1 --iters 2 --warmup 1 -s nccl 2>"$err")
rc=$?
case $rc in
  0)
    [ -n "$out" ] || { echo "exit 0 but nothing on stdout"; exit 1; }
    if printf '%s\n' "$out" | grep -qv '^{'; then
      echo "a line on stdout that is not a JSON object:"; printf '%s\n' "$out"; exit 1
    fi ;;
  3)
    [ -z "$out" ] || { echo "exit 3 but stdout is not empty:"; printf '%s\n' "$out"; exit 1; }
    [ -s "$err" ] || { echo "exit 3 without a message on stderr"; exit 1; }
    echo "no GPU: exit 3, stdout empty, stderr: $(head -c 200 "$err")" ;;
  *)
    echo "unexpected exit code $rc"; cat "$err"; exit 1 ;;
esac
exit 0
