#!/usr/bin/env bash
# Prints the README's hit-rate tables (markdown) from `hicache-sim replay`: the host tier
# under 0.5.18's rules (`--sglang 0.5.18`: the `hiradix` tree) and 0.5.23's
# (`--sglang 0.5.23`: `unified_0_5_23`); the device tier under the V1 tree, 0.5.23's tree
# and plain page LRU. Run from anywhere; builds the release binary (B=… to use another).
set -euo pipefail
cd "$(dirname "$0")/../../.."
[ -n "${B:-}" ] || cargo build --release -q
B=${B:-${CARGO_TARGET_DIR:-target}/release/hicache-sim}
rate() { # field args...
  local f=$1; shift
  "$B" replay --format json "$@" | python3 -c "import json,sys; print('%.2f %%' % (100*json.load(sys.stdin)['metrics']['$f']))"
}

echo "### Host tier: total hit rate, 0.5.18 vs 0.5.23 (timing off, LRU, 64-token pages)"
echo
echo "| trace | L1 pages | write policy | L2 1×: 0.5.18 | L2 1×: 0.5.23 | L2 2×: 0.5.18 | L2 2×: 0.5.23 | L2 4×: 0.5.18 | L2 4×: 0.5.23 |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for spec in "synthetic_trace.jsonl 512 8000" "generated_chat_agentic_mix.jsonl 64 1000" "generated_agentic_bursty.jsonl 64 500"; do
  set -- $spec; trace=$1; block=$2; l1=$3
  for wp in write_through write_back; do
    row="| \`$trace\` | $(printf "%'d" $l1) | $wp"
    for k in 1 2 4; do
      for rel in 0.5.18 0.5.23; do
        r=$(rate total_hit_rate --trace traces/$trace --block-size $block --page-size 64 \
          --l1-pages $l1 --l2-pages $((k * l1)) --write-policy $wp --sglang $rel)
        row="$row | $r"
      done
    done
    echo "$row |"
  done
done
echo
echo "### Device tier: leaf-only LRU (V1 tree, 0.5.23 tree) against plain page LRU"
echo
echo "| L1 pages | leaf-only LRU, V1 tree (≤ 0.5.18) | leaf-only LRU, 0.5.23 (\`unified_0_5_23\`) | plain page LRU |"
echo "| --- | --- | --- | --- |"
for l1 in 2000 8000 32000 48000; do
  a=(--trace traces/synthetic_trace.jsonl --page-size 64 --l1-pages $l1 --l2-pages 0)
  echo "| $(printf "%'d" $l1) | $(rate device_hit_rate "${a[@]}" --config tree=v1) | $(rate device_hit_rate "${a[@]}" --config tree=unified_0_5_23) | $(rate device_hit_rate "${a[@]}" --config lru_mode=plain_page) |"
done
echo
echo "### hiradix engine, synthetic trace, L1 6000 / L2 12000 pages of 512 tokens, write_through, page-counted"
echo
echo "| tree | L1 hit | L1+L2 hit |"
echo "| --- | --- | --- |"
for tree in v1 unified_0_5_23; do
  a=(--trace traces/synthetic_trace.jsonl --page-size 512 --l1-pages 6000 --l2-pages 12000 --config tree=$tree)
  echo "| \`$tree\` | $(rate device_page_hit_rate "${a[@]}") | $(rate total_page_hit_rate "${a[@]}") |"
done
