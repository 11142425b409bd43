# source: sgl-project/sglang docs/advanced_features/hicache_best_practices.md (commit 0712681af222), "Dynamic Backend Loading"
# recipe: the model is a placeholder (`your-model`): an error row that says so.
# hicache-sim: node=hgx-h100
python3 -m sglang.launch_server \
  --model-path your-model \
  --enable-hierarchical-cache \
  --hicache-storage-backend dynamic \
  --hicache-storage-backend-extra-config '{"backend_name":"custom_backend_name", "module_path": "your_module_path", "class_name": "YourHiCacheClassName"}'
