# source: sgl-project/sglang python/sglang/srt/mem_cache/storage/mooncake_store/README.md (commit 027711810bc5), "Start the SGLang server with Mooncake enabled"
# recipe: the model is a placeholder (`[model_path]`).
# hicache-sim: node=hgx-h100
MOONCAKE_TE_META_DATA_SERVER="http://127.0.0.1:8080/metadata" \
MOONCAKE_MASTER=127.0.0.1:50051 \
MOONCAKE_PROTOCOL="rdma" \
MOONCAKE_DEVICE="erdma_0,erdma_1" \
MOONCAKE_GLOBAL_SEGMENT_SIZE=4294967296 \
python -m sglang.launch_server \
    --enable-hierarchical-cache \
    --hicache-storage-backend mooncake\
    --model-path [model_path]
