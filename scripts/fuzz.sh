#!/usr/bin/env bash
# Fuzz every input parser: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# With a nightly toolchain and cargo-fuzz (cargo +nightly install cargo-fuzz), each target
# runs under libFuzzer (2 GiB RSS and 1 GiB single-allocation limits: a memory blow-up is a
# finding) from the seeds and saved regressions; findings land in fuzz/artifacts/<target>/.
# Without them, the stable mutation fuzzer of crates/tiermem-fuzz runs instead.
# Targets: sim_config agent_plan lackey pinatrace champsim damo trace_reader.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(sim_config agent_plan lackey pinatrace champsim damo trace_reader)
fi
if cargo +nightly fuzz --version >/dev/null 2>&1; then
  for t in "${targets[@]}"; do
    corpus=fuzz/corpus/$t
    mkdir -p "$corpus"
    seeds=(crates/tiermem-fuzz/regressions/$t)
    case $t in
      sim_config) seeds+=(configs/examples) ;;
      agent_plan) seeds+=(configs/agent) ;;
    esac
    existing=()
    for d in "${seeds[@]}"; do [[ -d $d ]] && existing+=("$d"); done
    echo "==> $t: ${secs}s under libFuzzer"
    (cd fuzz && cargo +nightly fuzz run "$t" "../$corpus" "${existing[@]/#/../}" -- \
      -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 2>&1 \
      | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+== ERROR|SUMMARY)" || true)
    if ls fuzz/artifacts/"$t"/crash-* fuzz/artifacts/"$t"/oom-* >/dev/null 2>&1; then
      echo "finding in fuzz/artifacts/$t"; exit 1
    fi
  done
else
  echo "==> no nightly cargo-fuzz: the stable mutation fuzzer, ${secs}s per target"
  TIERMEM_FUZZ_SECS=$secs cargo test --release --locked -p tiermem-fuzz -- --include-ignored bounded --nocapture
fi
