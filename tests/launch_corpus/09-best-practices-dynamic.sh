# source: sgl-project/sglang docs/advanced_features/hicache_best_practices.md (commit 0712681af222), "Dynamic Backend Loading"
# release: 0.5.23
python3 -m sglang.launch_server \
  --model-path your-model \
  --enable-hierarchical-cache \
  --hicache-storage-backend dynamic \
  --hicache-storage-backend-extra-config '{"backend_name":"custom_backend_name", "module_path": "your_module_path", "class_name": "YourHiCacheClassName"}'
