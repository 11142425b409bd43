# source: sgl-project/sglang docs/advanced_features/hicache_valkey_storage.md (commit 620f1b5c5b3e), "Command-Line Usage"
# note: as published: a storage backend without --enable-hierarchical-cache.
# recipe: one RTX 4090.
# hicache-sim: node=rtx4090x8
export VALKEY_HOST=your-valkey-host
export VALKEY_PORT=6379

python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-8B-Instruct \
    --hicache-storage-backend valkey
