#!/usr/bin/env python3
"""Single-rule mutations of the simulator that the differential test must catch.

Each mutation edits one line of the Rust source, rebuilds, runs diff.py (1,200 states
and 300 capture trees, one release) and restores the file with `git checkout -- FILE` (run it on a clean work
tree). Every line printed must say `exit 1`. Usage: mutations.py [M1 M2 ...]
"""
import subprocess, sys, os
os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TARGET = os.environ.get("CARGO_TARGET_DIR", "target")
env = dict(os.environ, CARGO_TARGET_DIR=TARGET)
M = [
 ("M1 0.5.22 memory.min rule ignored (credit always)", "src/sizing/host_memory.rs",
  "page_cache > 0 && level.protected_descendants", "page_cache > 0 && level.protected_descendants && false", "0.5.22"),
 ("M2 a level's own memory.min counts as protection", "src/release/diff.rs",
  "child != top && (top.is_empty()", "(child == top || top.is_empty()", "0.5.23"),
 ("M3 missing/unreadable descendant memory.min not protected", "src/release/diff.rs",
  "!matches!(d.min, FileValue::Int(0))", "matches!(d.min, FileValue::Int(n) if n != 0)", "0.5.23"),
 ("M4 budget // ranks truncates instead of flooring", "src/sizing/budget.rs",
  "BudgetSplit::PerRank => py_floordiv(rest, ranks_per_host.max(1) as i128),", "BudgetSplit::PerRank => rest / ranks_per_host.max(1) as i128,", "0.5.21"),
 ("M5 reserve 10 GB instead of 10 GiB", "src/sizing/budget.rs",
  "pub const HICACHE_HOST_MEMORY_RESERVE_BYTES: i128 = 10 * (1 << 30);", "pub const HICACHE_HOST_MEMORY_RESERVE_BYTES: i128 = 10_000_000_000;", "0.5.23"),
 ("M6 0.5.22 without the explicit-size psutil fallback", "src/release/rules.rs",
  "allow_cgroup_fallback: true,", "allow_cgroup_fallback: false,", "0.5.22"),
 ("M7 v1 unlimited sentinel skipped (usage not read)", "src/sizing/host_memory.rs",
  "CgroupVersion::V1 => [level.max, None],", "CgroupVersion::V1 => [level.max.filter(|&m| m < crate::hardware::V1_UNLIMITED), None],", "0.5.21"),
 ("M8 memory.high ignored", "src/sizing/host_memory.rs",
  "CgroupVersion::V2 => [level.max, level.high],", "CgroupVersion::V2 => [level.max, None],", "0.5.23"),
 ("M9 no padding page (page_num = ceil(size / page))", "src/sizing/host_pool.rs",
  "let page_num = size / page + 1;", "let page_num = size.div_ceil(page);", "0.5.23"),
 ("M10 0.5.22 credit dropped on cgroup v1 too", "src/sizing/host_memory.rs",
  "version == CgroupVersion::V2 && page_cache > 0 && level.protected_descendants", "(version == CgroupVersion::V1 || page_cache > 0 && level.protected_descendants)", "0.5.22"),
 ("M11 headroom not bounded by psutil", "src/sizing/host_memory.rs",
  "Ok(Some(h)) => Ok(host.min(h as i128)),", "Ok(Some(h)) => Ok(h as i128),", "0.5.23"),
 ("M12 0.5.21 credits page cache (0.5.22 rules)", "src/release/rules.rs",
  "sizing: SglangVersion::Pr40135.rules(),", "sizing: Rules { available: AvailableReading::CgroupMin(HeadroomVariant::ProtectedDescendants), ..SglangVersion::Pr40135.rules() },", "0.5.21"),
 ("M13 auto-size slack 10 % instead of 5 %", "src/sizing/auto_size.rs",
  "pub const ALLOCATION_SLACK_FRACTION: f64 = 0.05;", "pub const ALLOCATION_SLACK_FRACTION: f64 = 0.10;", "0.5.23"),
 ("M14 auto-size budget rounds instead of truncating", "src/sizing/auto_size.rs",
  "py_int(per_rank_share as f64 * fraction)", "(per_rank_share as f64 * fraction).round() as i128", "0.5.22"),
 ("M15 capture: a missing memory.min is not counted as protected", "src/capture/mapping.rs",
  "Protection::Missing => (0, true),", "Protection::Missing => (0, false),", "0.5.23"),
 ("M16 capture: a level's charges written whole (children not subtracted)", "src/capture/mapping.rs",
  "let (r, c) = sub[i].minus(&children);", "let (r, c) = sub[i].minus(&Raw::default());", "0.5.21"),
 ("M17 capture: protections inside a sibling ignored", "src/capture/mapping.rs",
  "protected_inside: inside.is_some(),", "protected_inside: false,", "0.5.23"),
]
only = sys.argv[1:]
for name, f, old, new, rel in M:
    if only and name.split()[0] not in only: continue
    s = open(f).read()
    if old not in s:
        print(name, ": PATTERN NOT FOUND", flush=True); continue
    open(f, "w").write(s.replace(old, new, 1))
    try:
        b = subprocess.run(["cargo", "build", "-q"], env=env, capture_output=True, text=True)
        if b.returncode != 0:
            print(name, ": BUILD FAILED", b.stderr[-500:], flush=True); continue
        r = subprocess.run(["python3", "tests/sglang_diff/diff.py", "--bin", os.path.join(TARGET, "debug", "hicache-sim"),
                            "--keep", os.environ.get("SGLANG_DIFF_KEEP", "/tmp/sgdiff"), "--states", "1200", "--releases", rel], capture_output=True, text=True)
        first = [l for l in r.stdout.splitlines() if l.startswith("sglang_diff") or "DIFFERS" in l][:2]
        print(name, "| release", rel, "| exit", r.returncode, "|", " / ".join(first), flush=True)
    finally:
        subprocess.run(["git", "checkout", "--", f])
subprocess.run(["cargo", "build", "-q"], env=env)
print("done", flush=True)
