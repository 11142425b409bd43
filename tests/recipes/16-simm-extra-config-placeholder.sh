# source: sgl-project/sglang python/sglang/srt/mem_cache/storage/simm/README.md (commit 1dc322ca15c4), "Using extra-config of sglang arguments"
# recipe: the model is a placeholder.
# hicache-sim: node=hgx-h100
python -m sglang.launch_server \
    --enable-hierarchical-cache \
    --hicache-storage-backend simm \
    --model-path [model_path] \
    --hicache-storage-backend-extra-config '{"manager_address": "127.0.0.1:30001"}'
