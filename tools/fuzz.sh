#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each (default 300), one after another, single process.
# Usage: tools/fuzz.sh [SECONDS] [TARGET...]      targets: trace_reader topology_reader
#                                                  model_config_reader kineto_importer lengths_file_reader
# Builds build-fuzz (clang, ASan + UBSan, libFuzzer) when needed. Each target's working corpus
# lives in build-fuzz/corpus/TARGET (kept between runs, so later runs start where earlier ones
# stopped) and is seeded from the repository's files of that format. Crashes, hangs and leaks
# land in build-fuzz/artifacts/TARGET/; the script exits 1 when any target found one. Turn a
# finding into a regression test by copying it to tests/data/fuzz_regressions/TARGET/.
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_MAX_LEN (default 65536),
#              FUZZ_RSS_MB (default 2048), FUZZ_TIMEOUT_S per input (default 10).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
seconds=${1:-300}
shift || true
all_targets=(trace_reader topology_reader model_config_reader kineto_importer lengths_file_reader)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
build=${FUZZ_BUILD_DIR:-build-fuzz}

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: clang++ not found (tools/setup.sh installs it with EAGLESIM_FUZZ=1)" >&2
  exit 2
fi
if [ ! -f "$build/build.ninja" ]; then
  # -O2 for execution speed; line tables only (not full -g): enough for reports, half the compile time.
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_CXX_FLAGS="-O2 -gline-tables-only" \
    -DEAGLESIM_FUZZ=ON -DEAGLESIM_SANITIZE=ON -DEAGLESIM_CUDA=OFF \
    -DEAGLESIM_TESTS=OFF -DEAGLESIM_BENCH=OFF >/dev/null
fi
cmake --build "$build" -j "${EAGLESIM_JOBS:-$(nproc)}" --target $(printf 'fuzz_%s ' "${targets[@]}")

# Seed inputs per target: the shipped and test files of that format (small ones only: a seed
# bigger than max_len would be cut into invalid JSON and teach the fuzzer nothing).
seeds_of() {
  case "$1" in
    trace_reader) ls tests/data/*.json tests/data/bad/*.json traces/*.json ;;
    topology_reader) ls models/topologies/*.json tests/data/bad_topology/*.json tests/data/run_topo_*.json ;;
    model_config_reader) ls models/llm/*.json ;;
    kineto_importer) find tests/data/kineto -name '*.json' ;;
    lengths_file_reader) ls tests/data/serve/* tests/data/bad_inputs/serve_* ;;
  esac 2>/dev/null
  # Earlier findings are seeds too: the fuzzer then checks around the fixed spot.
  [ -d "tests/data/fuzz_regressions/$1" ] && find "tests/data/fuzz_regressions/$1" -type f
  return 0
}

max_len=${FUZZ_MAX_LEN:-65536}
status=0
summary=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"; artifacts="$build/artifacts/$t/"; log="$build/logs/$t.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  seeds="$build/seeds/$t"; rm -rf "$seeds"; mkdir -p "$seeds"
  while IFS= read -r f; do
    [ -n "$f" ] && [ "$(stat -c %s "$f")" -le "$max_len" ] && cp "$f" "$seeds/$(echo "$f" | tr / _)"
  done < <(seeds_of "$t")
  before=$(find "$artifacts" -type f | wc -l)
  echo "== fuzz_$t: ${seconds}s, $(ls "$seeds" | wc -l) seeds, corpus $(ls "$corpus" | wc -l) inputs"
  # TMPDIR: the Kineto target writes each input to a temporary file; keep them in the build dir.
  mkdir -p "$build/tmp"
  rc=0
  TMPDIR="$here/$build/tmp" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/tests/fuzz/fuzz_$t" "$corpus" "$seeds" -dict=tests/fuzz/json.dict -max_len="$max_len" \
    -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT_S:-10}" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" \
    -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1 || rc=$?
  after=$(find "$artifacts" -type f | wc -l)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)
  line="fuzz_$t: rc=$rc executions=$execs $last corpus=$(ls "$corpus" | wc -l) new_artifacts=$((after - before))"
  echo "$line"
  summary+=("$line")
  if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
    status=1
    grep -E 'ERROR|SUMMARY|Test unit written|terminate called|what\(\)' "$log" | head -20 >&2 || true
  fi
done
echo "== fuzz summary (logs in $build/logs/)"
printf '%s\n' "${summary[@]}"
exit $status
