# source: sgl-project/sglang python/sglang/srt/mem_cache/storage/hf3fs/docs/deploy_sglang_3fs_multinode.md (commit 4ca48eca7832), "node1"
# hicache-sim: node=hgx-h100
export SGLANG_HICACHE_HF3FS_CONFIG_PATH=/sgl-workspace/sglang/benchmark/hf3fs/hf3fs_config.json
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/lib/python3.10/dist-packages
rm -rf instance1.out && \
nohup python3 -m sglang.launch_server \
    --model-path /code/models/Qwen3-32B/ \
    --host 0.0.0.0 --port 10000 \
    --page-size 64 \
    --enable-hierarchical-cache \
    --hicache-ratio 2 --hicache-size 0 \
    --hicache-write-policy write_through \
    --hicache-storage-backend hf3fs --tp 2 > instance1.out &
