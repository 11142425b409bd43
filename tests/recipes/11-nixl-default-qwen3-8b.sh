# source: sgl-project/sglang python/sglang/srt/mem_cache/storage/nixl/README.md (commit 0210069f28a6), "Using Default Configuration"
# note: the placeholders <model> <ip> <port> filled in (bash reads `<model>` as a redirection).
# recipe: one L40S.
# hicache-sim: node=l40sx8
python3 -m sglang.launch_server \
  --model-path Qwen/Qwen3-8B \
  --host 0.0.0.0 \
  --port 30000 \
  --page-size 64 \
  --enable-hierarchical-cache \
  --hicache-ratio 2 \
  --hicache-size 64 \
  --hicache-write-policy write_through \
  --hicache-storage-backend nixl
