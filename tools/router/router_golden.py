#!/usr/bin/env python3
"""Writes tests/golden/router/<variant>.jsonl: the engine the REAL router (PyPI
`sglang-router==0.3.2`, its compiled Rust policies) sends each request of
scenarios/router-4-engines.yaml's trace to (its first --requests requests), under
round_robin and cache_aware, replaying exactly the simulator's event sequence.

How:
1. `hicache-sim replay SCENARIO --set runtime.max_requests=N --set
   runtime.router.policy=P --router-events EVENTS` writes the sequence the simulator
   routes: `send` (with the request's `input_ids`: one id per page) and `done` (the
   completion window, runtime.router.in_flight) events, in order.
2. Four mock workers (tools/router/mock_worker.py --hold: a request is held until
   released) and the router (`python -m sglang_router.launch_router --policy P
   --worker-urls ...`, launcher defaults for every threshold; its own free ports,
   Prometheus included) are started on 127.0.0.1.
3. Four probe requests (a private-use character each: they match no trace text) are
   sent and held, then released: under either policy probe k goes to the router's
   k-th worker, which recovers the router's worker order (a DashMap keyed by random
   UUIDs: a new permutation per process).
4. The events are replayed strictly in order: a `send` posts `/generate` with
   `input_ids` and waits until a worker holds it (so the router has counted it in
   flight); a `done` releases it and waits for the client's reply (the router drops
   its load guard before it replies). The router's loads at each decision are those
   the event list implies: no timing races.
5. Each request's worker, as a position in the router's worker order, is the golden's
   `engine`. The first line holds what the file was made from (`meta`).

`cargo test --release --test it router` checks the simulator against the goldens
request by request (tests/it/router_golden.rs).

Usage: python3 tools/router/router_golden.py --python VENV/bin/python
       [--bin target/release/hicache-sim] [--requests 400]
       [--variants cache_aware,round_robin,cache_aware_tight] [--check]

Goldens (VARIANTS): cache_aware and round_robin at the launcher's defaults, and
cache_aware_tight (--cache-threshold 0.5 --balance-abs-threshold 2
--balance-rel-threshold 1.2), which reaches the imbalance branch.

--check writes nothing: it runs the router again and exits 1 naming the first request
whose engine differs from the committed golden (tools/router/run.sh, from .ci/run).
"""

import argparse
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCENARIO = "scenarios/router-4-engines.yaml"
OUT = os.path.join(ROOT, "tests", "golden", "router")
ROUTER = "sglang-router 0.3.2"
ENGINES = 4
# golden name -> (policy, the simulator's runtime.router keys, the router's flags, the
# engines and the DP ranks each reports). The launcher's defaults (0.3 / 64 / 1.5) never
# reach the imbalance branch with 16 requests in flight; `cache_aware_tight` does (and
# moves the cache threshold). `cache_aware_dp_aware`: two engines of two DP ranks each
# behind `--dp-aware` (the router lists each engine's ranks as its workers, `url@rank`,
# and sends the rank as `data_parallel_rank`): four router workers.
VARIANTS = {
    "cache_aware": ("cache_aware", {}, [], ENGINES, 1),
    "round_robin": ("round_robin", {}, [], ENGINES, 1),
    "cache_aware_tight": ("cache_aware",
                          {"cache_threshold": "0.5", "balance_abs_threshold": "2",
                           "balance_rel_threshold": "1.2"},
                          ["--cache-threshold", "0.5", "--balance-abs-threshold", "2",
                           "--balance-rel-threshold", "1.2"], ENGINES, 1),
    "cache_aware_dp_aware": ("cache_aware", {"dp_aware": "true", "engines": "2"},
                             ["--dp-aware"], 2, 2),
}


