# source: sgl-project/sglang benchmark/hicache/disk.sh (commit c4090440219e), second server (HiCache without the disk tier)
# note: the first server of the script uses --hicache-use-disk, which no modelled release accepts; this is the script's baseline.
# recipe: GPU 7 of an 8-GPU box (CUDA_VISIBLE_DEVICES=7): one H200.
# hicache-sim: node=hgx-h200
rm -rf nohup.out && \
env CUDA_VISIBLE_DEVICES=7 \
nohup python3 -m sglang.launch_server \
    --model-path /data/models/Qwen3-32B \
    --host 0.0.0.0 --port 33302 \
    \
    --page-size 64 \
    \
    --enable-hierarchical-cache \
    --hicache-ratio 2 --hicache-size 50 \
    --hicache-write-policy write_through \
&
