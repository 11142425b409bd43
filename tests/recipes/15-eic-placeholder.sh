# source: sgl-project/sglang python/sglang/srt/mem_cache/storage/eic/README.md (commit 061de54ce903), "Deploy Model With EIC"
# note: as published: the --model-path line lacks its `\`, so bash runs the HiCache flags as a separate command.
# recipe: the model is a placeholder (`[model_path]`).
# hicache-sim: node=hgx-h20
python -m sglang.launch_server \
    --model-path [model_path]
    --enable-hierarchical-cache \
    --hicache-storage-backend eic \
    --hicache-write-policy 'write_through' \
    --hicache-mem-layout 'page_first' \
    
