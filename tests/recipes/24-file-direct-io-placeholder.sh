# source: sgl-project/sglang docs/advanced_features/hicache_file_direct_io.md (commit 4642650d24f5), "Launch Example"
# note: as published: `<MODEL_PATH>` is a placeholder (bash reads `<MODEL_PATH>` as a redirection).
# recipe: the model is a placeholder: an error row that says so.
# hicache-sim: node=hgx-h100
export SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR=/mnt/nvme0n1/nfsrdma/testhicache
python -m sglang.launch_server \
  --model-path <MODEL_PATH> \
  --host 0.0.0.0 \
  --port 30000 \
  --enable-hierarchical-cache \
  --hicache-storage-backend file \
  --hicache-ratio 1.2 \
  --page-size 64 \
  --hicache-storage-prefetch-policy wait_complete \
  --hicache-storage-backend-extra-config '{"hicache_storage_pass_prefix_keys": true, "direct_io": true, "direct_io_alignment": 4096}'
