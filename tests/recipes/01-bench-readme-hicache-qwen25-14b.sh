# source: sgl-project/sglang benchmark/hicache/README.md (commit 1dc322ca15c4), "hierarchical radix cache enabled"
# recipe: one H100: the README runs one server without --tp.
# hicache-sim: node=hgx-h100
python -m sglang.launch_server --model-path Qwen/Qwen2.5-14B-Instruct --port 30000 --enable-hierarchical-cache
