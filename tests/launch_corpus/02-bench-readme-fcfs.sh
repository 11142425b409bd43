# source: sgl-project/sglang benchmark/hicache/README.md (commit 1dc322ca15c4), "radix cache on and first-come-first-serve policy"
# release: 0.5.23
python -m sglang.launch_server --model-path Qwen/Qwen2.5-14B-Instruct --port 30000 --schedule-policy fcfs
