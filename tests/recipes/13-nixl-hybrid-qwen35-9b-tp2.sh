# source: sgl-project/sglang python/sglang/srt/mem_cache/storage/nixl/README.md (commit 0210069f28a6), "Validated Hybrid-Model Example"
# recipe: two RTX 5090.
# hicache-sim: node=rtx5090x4
export SGLANG_HICACHE_NIXL_BACKEND_STORAGE_DIR=/tmp/sglang_nixl_e2e_storage

~/ve_sgl_dev/bin/sglang serve \
  --model-path /workspace/LLM_models/Qwen3.5-9B \
  --served-model-name Qwen/Qwen3.5-9B \
  --host 127.0.0.1 \
  --tp 2 \
  --reasoning-parser qwen3 \
  --attention-backend triton \
  --enable-hierarchical-cache \
  --hicache-ratio 2 \
  --hicache-io-backend direct \
  --hicache-mem-layout page_first_direct \
  --hicache-storage-prefetch-policy wait_complete \
  --page-size 256 \
  --log-level info \
  --disable-cuda-graph \
  --hicache-storage-backend nixl \
  --hicache-storage-backend-extra-config @/tmp/nixl.config.toml \
  --mamba-radix-cache-strategy extra_buffer
