# source: sgl-project/sglang python/sglang/srt/mem_cache/storage/simm/README.md (commit 1dc322ca15c4), "Using env variables to configure SiMM"
# recipe: the model is a placeholder.
# hicache-sim: node=hgx-h100
SIMM_CLUSTER_MANAGER="127.0.0.1:30001"
python -m sglang.launch_server \
    --enable-hierarchical-cache \
    --hicache-storage-backend simm \
    --model-path [model_path]
