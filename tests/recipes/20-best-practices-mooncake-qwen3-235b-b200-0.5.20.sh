# source: sgl-project/sglang docs/advanced_features/hicache_best_practices.md (commit 0712681af222), "Deployment with Mooncake", read by an older release
# hicache-sim: node=hgx-b200 sglang=0.5.20
MODEL_PATH=Qwen/Qwen3-235B-A22B-Instruct-2507
python3 -m sglang.launch_server \
  --model-path $MODEL_PATH \
  --tp 8 \
  --page-size 64 \
  --enable-hierarchical-cache \
  --hicache-ratio 2 \
  --hicache-mem-layout page_first \
  --hicache-io-backend kernel \
  --hicache-storage-backend mooncake \
  --hicache-write-policy write_through \
  --hicache-storage-prefetch-policy timeout
