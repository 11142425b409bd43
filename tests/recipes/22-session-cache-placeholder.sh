# source: sgl-project/sglang benchmark/hicache/bench_session_cache.sh (commit da281bef684c), SERVER_CMD with its defaults
# note: DEFAULT_MODEL_PATH is "" (the script expects --model-path); --enable-session-cache is the script's default.
# recipe: no model (an error row that says so); --enable-session-cache is not an SGLang flag in 0.5.14-0.5.23.
# hicache-sim: node=hgx-h100
MODEL_PATH=""
python3 -m sglang.launch_server \
    --host 0.0.0.0 \
    --port 30000 \
    --model-path $MODEL_PATH \
    --enable-hierarchical-cache \
    --mem-fraction-static 0.8 \
    --enable-session-cache
