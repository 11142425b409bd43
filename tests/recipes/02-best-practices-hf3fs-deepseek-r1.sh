# source: sgl-project/sglang docs/advanced_features/hicache_best_practices.md (commit 0712681af222), "Deployment with HF3FS"
# note: the doc's last line ends in `\` followed by the end of the block (kept).
# recipe: DeepSeek-R1 at TP8 needs 8 x 141 GB.
# hicache-sim: node=hgx-h200
python3 -m sglang.launch_server \
  --model-path /xxx/DeepSeek-R1/ \
  --log-level info \
  --tp 8 \
  --host 0.0.0.0 \
  --port 10000 \
  --enable-metrics \
  --enable-cache-report \
  --page-size 64 \
  --mem-fraction-static 0.85 \
  --enable-hierarchical-cache \
  --hicache-ratio 2 \
  --hicache-size 0 \
  --hicache-mem-layout page_first \
  --hicache-write-policy write_through \
  --hicache-storage-backend hf3fs \
  --hicache-storage-prefetch-policy wait_complete \

