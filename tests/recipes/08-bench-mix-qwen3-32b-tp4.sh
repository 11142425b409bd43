# source: sgl-project/sglang benchmark/hicache/bench_mix.sh (commit 420f0de318a3), server part
# hicache-sim: node=hgx-h100
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/lib/python3.12/dist-packages:/usr/local/lib/python3.12/dist-packages/torch/lib
rm -rf nohup.out && \
nohup python3 -m sglang.launch_server \
    --attention-backend triton \
    --model-path /code/models/Qwen3-32B/ \
    --log-level info \
    --tp 4 --mem-frac 0.25 \
    --host 0.0.0.0 --port 33301 \
    --enable-metrics --enable-cache-report \
    --page-size 64 \
    --enable-hierarchical-cache \
    --hicache-ratio 2.5 --hicache-size 0 \
    --hicache-io-backend kernel \
    --hicache-mem-layout layer_first \
    --hicache-write-policy write_through \
    &
