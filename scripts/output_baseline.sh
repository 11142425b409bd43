#!/usr/bin/env bash
# Every user-visible output of one hicache-sim binary, written to a folder, so that a
# refactoring can be checked byte for byte: build the binary before the change, run
# this script into folder A; build after, run into folder B; `diff -r A B` must be empty.
#
#   scripts/output_baseline.sh target/release/hicache-sim /tmp/before
#   (change, cargo build --release)
#   scripts/output_baseline.sh target/release/hicache-sim /tmp/after
#   diff -r /tmp/before /tmp/after && echo identical
#
# Each case writes NAME.out (stdout), NAME.err (stderr) and NAME.rc (exit code). Cases:
# `startup` (JSON and text) of every scenario under `--sglang all` and single releases
# and what-ifs; `replay` of the bundled traces (timing on and off, both trees, L3,
# buffer_only, the policy simulator); the quickstart `sweep` (CSV and the files it
# writes, by checksum); `plan` (JSON and text) of two scenarios; `check` (JUnit and
# JSON) of the launch-command corpus; `versions`, `presets`; and error messages for bad
# YAML, bad SGLang choices, bad flags and unknown releases.
#
# Runs from the repository root (paths in outputs are relative to it). A few minutes on
# two shared cores. Needs: bash, coreutils (sha256sum).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:?usage: scripts/output_baseline.sh BINARY OUTDIR}")
OUT=${2:?usage: scripts/output_baseline.sh BINARY OUTDIR}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

# run NAME ARGS…: one case.
run() {
  local name=$1
  shift
  "$BIN" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  echo $? >"$OUT/$name.rc"
}

