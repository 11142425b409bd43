# source: https://github.com/sgl-project/sglang/issues/14282 (description, 2025-12-02; written for sglang 0.5.3)
# note: 0.5.3 is older than any release modelled: the verdict is 0.5.14's, the oldest modelled.
# recipe: the issue names no GPU: 4 of an H20 box.
# hicache-sim: node=hgx-h20 sglang=0.5.14
python3 -m sglang.launch_server --model-path  /data/models/AI-ModelScope/Llama-3.1-8B-Instruct --trust-remote-code --port 30000 --base-gpu-id 0 --watchdog-timeout 60000 --dist-timeout 3600 --enable-metrics --host 127.0.0.1 --disable-prefill-overlap --served-model-name Llama-3.1-8B-Instruct --tp 4 --enable-hierarchical-cache --hicache-size 40
