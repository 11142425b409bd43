# source: sgl-project/sglang python/sglang/srt/mem_cache/storage/nixl/README.md (commit 0210069f28a6), "Using Command-line JSON String"
# note: the placeholders <model> <ip> <port> filled in.
# recipe: one L20.
# hicache-sim: node=l20x8
export SGLANG_HICACHE_NIXL_BACKEND_PLUGIN=POSIX

python3 -m sglang.launch_server \
  --model-path Qwen/Qwen3-8B \
  --host 0.0.0.0 \
  --port 30000 \
  --page-size 64 \
  --enable-hierarchical-cache \
  --hicache-ratio 2 \
  --hicache-size 64 \
  --hicache-write-policy write_through \
  --hicache-storage-backend nixl \
  --hicache-storage-backend-extra-config '{"use_uring": "true"}'
