# source: sgl-project/sglang benchmark/hicache/run_tiered_cache_bench_dp8ep8.sh (commit 183a1488b729), launch_server_case2 (L1 + L2)
# note: the script's shell variables expanded with its defaults (MODEL_PATH=/nfs/DeepSeek-V3, TP 8, DP 8, page 64, HICACHE_SIZE=128, write_through, MOE_A2A_BACKEND=mori).
# recipe: mori is ROCm's all-to-all library: an 8 x MI300X node.
# hicache-sim: node=mi300x
python -m sglang.launch_server \
    --enable-cache-report --enable-metrics \
    --model-path /nfs/DeepSeek-V3 \
    --host 0.0.0.0 \
    --tp-size 8 --page-size 64 \
    --dp-size 8 \
    --enable-dp-attention \
    --moe-a2a-backend mori \
    --enable-hierarchical-cache \
    --hicache-size 128 \
    --hicache-write-policy write_through \
    --hicache-mem-layout page_first
