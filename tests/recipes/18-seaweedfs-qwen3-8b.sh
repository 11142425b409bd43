# source: sgl-project/sglang python/sglang/srt/mem_cache/storage/seaweedfs/README.md (commit 569eb6b7945f), "Launch"
# recipe: one GH200.
# hicache-sim: node=gh200
python -m sglang.launch_server \
  --model-path Qwen/Qwen3-8B \
  --enable-hierarchical-cache \
  --hicache-storage-backend seaweedfs \
  --hicache-storage-backend-extra-config '{"endpoint": "http://seaweedfs-s3:8333", "bucket": "sglang-hicache"}'