def http(method, url, body=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


def free_ports(n):
    """n distinct free loopback ports (bound together, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def sim_events(binary, policy, keys, requests, dp):
    fd, path = tempfile.mkstemp(prefix="router-events-", suffix=".jsonl")
    os.close(fd)
    sets = [x for k, v in keys.items() for x in ("--set", f"runtime.router.{k}={v}")]
    sets += ["--set", f"runtime.replay.dp_ranks={dp}"]
    subprocess.check_call([
        binary, "replay", SCENARIO,
        "--set", f"runtime.max_requests={requests}",
        "--set", f"runtime.router.policy={policy}", *sets,
        "--router-events", path], cwd=ROOT)
    with open(path) as f:
        events = [json.loads(l) for l in f if l.strip()]
    os.unlink(path)
    return events


def in_flight(binary):
    out = subprocess.check_output([binary, "replay", SCENARIO, "--set",
                                   "runtime.max_requests=1", "--format", "json"], cwd=ROOT)
    return json.loads(out)["metrics"]["router"]["in_flight"]


class Client:
    """One thread per request: POST /generate through the router, keep the status."""

    def __init__(self, router):
        self.router, self.threads, self.status = router, {}, {}

    def send(self, rid, body):
        def run():
            try:
                st, _ = http("POST", self.router + "/generate", body, timeout=600)
                self.status[rid] = st
            except Exception as e:  # noqa: BLE001 - reported by wait()
                self.status[rid] = repr(e)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.threads[rid] = t

    def wait(self, rid, timeout=120):
        self.threads[rid].join(timeout)
        return self.status.get(rid)


def run_router(python, policy, flags, events, engines, dp):
    """Replays `events` through the real router; (rid -> router worker, worker order).
    A router worker is an engine, or with --dp-aware one of its `dp` ranks."""
    tmp = tempfile.mkdtemp(prefix="router-golden-")
    ports = free_ports(engines + 2)
    router_port, prom_port, worker_ports = ports[0], ports[1], ports[2:]
    urls = [f"http://127.0.0.1:{p}" for p in worker_ports]
    procs = []
    try:
        for k, p in enumerate(worker_ports):
            procs.append(subprocess.Popen(
                [sys.executable, os.path.join(HERE, "mock_worker.py"), str(p),
                 os.path.join(tmp, f"w{k}.jsonl"), "--hold", "--dp-size", str(dp)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for u in urls:
            for _ in range(100):
                try:
                    http("GET", u + "/health", timeout=1)
                    break
                except Exception:  # noqa: BLE001 - not up yet
                    time.sleep(0.1)
        cmd = [python, "-m", "sglang_router.launch_router", "--host", "127.0.0.1",
               "--port", str(router_port), "--prometheus-port", str(prom_port),
               "--prometheus-host", "127.0.0.1", "--worker-urls", *urls, "--policy", policy, *flags]
        log = open(os.path.join(tmp, "router.log"), "w")
        rp = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        procs.append(rp)
        router = f"http://127.0.0.1:{router_port}"
        t0, ready = time.time(), False
        while time.time() - t0 < 90 and rp.poll() is None and not ready:
            for path in ("/readiness", "/health"):
                try:
                    if http("GET", router + path, timeout=2)[0] == 200:
                        ready = True
                        break
                except Exception:  # noqa: BLE001 - not up yet
                    pass
            time.sleep(0.3)
        if not ready:
            sys.stderr.write(open(os.path.join(tmp, "router.log")).read()[-4000:])
            raise SystemExit(f"router not ready: {shlex.join(cmd)}")
        time.sleep(1.0)

        seen = {}

        def where(rid, timeout=60):
            """The worker holding `rid`: its engine, or (engine, rank) with --dp-aware."""
            t0 = time.time()
            while time.time() - t0 < timeout:
                for k, u in enumerate(urls):
                    if rid in json.loads(http("GET", u + "/__received", timeout=5)[1]):
                        seen[rid] = k
                        if dp == 1:
                            return k
                        rank = json.loads(http("GET", u + "/__ranks", timeout=5)[1])[rid]
                        return (k, rank)
                time.sleep(0.005)
            raise SystemExit(f"{rid} never reached a worker (router log: {tmp}/router.log)")

        def release(rid):
            http("POST", urls[seen[rid]] + "/__release", {"rid": rid})
            st = client.wait(rid)
            if st != 200:
                raise SystemExit(f"{rid}: the router answered {st}")

        client = Client(router)
        order = []
        workers = engines * dp
        for k in range(workers):
            rid = f"__probe{k}"
            client.send(rid, {"text": chr(0xE000 + k), "rid": rid,
                              "sampling_params": {"max_new_tokens": 1}})
            order.append(where(rid))
        for k in range(workers):
            release(f"__probe{k}")
        position = {w: s for s, w in enumerate(order)}
        engine = {}
        for e in events:
            if e["op"] == "send":
                client.send(e["rid"], {"input_ids": e["input_ids"], "rid": e["rid"],
                                       "sampling_params": {"max_new_tokens": 1}})
                engine[e["rid"]] = position[where(e["rid"])]
            else:
                release(e["rid"])
        return engine, order
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(5)
            except Exception:  # noqa: BLE001
                p.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True,
                    help="a Python with sglang-router==0.3.2 installed")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "hicache-sim"))
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    ver = subprocess.check_output([a.python, "-c",
                                   "import importlib.metadata as m; print(m.version('sglang-router'))"],
                                  text=True).strip()
    if ver != "0.3.2":
        raise SystemExit(f"{a.python} has sglang-router {ver}, not 0.3.2")
    window = in_flight(a.bin)
    failed = False
    for name in a.variants.split(","):
        policy, keys, flags, engines, dp = VARIANTS[name]
        events = sim_events(a.bin, policy, keys, a.requests, dp)
        t0 = time.time()
        engine, order = run_router(a.python, policy, flags, events, engines, dp)
        rids = [e["rid"] for e in events if e["op"] == "send"]
        sim = {e["rid"]: e["engine"] for e in events if e["op"] == "send"}
        agree = sum(engine[r] == sim[r] for r in rids)
        counts = [sum(engine[r] == k for r in rids) for k in range(engines * dp)]
        print(f"{name}: {len(rids)} requests through {ROUTER} in {time.time() - t0:.0f} s "
              f"(worker order {order}); per engine {counts}; the simulator agrees on "
              f"{agree}/{len(rids)}")
        meta = {"router": ROUTER, "policy": policy, "engines": engines, "in_flight": window,
                "requests": len(rids), "scenario": SCENARIO,
                "set": {f"runtime.router.{k}": v for k, v in keys.items()},
                **({"dp_ranks": dp, "router_workers": engines * dp} if dp > 1 else {}),
                "launch": shlex.join(["python", "-m", "sglang_router.launch_router",
                                      "--policy", policy, *flags]),
                "launcher_defaults": "--cache-threshold 0.3 --balance-abs-threshold 64"
                                     " --balance-rel-threshold 1.5"}
        lines = [json.dumps({"meta": meta})] + [
            json.dumps({"rid": r, "engine": engine[r]}) for r in rids]
        path = os.path.join(OUT, f"{name}.jsonl")
        if a.check:
            old = open(path).read().splitlines() if os.path.exists(path) else []
            for k, (x, y) in enumerate(zip(old, lines)):
                if x != y:
                    print(f"{path}:{k + 1}: committed {x}, the router now says {y}",
                          file=sys.stderr)
                    failed = True
                    break
            else:
                if len(old) != len(lines):
                    print(f"{path}: {len(old)} lines committed, {len(lines)} now",
                          file=sys.stderr)
                    failed = True
        else:
            os.makedirs(OUT, exist_ok=True)
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            print(f"wrote {path}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
