# source: sgl-project/sglang python/sglang/srt/mem_cache/storage/aibrix_kvcache/README.md (commit 3d7a83122640), "Deploy Model Serving"
# recipe: one A100 80 GB.
# hicache-sim: node=hgx-a100-80g
export AIBRIX_KV_CACHE_OL_L1_CACHE_ENABLED="0"
export AIBRIX_KV_CACHE_OL_L2_CACHE_BACKEND="PRIS"
export AIBRIX_KV_CACHE_OL_PRIS_REMOTE_ADDR="127.0.0.1"
export AIBRIX_KV_CACHE_OL_PRIS_REMOTE_PORT="6379"
export AIBRIX_KV_CACHE_OL_PRIS_PASSWORD="kvcache-redis"
MODEL_LENGTH=32768&&NCCL_MIN_NCHANNELS=24&&NCCL_IB_QPS_PER_CONNECTION=8&&NCCL_DEBUG=INFO \
python3 -m sglang.launch_server \
	--model-path /code/models/Qwen3-32B \
	--host 0.0.0.0 --port 8080 \
	--enable-hierarchical-cache \
	--hicache-storage-backend aibrix \
	--page-size 16 \
	--hicache-write-policy write_back \
	--enable-metrics --hicache-ratio=2