# --- startup ---------------------------------------------------------------------------
for f in scenarios/*.yaml; do
  b=$(basename "$f" .yaml)
  run "startup.$b.all.json" startup "$f" --sglang all --format json --runs 20
  run "startup.$b.all.txt" startup "$f" --sglang all --runs 20
  run "startup.$b.own.txt" startup "$f" --runs 20
  for v in 0.5.14 0.5.19 0.5.21 0.5.23 auto-hicache; do
    run "startup.$b.$v.json" startup "$f" --sglang "$v" --format json --runs 20
  done
done
Q=scenarios/quickstart.yaml
G=scenarios/gb300-glm52-135g.yaml
run startup.q.buffer_only.0.5.19 startup $Q --sglang 0.5.19 --format json --runs 5 \
  --set server.hicache_host_memory_mode=buffer_only --set server.hicache_storage_backend=file --set server.hicache_ratio=1.5
run startup.q.buffer_only.wb.0.5.21 startup $Q --sglang 0.5.21 --runs 5 \
  --set server.hicache_host_memory_mode=buffer_only --set server.hicache_storage_backend=file \
  --set server.hicache_write_policy=write_back
run startup.q.buffer_only.wb.0.5.22 startup $Q --sglang 0.5.22 --runs 5 \
  --set server.hicache_host_memory_mode=buffer_only --set server.hicache_storage_backend=file \
  --set server.hicache_write_policy=write_back
run startup.q.tlru.0.5.21 startup $Q --sglang 0.5.21 --runs 5 --set server.radix_eviction_policy=tlru
run startup.q.tlru.0.5.21.json startup $Q --sglang 0.5.21 --runs 5 --format json --set server.radix_eviction_policy=tlru
run startup.q.spec.eagle3 startup $Q --runs 5 --set server.speculative_algorithm=EAGLE3
run startup.q.spec.nextn startup scenarios/deepseek-v3-mtp-packed.yaml --runs 5 --set server.speculative_algorithm=nextn
run startup.q.kv.bf16 startup $G --runs 5 --set server.kv_cache_dtype=bfloat16
run startup.q.kv.fp8e5m2 startup $G --runs 5 --format json --set server.kv_cache_dtype=fp8_e5m2
run startup.q.layout startup $Q --runs 5 --set server.hicache_mem_layout=layer_first --set server.hicache_io_backend=direct
run startup.q.prefetch startup $Q --runs 5 --format json --set server.hicache_storage_prefetch_policy=best_effort --set server.hicache_storage_backend=mooncake
run startup.q.launch startup $Q --runs 5 --set 'server.launch=python -m sglang.launch_server --model-path m --tp 4 --enable-hierarchical-cache --hicache-write-policy write_through_selective --hicache-io-backend direct --hicache-mem-layout page_first_direct --radix-eviction-policy lfu --hicache-storage-backend file --hicache-storage-prefetch-policy wait_complete'
run startup.q.csv startup $Q --runs 5 --csv "$SCRATCH/ranks.csv"
cp "$SCRATCH/ranks.csv" "$OUT/startup.q.csv.csv" 2>/dev/null

# --- replay ----------------------------------------------------------------------------
T=traces/synthetic_trace.jsonl
for tree in v1 unified_0_5_23; do
  for timing in off on; do
    run "replay.synth.$tree.$timing" replay --trace $T --page-size 64 --l1-pages 2000 --l2-pages 6000 --timing $timing --config tree=$tree
    run "replay.synth.$tree.$timing.l3.json" replay --trace $T --page-size 64 --l1-pages 2000 --l2-pages 6000 --l3-pages 20000 --timing $timing --config tree=$tree --format json
    run "replay.synth.$tree.$timing.wb" replay --trace $T --page-size 64 --l1-pages 2000 --l2-pages 3000 --l3-pages unbounded --write-policy write_back --timing $timing --config tree=$tree
    run "replay.synth.$tree.$timing.buffer" replay --trace $T --page-size 64 --l1-pages 2000 --l2-pages 3000 --l3-pages unbounded --timing $timing --config tree=$tree --config host_memory_mode=buffer_only
  done
done
for v in 0.5.14 0.5.15 0.5.17 0.5.19 0.5.23 pre-28614 pr28614 auto-hicache; do
  run "replay.synth.sglang.$v" replay --trace $T --page-size 64 --l1-pages 1500 --l2-pages 4000 --l3-pages 9000 --sglang $v --format json
done
run replay.synth.lfu replay --trace $T --page-size 64 --l1-pages 1500 --l2-pages 4000 --eviction-policy lfu
run replay.synth.fifo replay --trace $T --page-size 64 --l1-pages 1500 --l2-pages 4000 --eviction-policy fifo
run replay.synth.plain replay --trace $T --page-size 64 --l1-pages 1500 --l2-pages 4000 --config lru_mode=plain_page
run replay.synth.scheduler replay --trace $T --page-size 64 --l1-pages 1500 --l2-pages 4000 --config call_pattern=scheduler_0_5_23 --config tree=unified_0_5_23
run replay.synth.timeline replay --trace $T --page-size 64 --l1-pages 1500 --l2-pages 4000 --timing on --timeline "$SCRATCH/tl.csv"
cp "$SCRATCH/tl.csv" "$OUT/replay.synth.timeline.csv" 2>/dev/null
run replay.synth.policysim replay --trace $T --engine policy-simulator --l1-pages 1500 --l2-pages 4000
run replay.synth.boundary replay --trace $T --write-policy boundary_l1_l2 --l1-pages 1500 --l2-pages 4000
gzip -dc traces/conversation_trace.jsonl.gz >"$SCRATCH/conversation_trace.jsonl"
for t in traces/generated_agentic_bursty.jsonl traces/generated_chat_agentic_mix.jsonl "$SCRATCH/conversation_trace.jsonl" traces/kv-cache-tester/trace_0012.json; do
  b=$(basename "$t" | cut -d. -f1)
  bs=()
  case $b in generated_*) bs=(--block-size 64) ;; esac
  run "replay.$b.off" replay --trace "$t" "${bs[@]}" --l1-pages 300 --l2-pages 900 --l3-pages 3000
  run "replay.$b.on" replay --trace "$t" "${bs[@]}" --l1-pages 300 --l2-pages 900 --timing on --format json
  run "replay.$b.policysim" replay --trace "$t" "${bs[@]}" --engine policy-simulator --l1-pages 300 --l2-pages 900
done
run replay.q.own replay $Q
run replay.q.json replay $Q --format json
for v in 0.5.14 0.5.17 0.5.19 0.5.23; do
  run "replay.q.$v" replay $Q --sglang $v --set runtime.max_requests=1500
  run "replay.q.$v.l3" replay $Q --sglang $v --set runtime.max_requests=1500 --set server.hicache_storage_backend=file --format json
done
run replay.q.buffer replay $Q --sglang 0.5.19 --set runtime.max_requests=1500 \
  --set server.hicache_host_memory_mode=buffer_only --set server.hicache_storage_backend=file --set server.hicache_ratio=1.5
run replay.q.buffer.on replay $Q --sglang 0.5.23 --set runtime.max_requests=1500 --timing on \
  --set server.hicache_host_memory_mode=buffer_only --set server.hicache_storage_backend=file --set server.hicache_ratio=1.5
run replay.q.tlru replay $Q --sglang 0.5.21 --set server.radix_eviction_policy=tlru
run replay.q.wb replay $Q --set runtime.max_requests=1500 --set server.hicache_write_policy=write_back --timing on
run replay.q.prefetch replay $Q --set runtime.max_requests=1500 --timing on --set server.hicache_storage_backend=file \
  --set server.hicache_storage_prefetch_policy=wait_complete

# --- sweep -----------------------------------------------------------------------------
run sweep.q sweep $Q --out "$SCRATCH/sweep" --quiet --jobs 2
cp "$SCRATCH/sweep/results.csv" "$OUT/sweep.q.results.csv" 2>/dev/null
# The journal's lines come in completion order (any with --jobs 2): kept sorted.
sort "$SCRATCH/sweep/results.journal.jsonl" >"$OUT/sweep.q.journal.sorted" 2>/dev/null
# (.hicache-sim.* name the holder and the run's own files: paths and pids.)
(cd "$SCRATCH/sweep" 2>/dev/null && find . -type f ! -name '.hicache-sim.*' ! -name '*.journal.jsonl' | sort | xargs sha256sum) >"$OUT/sweep.q.files.sha256"

# --- plan ------------------------------------------------------------------------------
run plan.q.json plan $Q --format json --runs 200
run plan.q.txt plan $Q --runs 200
run plan.q.all.json plan $Q --sglang all --format json --runs 100 --no-replay
run plan.g.json plan $G --format json --runs 200
run plan.g.txt plan $G --runs 200 --sglang 0.5.21,0.5.23
run plan.q.out plan $Q --runs 100 --out "$SCRATCH/plan"
(cd "$SCRATCH/plan" 2>/dev/null && find . -type f ! -name '.hicache-sim.*' | sort | xargs sha256sum) >"$OUT/plan.q.out.files.sha256"

# --- check -----------------------------------------------------------------------------
# Bare launch commands name no machine: each file on an HGX B300
# (a file whose model is no preset, or that its release refuses, keeps its error as output).
for f in tests/launch_corpus/*.sh; do
  b=$(basename "$f" .sh)
  run "check.corpus.$b.junit" check "$f" --format junit --runs 20 --node hgx-b300
  run "check.corpus.$b.all.json" check "$f" --format json --runs 10 --node hgx-b300 --sglang all
done
run check.scenarios.txt check scenarios/*.yaml --runs 50

# --- listings --------------------------------------------------------------------------
run versions.json versions --format json
run versions.txt versions
run presets.json presets --format json
run presets.txt presets

# --- errors ----------------------------------------------------------------------------
printf 'node: gb300\nmodel: [glm-5.2\n' >"$SCRATCH/bad_yaml.yaml"
printf 'node: gb300\nmodel: glm-5.2\nserver:\n  hicache_sise: 3\n' >"$SCRATCH/bad_key.yaml"
printf 'node: gb300\nmodel: glm-5.2\nsglang: 0.5.99\n' >"$SCRATCH/bad_release.yaml"
printf 'node: gb300\nmodel: glm-5.2\nsglang: 0.5.20\nserver:\n  enable_hierarchical_cache: true\n  hicache_size: 100\n  radix_eviction_policy: tlru\n' >"$SCRATCH/tlru_0520.yaml"
printf 'node: gb300\nmodel: glm-5.2\nserver:\n  enable_hierarchical_cache: true\n  hicache_size: 100\n  hicache_write_policy: write_bak\n' >"$SCRATCH/bad_wp.yaml"
printf 'node: gb3000\nmodel: glm-5.2\nserver:\n  enable_hierarchical_cache: true\n  hicache_write_policy: write_bak\n' >"$SCRATCH/two_errors.yaml"
for f in bad_yaml bad_key bad_release tlru_0520 bad_wp two_errors; do
  cp "$SCRATCH/$f.yaml" "$OUT/err.$f.yaml"
  (cd "$SCRATCH" && "$BIN" startup "$f.yaml" >"$OUT/err.$f.out" 2>"$OUT/err.$f.err"; echo $? >"$OUT/err.$f.rc")
done
for set in server.hicache_write_policy=write_bak server.hicache_host_memory_mode=bufer_only \
  server.hicache_storage_prefetch_policy=eventually server.hicache_io_backend=kernal \
  server.hicache_mem_layout=page_frist server.hicache_storage_backend=nonesuch \
  server.hicache_storage_backend= server.radix_eviction_policy=lru2 server.radix_eviction_policy=fifo \
  server.kv_cache_dtype=nvfp4 server.kv_cache_dtype=fp9 server.kv_cache_dtype=fp8_ds_mla \
  server.speculative_algorithm=whatever server.hicache_write_policy=3 server.hicache_host_memory_mode=null \
  server.radix_eviction_policy=3 server.hicache_storage_backend=3 server.kv_cache_dtype=3 server.speculative_algorithm=3 \
  server.hicache_io_backend=null server.hicache_mem_layout='{a: 1}' server.kv_cache_dtype=null server.radix_eviction_policy=null \
  sglang=bogus sglang=0.5.99 sglang=v0.5.21 'sglang=[1]' server.hicache_host_memory_fraction=0.5; do
  n=$(echo "$set" | tr '=/[]{}: ' '________')
  run "err.set.$n" startup $Q --runs 2 --set "$set"
  run "err.set.$n.0.5.20" startup $Q --runs 2 --sglang 0.5.20 --set "$set"
done
run err.launch.wp startup $Q --set 'server.launch=python -m sglang.launch_server --model-path m --hicache-write-policy write_bak'
run err.launch.tlru startup $Q --sglang 0.5.20 --set 'server.launch=python -m sglang.launch_server --model-path m --radix-eviction-policy tlru'
run err.launch.kv startup $Q --set 'server.launch=python -m sglang.launch_server --model-path m --kv-cache-dtype fp16'
for cmd in startup replay sweep plan check; do
  target=$Q
  [ $cmd = check ] && target=tests/launch_corpus/03-bench-readme-hicache.sh
  extra=()
  [ $cmd = check ] && extra=(--node gb300 --runs 5)
  [ $cmd = plan ] && extra=(--runs 20 --no-replay)
  [ $cmd = startup ] && extra=(--runs 2)
  [ $cmd = sweep ] && extra=(--out "$SCRATCH/sweep_bogus" --quiet)
  [ $cmd = replay ] && extra=(--set runtime.max_requests=10)
  run "err.sglang_bogus.$cmd" $cmd $target --sglang bogus "${extra[@]}"
  run "err.sglang_near.$cmd" $cmd $target --sglang 0.5.2 "${extra[@]}"
done
run err.replay.sglang_bogus_notrace replay --trace $T --sglang lates --l1-pages 10 --l2-pages 10
run err.replay.wp replay --trace $T --write-policy write_bak
run err.replay.ev replay --trace $T --eviction-policy tlru
run err.replay.tree replay --trace $T --config tree=v2
run err.replay.cap replay --trace $T --config prefetch_capacity_rule=half
run err.replay.mode replay --trace $T --config host_memory_mode=buffer_only
run err.replay.key replay --trace $T --config write_polcy=write_back
for c in eviction_policy=3 eviction_policy=null 'eviction_policy={a: 1}' write_policy=3 host_memory_mode=null prefetch_policy=3 tree=3 prefetch_capacity_rule=3 device_evict_amount=all; do
  n=$(echo "$c" | tr '=/{}: ' '______')
  run "err.replay.config.$n" replay --trace $T --config "$c"
done
run err.debug_sizing debug-sizing /dev/null --sglang bogus
run err.runs startup $Q --runs 0
run err.runs_yaml startup $Q --set runs=0
run err.runs_check check $Q --runs 0
# The scratch folder's name and the sweep's wall time differ from run to run.
sed -i "s|$SCRATCH|SCRATCH|g; s/ in [0-9.]* s -> / in N s -> /" "$OUT"/*
echo "wrote $(ls "$OUT" | wc -l) files to $OUT"
