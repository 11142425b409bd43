# source: sgl-project/sglang python/sglang/srt/mem_cache/storage/nixl/README.md (commit 0210069f28a6), "Using Default Configuration"
# release: 0.5.23
# note: the placeholders <model> <ip> <port> filled in (bash reads `<model>` as a redirection).
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
