#!/usr/bin/env python3
"""Minimal mock SGLang worker for driving the real router (sglang-router 0.3.2) on a
CPU-only box, loopback only (tools/router/router_golden.py starts four).

Usage: mock_worker.py PORT LOGFILE [--delay SECONDS] [--load-tokens N] [--hold] [--dp-size N]

--dp-size N: /get_server_info reports N data-parallel ranks (the router's --dp-aware
lists N workers for this one); GET /__ranks maps each received rid to the request's
`data_parallel_rank` (null when the router sent none).

--hold: /generate (and the OpenAI routes) block until POST /__release {"rid": RID};
GET /__received lists the rids received so far (in arrival order).

Serves enough of SGLang's HTTP API for the router to register the worker
(health, model/server info, /v1/models, /get_load) and answers
/generate, /v1/completions, /v1/chat/completions with a tiny canned reply.
Every request (method, path, body) is appended to LOGFILE as one JSON line:
  {"t": <unix time>, "port": P, "method": "POST", "path": "/generate", "body": {...}}
so a test can read which worker received which request.
Stdlib only; ThreadingHTTPServer so concurrent requests overlap.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
LOG = sys.argv[2]
DELAY = 0.0
LOAD_TOKENS = 0
HOLD = False
DP_SIZE = 1
args = sys.argv[3:]
if "--hold" in args:
    HOLD = True
for i, a in enumerate(args):
    if a == "--delay":
        DELAY = float(args[i + 1])
    if a == "--load-tokens":
        LOAD_TOKENS = int(args[i + 1])
    if a == "--dp-size":
        DP_SIZE = int(args[i + 1])

MODEL = "mock-model"
_lock = threading.Lock()
# --hold mode: each POST inference request blocks until POST /__release {"rid": ...}
_events = {}
_received = []
_ranks = {}

# NOTE: no "model_path"/"tokenizer_path" keys on purpose: when present the
# router tries to load a tokenizer for that name from the HuggingFace hub
# (an outbound request). Without them it logs "No tokenizer_path or
# model_path found" and skips tokenizer registration.
MODEL_INFO = {
    "is_generation": True,
    "preferred_sampling_params": None,
    "weight_version": "default",
    "has_image_understanding": False,
    "has_audio_understanding": False,
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
}
SERVER_INFO = {
    "served_model_name": MODEL,
    "dp_size": DP_SIZE,
    "tp_size": 1,
    "page_size": 1,
    "load_balance_method": "round_robin",
    "disaggregation_mode": "null",
    "version": "0.5.23",
}


def log(method, path, body):
    rec = {"t": time.time(), "port": PORT, "method": method, "path": path, "body": body}
    with _lock, open(LOG, "a") as f:
        f.write(json.dumps(rec) + "\n")


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):  # silence stderr access log
        pass

    def _send(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        p = self.path.split("?")[0]
        log("GET", p, None)
        if p in ("/health", "/health_generate", "/healthz", "/readiness", "/liveness"):
            return self._send(200, {})
        if p in ("/get_model_info", "/model_info"):
            return self._send(200, MODEL_INFO)
        if p in ("/get_server_info", "/server_info"):
            return self._send(200, SERVER_INFO)
        if p == "/v1/models":
            return self._send(200, {"object": "list", "data": [
                {"id": MODEL, "object": "model", "created": 0, "owned_by": "sglang",
                 "root": MODEL, "max_model_len": 32768}]})
        if p in ("/get_load", "/v1/loads", "/get_loads"):
            # SGLang-style: list of per-dp-rank dicts; router sums num_tokens.
            return self._send(200, [{"dp_rank": 0, "num_reqs": 0, "num_waiting_reqs": 0,
                                     "num_tokens": LOAD_TOKENS}])
        if p == "/__received":
            with _lock:
                return self._send(200, list(_received))
        if p == "/__ranks":
            with _lock:
                return self._send(200, dict(_ranks))
        if p == "/metrics":
            data = b"# mock\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        return self._send(404, {"error": "not found", "path": p})

    def do_POST(self):
        p = self.path.split("?")[0]
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw) if raw else None
        except Exception:
            body = raw.decode("utf-8", "replace")
        if p == "/__release":
            rid = (body or {}).get("rid")
            with _lock:
                ev = _events.setdefault(rid, threading.Event())
            ev.set()
            return self._send(200, {"released": rid})
        log("POST", p, body)
        rid = body.get("rid") if isinstance(body, dict) else None
        if isinstance(body, dict):
            with _lock:
                _ranks[rid] = body.get("data_parallel_rank")
        if HOLD and p in ("/generate", "/v1/completions", "/v1/chat/completions"):
            with _lock:
                ev = _events.setdefault(rid, threading.Event())
                _received.append(rid)
            ev.wait(600)
        else:
            with _lock:
                _received.append(rid)
        if DELAY:
            time.sleep(DELAY)
        meta = {"id": "x", "finish_reason": {"type": "length", "length": 1},
                "prompt_tokens": 1, "completion_tokens": 1, "cached_tokens": 0}
        if p == "/generate":
            return self._send(200, {"text": f"w{PORT}", "meta_info": meta})
        if p == "/v1/completions":
            return self._send(200, {"id": "x", "object": "text_completion", "created": 0,
                                    "model": MODEL, "choices": [{"index": 0, "text": f"w{PORT}",
                                    "finish_reason": "length"}],
                                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        if p == "/v1/chat/completions":
            return self._send(200, {"id": "x", "object": "chat.completion", "created": 0,
                                    "model": MODEL, "choices": [{"index": 0, "message": {
                                        "role": "assistant", "content": f"w{PORT}"},
                                        "finish_reason": "length"}],
                                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        if p in ("/flush_cache",):
            return self._send(200, {})
        return self._send(404, {"error": "not found", "path": p})


if __name__ == "__main__":
    srv = ThreadingHTTPServer(("127.0.0.1", PORT), H)
    srv.daemon_threads = True
    srv.serve_forever()
