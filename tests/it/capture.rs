//! `hicache-sim capture` on fake `/proc` + cgroupfs trees (the layout of
//! `tests/sglang_diff/diff.py`: `proc/self/{cgroup,mountinfo}`, `proc/meminfo`, and a
//! cgroupfs directory that the fake mountinfo names as the mount point), cgroup v1 and
//! v2. Each case checks the scenario it writes field by field, and that the headroom the
//! simulator reads at start-up, before any rank charges anything, is the figure SGLang's
//! `mem_cache/host_memory.py: _cgroup_memory_headroom` computes on the same tree
//! (worked by hand in the comments; `tests/sglang_diff/diff.py --capture` runs SGLang's
//! own function on generated trees).

use std::path::{Path, PathBuf};

use crate::support::{sim, succeeded};
use hicache_sim::scenario::schema::{CgroupVersionSpec, MemorySpec, PreexistingSpec};
use hicache_sim::scenario::{load_file, resolve::resolve};
use hicache_sim::startup::StartupPlan;
use hicache_sim::units::ByteSize;

const G: u64 = 1 << 30;
const M: u64 = 1 << 20;
/// cgroup v1's "no limit" on 4 KiB pages.
const V1U: u64 = (1 << 63) - 4096;

/// A fake machine in a temporary directory.
struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn root(&self) -> &Path {
        self.dir.path()
    }
    fn proc(&self) -> PathBuf {
        self.root().join("proc")
    }
    fn put(&self, rel: &str, text: &str) {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    fn mkdir(&self, rel: &str) {
        std::fs::create_dir_all(self.root().join(rel)).unwrap();
        self.put(&format!("{rel}/cgroup.procs"), "");
    }
    /// A file that exists but cannot be read (reading `/proc/self/mem` from offset 0
    /// fails with EIO, even as root).
    fn unreadable(&self, rel: &str) {
        let p = self.root().join(rel);
        let _ = std::fs::remove_file(&p);
        std::os::unix::fs::symlink("/proc/self/mem", p).unwrap();
    }
    fn meminfo(&self, total: u64, free: u64, avail: u64, active_file: u64, inactive_file: u64) {
        self.put(
            "proc/meminfo",
            &format!(
                "MemTotal:       {} kB\nMemFree:        {} kB\nMemAvailable:   {} kB\nBuffers:        0 kB\nActive(file):   {} kB\nInactive(file): {} kB\n",
                total / 1024,
                free / 1024,
                avail / 1024,
                active_file / 1024,
                inactive_file / 1024
            ),
        );
        self.put("proc/sys/kernel/hostname", "fake-node\n");
    }
    /// A v2 cgroup directory: `max`/`high`/`min` as written (`None` = no file), the
    /// charges as `memory.current` and hierarchical `memory.stat`.
    #[allow(clippy::too_many_arguments)]
    fn v2(
        &self,
        rel: &str,
        max: Option<&str>,
        high: Option<&str>,
        min: Option<u64>,
        current: u64,
        anon: u64,
        shmem: u64,
        active: u64,
        inactive: u64,
        dirty: u64,
    ) {
        self.mkdir(rel);
        if let Some(v) = max {
            self.put(&format!("{rel}/memory.max"), &format!("{v}\n"));
        }
        if let Some(v) = high {
            self.put(&format!("{rel}/memory.high"), &format!("{v}\n"));
        }
        if let Some(v) = min {
            self.put(&format!("{rel}/memory.min"), &format!("{v}\n"));
            self.put(&format!("{rel}/memory.low"), "0\n");
        }
        self.put(&format!("{rel}/memory.current"), &format!("{current}\n"));
        self.put(
            &format!("{rel}/memory.stat"),
            &format!(
                "anon {anon}\nfile {}\nkernel {}\nshmem {shmem}\nfile_mapped 0\nfile_dirty {dirty}\nfile_writeback 0\nactive_anon 0\ninactive_anon {anon}\nactive_file {active}\ninactive_file {inactive}\nunevictable 0\n",
                active + inactive + shmem,
                current.saturating_sub(anon + active + inactive + shmem)
            ),
        );
    }
    /// A v1 cgroup directory (`memory.limit_in_bytes`, `memory.usage_in_bytes`,
    /// `memory.stat` with own and `total_*` counters).
    #[allow(clippy::too_many_arguments)]
    fn v1(
        &self,
        rel: &str,
        limit: u64,
        usage: u64,
        rss: u64,
        active: u64,
        inactive: u64,
        dirty: u64,
    ) {
        self.mkdir(rel);
        self.put(
            &format!("{rel}/memory.limit_in_bytes"),
            &format!("{limit}\n"),
        );
        self.put(
            &format!("{rel}/memory.usage_in_bytes"),
            &format!("{usage}\n"),
        );
        self.put(
            &format!("{rel}/memory.stat"),
            &format!(
                "cache 0\nrss 0\nshmem 0\ndirty 0\nactive_file 0\ninactive_file 0\nhierarchical_memory_limit {limit}\ntotal_cache {}\ntotal_rss {rss}\ntotal_shmem 0\ntotal_dirty {dirty}\ntotal_writeback 0\ntotal_inactive_anon {rss}\ntotal_active_anon 0\ntotal_inactive_file {inactive}\ntotal_active_file {active}\n",
                active + inactive
            ),
        );
    }
    /// Runs `capture` into `out.yaml`; returns (exit code, stdout, stderr).
    fn capture(&self, extra: &[&str]) -> (i32, String, String) {
        let out = sim()
            .env("SOURCE_DATE_EPOCH", "1767225600")
            .arg("capture")
            .arg("--proc-root")
            .arg(self.proc())
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
    fn out(&self) -> String {
        self.root().join("out.yaml").display().to_string()
    }
    /// `capture --node hgx-h200 --model llama-3.1-70b --nvidia-smi none -o out.yaml`,
    /// which must succeed; returns the written text.
    fn capture_ok(&self) -> String {
        let out = self.out();
        let (code, _, err) = self.capture(&[
            "--node",
            "hgx-h200",
            "--model",
            "llama-3.1-70b",
            "--nvidia-smi",
            "none",
            "-o",
            &out,
        ]);
        assert_eq!(code, 0, "{err}");
        std::fs::read_to_string(&out).unwrap()
    }
}

/// The `memory:` block of a captured file.
fn memory_of(text: &str) -> MemorySpec {
    let v: serde_json::Value = hicache_sim::scenario::load::parse_yaml_value(text, "out").unwrap();
    serde_json::from_value(v["memory"].clone()).unwrap()
}

/// What the simulator reads at start-up, before any rank charges anything: the cgroup
/// headroom and `available_host_memory_bytes()` (explicit size) under `sglang`.
fn startup_headroom(path: &str, sglang: &str) -> (Option<u64>, i128) {
    let sets = [format!("sglang={sglang}"), "server.tp_size=8".to_string()];
    let loaded = load_file(path, &sets).unwrap();
    let s = resolve(&loaded).unwrap();
    let plan = StartupPlan::new(&s).unwrap();
    let n = &plan.nodes[0];
    let read = plan
        .rules
        .read_available(&n.memory.snapshot(n.job_cgroup), true);
    (read.headroom, read.available.unwrap())
}

/// `startup` on the captured file with nothing charged before the pools are sized (no
/// process memory, no weight load, a 1 GB pool): run 0's SGLang log lines.
fn startup_log(path: &str, sglang: &str) -> String {
    let out = sim()
        .args([
            "startup",
            path,
            "--sglang",
            sglang,
            "--set",
            "startup.process_memory=0",
            "--set",
            "startup.weight_load.through_page_cache=false",
            "--set",
            "server.enable_hierarchical_cache=true",
            "--set",
            "server.hicache_size=1",
            "--set",
            "server.tp_size=8",
        ])
        .output()
        .unwrap();
    succeeded(&out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn pre(anon: u64, shmem: u64, inactive: u64, active: u64, dirty: u64) -> PreexistingSpec {
    PreexistingSpec {
        anon: ByteSize(anon),
        shmem: ByteSize(shmem),
        inactive_file: ByteSize(inactive),
        active_file: ByteSize(active),
        dirty: ByteSize(dirty),
        writeback: ByteSize(0),
    }
}

/// Case A: a Slurm job on cgroup v2, mounted at a path with a space (mountinfo writes
/// `\040`). The process is in `/slurm/job_42/step_0/task_0`.
///
/// ```text
/// (mount root)        no limit files
/// slurm               no memory.max / memory.high files (a level without limits)
///   job_42            memory.max 400 GiB; current 76 GiB; active 6, inactive 60 GiB
///     step_0          current 19.5 GiB (own: 1 GiB anon)
///       task_0        current 18.5 GiB: active 6, inactive 10 (1 dirty), 2.5 GiB other
///     step_batch      memory.min 20 GiB; 5 GiB anon + 50 GiB inactive file
///     step_extern     1 GiB (0.25 own + 0.75 in step_extern/user)
/// system.slice        30 GiB of cache, above every limit
/// ```
/// job_42's own: 76 − 19.5 − 55 − 1 = 0.5 GiB.
///
/// SGLang's walk: task_0, step_0 (no limit), job_42 (400 GiB), slurm (no files), root.
/// - 0.5.21 counts page cache as used: 400 − 76 = 324 GiB = 347,892,350,976 B;
/// - 0.5.22+: step_batch's memory.min is a protected descendant of job_42, so no
///   page-cache credit either: 324 GiB;
/// - with step_batch's memory.min at 0, 0.5.22+ credits the 66 GiB of file LRU:
///   400 − (76 − 66) = 390 GiB = 418,759,311,360 B (0.5.21 still 324).
#[test]
fn v2_slurm_job_protected_sibling_escaped_mount() {
    let f = Fake::new();
    f.meminfo(1000 * G, 700 * G, 900 * G, 40 * G, 100 * G);
    let cg = "cg root";
    let mount = f
        .root()
        .join(cg)
        .display()
        .to_string()
        .replace(' ', "\\040");
    f.put("proc/self/cgroup", "0::/slurm/job_42/step_0/task_0\n");
    f.put(
        "proc/self/mountinfo",
        &format!(
            "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n30 23 0:26 / {mount} rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
        ),
    );
    f.mkdir(cg);
    f.put(&format!("{cg}/memory.stat"), "anon 1\n");
    f.v2(
        &format!("{cg}/system.slice"),
        Some("max"),
        Some("max"),
        Some(0),
        30 * G,
        0,
        0,
        10 * G,
        20 * G,
        0,
    );
    // slurm: no memory.max / memory.high (its memory.min is there).
    f.v2(
        &format!("{cg}/slurm"),
        None,
        None,
        Some(0),
        80 * G,
        0,
        0,
        6 * G,
        62 * G,
        0,
    );
    let job = format!("{cg}/slurm/job_42");
    f.v2(
        &job,
        Some(&(400 * G).to_string()),
        Some("max"),
        Some(0),
        76 * G,
        8 * G + 512 * M,
        0,
        6 * G,
        60 * G,
        G,
    );
    f.v2(
        &format!("{job}/step_0"),
        Some("max"),
        Some("max"),
        Some(0),
        19 * G + 512 * M,
        3 * G,
        0,
        6 * G,
        10 * G,
        G,
    );
    f.v2(
        &format!("{job}/step_0/task_0"),
        Some("max"),
        Some("max"),
        Some(0),
        18 * G + 512 * M,
        2 * G,
        0,
        6 * G,
        10 * G,
        G,
    );
    f.v2(
        &format!("{job}/step_batch"),
        Some("max"),
        Some("max"),
        Some(20 * G),
        55 * G,
        5 * G,
        0,
        0,
        50 * G,
        0,
    );
    f.v2(
        &format!("{job}/step_extern"),
        Some("max"),
        Some("max"),
        Some(0),
        G,
        G,
        0,
        0,
        0,
        0,
    );
    f.v2(
        &format!("{job}/step_extern/user"),
        Some("max"),
        Some("max"),
        Some(0),
        768 * M,
        768 * M,
        0,
        0,
        0,
        0,
    );

    let text = f.capture_ok();
    assert!(text.contains("on fake-node"), "{text}");
    assert!(text.contains("2026-01-01 00:00:00 UTC"), "{text}");
    let m = memory_of(&text);
    assert_eq!(m.host_total, Some(ByteSize(1000 * G)));
    assert_eq!(m.psutil_available, Some(ByteSize(900 * G)));
    // 140 GiB of file LRU on the host, 66 GiB of it in job_42's subtree.
    assert_eq!(m.host_other_page_cache, ByteSize(74 * G));
    let c = m.cgroup.unwrap();
    assert_eq!(c.version, CgroupVersionSpec::V2);
    assert_eq!(c.max, Some(ByteSize(400 * G)));
    assert_eq!(c.high, None);
    assert_eq!(c.preexisting, pre(512 * M, 0, 0, 0, 0));
    // slurm bounds nothing: no parents; job_42's other children are step_0's siblings.
    assert!(c.parents.is_empty() && c.siblings.is_empty());
    assert_eq!(c.below.len(), 2);
    let (step, task) = (&c.below[0], &c.below[1]);
    assert_eq!(
        (step.name.as_str(), task.name.as_str()),
        ("step_0", "task_0")
    );
    assert_eq!(step.preexisting, pre(G, 0, 0, 0, 0));
    // 18.5 − (6 + 10) = 2.5 GiB not page cache; the dirty GiB comes off the inactive list.
    assert_eq!(task.preexisting, pre(2 * G + 512 * M, 0, 9 * G, 6 * G, G));
    assert_eq!(step.siblings.len(), 2);
    let batch = &step.siblings[0];
    assert_eq!(batch.name, "step_batch");
    assert_eq!(
        (batch.anon, batch.page_cache, batch.min),
        (ByteSize(5 * G), ByteSize(50 * G), ByteSize(20 * G))
    );
    assert!(!batch.protected_inside && !batch.min_unreadable);
    let ext = &step.siblings[1];
    assert_eq!(
        (ext.name.as_str(), ext.anon, ext.min),
        ("step_extern", ByteSize(G), ByteSize(0))
    );

    let out = f.out();
    for rel in ["0.5.21", "0.5.22", "0.5.23"] {
        assert_eq!(
            startup_headroom(&out, rel),
            (Some(324 * G), 324 * G as i128),
            "{rel}"
        );
    }
    assert!(
        startup_log(&out, "0.5.23")
            .contains("HiCache memory headroom: host 900.0 GiB, cgroup 324.0 GiB")
    );

    // No protection under job_42: 0.5.22+ credits the page cache.
    f.put(&format!("{job}/step_batch/memory.min"), "0\n");
    let m = memory_of(&f.capture_ok());
    assert_eq!(m.cgroup.unwrap().below[0].siblings[0].min, ByteSize(0));
    assert_eq!(
        startup_headroom(&out, "0.5.21"),
        (Some(324 * G), 324 * G as i128)
    );
    assert_eq!(
        startup_headroom(&out, "0.5.22"),
        (Some(390 * G), 390 * G as i128)
    );
    assert!(
        startup_log(&out, "0.5.23")
            .contains("HiCache memory headroom: host 900.0 GiB, cgroup 390.0 GiB")
    );
}

/// Case B: a container with its own cgroup namespace on v2. mountinfo's root is the
/// host-side `/kubepods.slice/pod7/ctr`, /proc/self/cgroup says `0::/app/worker`
/// (relative to the namespace root, so SGLang takes it relative to the mount), and the
/// mount point has a tab in its name (`\011`).
///
/// ```text
/// ns<TAB>cg (= ctr)  memory.max 64 GiB, memory.high 60 GiB; current 30 GiB:
///                     anon 12, shmem 1, active 3, inactive 12 GiB, 2 GiB kernel
///   app               no memory.* files (memory controller not enabled)
///     worker          no memory.* files — the process
///   sidecar           current 6 GiB: 2 anon + 4 inactive
/// ```
/// SGLang's walk: worker, app (no limit files: skipped), ctr.
/// - 0.5.21 (page cache counted as used): min(64 − 30, 60 − 30) = 30 GiB;
/// - 0.5.22+: `app/memory.min` does not exist, so `_has_protected_descendants(ctr)` is
///   True: no credit, 30 GiB too;
/// - with `memory.min` = 0 written in app and worker, 0.5.22+ credits active + inactive:
///   usage 30 − (3 + 12) = 15, min(64 − 15, 60 − 15) = 45 GiB = 48,318,382,080 B.
///
/// ctr's own: 30 − 6 = 24 GiB: shmem 1, active 3, inactive 12 − 4 = 8, and 24 − 12 = 12
/// GiB the kernel cannot reclaim (anon, kernel memory).
#[test]
fn v2_namespace_root_and_levels_without_memory_files() {
    let f = Fake::new();
    f.meminfo(256 * G, 100 * G, 200 * G, 10 * G, 30 * G);
    let cg = "ns\tcg";
    let mount = f
        .root()
        .join(cg)
        .display()
        .to_string()
        .replace('\t', "\\011");
    f.put("proc/self/cgroup", "0::/app/worker\n");
    f.put(
        "proc/self/mountinfo",
        &format!("1200 1100 0:26 /kubepods.slice/pod7/ctr {mount} rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw\n"),
    );
    f.v2(
        cg,
        Some(&(64 * G).to_string()),
        Some(&(60 * G).to_string()),
        Some(0),
        30 * G,
        12 * G,
        G,
        3 * G,
        12 * G,
        0,
    );
    f.mkdir(&format!("{cg}/app/worker"));
    f.v2(
        &format!("{cg}/sidecar"),
        Some("max"),
        Some("max"),
        Some(0),
        6 * G,
        2 * G,
        0,
        0,
        4 * G,
        0,
    );

    let text = f.capture_ok();
    let m = memory_of(&text);
    assert_eq!(m.psutil_available, Some(ByteSize(200 * G)));
    // 40 GiB of file LRU on the host, 15 GiB in the container.
    assert_eq!(m.host_other_page_cache, ByteSize(25 * G));
    let c = m.cgroup.unwrap();
    assert_eq!(
        (c.max, c.high),
        (Some(ByteSize(64 * G)), Some(ByteSize(60 * G)))
    );
    assert_eq!(c.preexisting, pre(12 * G, G, 8 * G, 3 * G, 0));
    assert!(c.parents.is_empty() && !c.min_unreadable);
    assert_eq!(c.below.len(), 2);
    assert_eq!(
        (c.below[0].name.as_str(), c.below[1].name.as_str()),
        ("app", "worker")
    );
    assert!(c.below[0].min_unreadable && c.below[1].min_unreadable);
    assert_eq!(c.below[0].preexisting, PreexistingSpec::default());
    let side = &c.below[0].siblings;
    assert_eq!(side.len(), 1);
    assert_eq!(
        (side[0].name.as_str(), side[0].anon, side[0].page_cache),
        ("sidecar", ByteSize(2 * G), ByteSize(4 * G))
    );
    assert!(
        text.contains("no memory.min (the memory controller is not enabled there)"),
        "{text}"
    );

    let out = f.out();
    assert_eq!(
        startup_headroom(&out, "0.5.21"),
        (Some(30 * G), 30 * G as i128)
    );
    assert_eq!(
        startup_headroom(&out, "0.5.23"),
        (Some(30 * G), 30 * G as i128)
    );
    assert!(
        startup_log(&out, "0.5.23")
            .contains("HiCache memory headroom: host 200.0 GiB, cgroup 30.0 GiB")
    );

    // memory.min readable (0) on both levels: nothing protected below ctr.
    f.put(&format!("{cg}/app/memory.min"), "0\n");
    f.put(&format!("{cg}/app/worker/memory.min"), "0\n");
    let c = memory_of(&f.capture_ok()).cgroup.unwrap();
    assert!(!c.below[0].min_unreadable && !c.below[1].min_unreadable);
    assert_eq!(
        startup_headroom(&out, "0.5.21"),
        (Some(30 * G), 30 * G as i128)
    );
    assert_eq!(
        startup_headroom(&out, "0.5.23"),
        (Some(45 * G), 45 * G as i128)
    );
}

/// Case C: cgroup v1 (hybrid: the memory controller on v1, an empty cgroup2 unified
/// mount), a Slurm job whose step has a limit too. The process is in
/// `/slurm/uid_0/job_7/step_0/task_0`.
///
/// ```text
/// (root), slurm, uid_0   limit 2^63 − 4096 (none)
///   job_7                limit 200 GiB; usage 71; total_active 10, total_inactive 45
///     step_0             limit 196 GiB; usage 41; total_active 10, total_inactive 20
///       task_0           no limit; usage 40: rss 10, active 10, inactive 20 (2 dirty)
///     step_batch         no limit; usage 30: rss 5, inactive 25
/// ```
/// SGLang reads every level (v1's "no limit" is a number): task_0 and the unlimited ones
/// leave ~8 EiB.
/// - 0.5.21 (page cache counted as used): step_0 196 − 41 = 155, job_7 200 − 71 = 129
///   GiB = 138,512,695,296 B;
/// - 0.5.22+ (`total_active_file + total_inactive_file` credited; v1 has no memory.min):
///   step_0 196 − (41 − 30) = 185, job_7 200 − (71 − 55) = 184 GiB = 197,568,495,616 B.
///
/// The job is step_0 (the lowest level with a limit), job_7 its parent, task_0 below.
#[test]
fn v1_hybrid_slurm_job_and_step_limits() {
    let f = Fake::new();
    f.meminfo(512 * G, 200 * G, 400 * G, 30 * G, 70 * G);
    f.put(
        "proc/self/cgroup",
        "12:cpu,cpuacct:/slurm/uid_0/job_7/step_0\n5:memory:/slurm/uid_0/job_7/step_0/task_0\n1:name=systemd:/x\n0::/\n",
    );
    let r = f.root().display().to_string();
    f.put(
        "proc/self/mountinfo",
        &format!(
            "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n35 25 0:31 / {r}/cpu rw,nosuid shared:12 - cgroup cgroup rw,cpu,cpuacct\n36 25 0:32 / {r}/v1mem rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,memory\n41 25 0:38 / {r}/unified rw,nosuid - cgroup2 cgroup2 rw\n"
        ),
    );
    f.mkdir("unified");
    f.v1("v1mem", V1U, 100 * G, 20 * G, 20 * G, 60 * G, 2 * G);
    f.v1("v1mem/slurm", V1U, 75 * G, 15 * G, 10 * G, 45 * G, 2 * G);
    f.v1(
        "v1mem/slurm/uid_0",
        V1U,
        71 * G,
        15 * G,
        10 * G,
        45 * G,
        2 * G,
    );
    let job = "v1mem/slurm/uid_0/job_7";
    f.v1(job, 200 * G, 71 * G, 16 * G, 10 * G, 45 * G, 2 * G);
    f.v1(
        &format!("{job}/step_0"),
        196 * G,
        41 * G,
        11 * G,
        10 * G,
        20 * G,
        2 * G,
    );
    f.v1(
        &format!("{job}/step_0/task_0"),
        V1U,
        40 * G,
        10 * G,
        10 * G,
        20 * G,
        2 * G,
    );
    f.v1(
        &format!("{job}/step_batch"),
        V1U,
        30 * G,
        5 * G,
        0,
        25 * G,
        0,
    );

    let text = f.capture_ok();
    assert!(
        text.contains("cgroup2 at "),
        "the empty unified mount is noted: {text}"
    );
    let m = memory_of(&text);
    let c = m.cgroup.unwrap();
    assert_eq!(c.version, CgroupVersionSpec::V1);
    assert_eq!(c.max, Some(ByteSize(196 * G)));
    assert_eq!(c.preexisting, pre(G, 0, 0, 0, 0));
    assert_eq!(c.parents.len(), 1);
    assert_eq!(
        (c.parents[0].name.as_str(), c.parents[0].max),
        ("job_7", Some(ByteSize(200 * G)))
    );
    assert_eq!(c.parents[0].preexisting, PreexistingSpec::default());
    assert_eq!(c.siblings.len(), 1);
    assert_eq!(
        (c.siblings[0].anon, c.siblings[0].page_cache),
        (ByteSize(5 * G), ByteSize(25 * G))
    );
    assert_eq!(c.below.len(), 1);
    assert_eq!(c.below[0].max, None);
    assert_eq!(
        c.below[0].preexisting,
        pre(10 * G, 0, 18 * G, 10 * G, 2 * G)
    );
    // 100 GiB of file LRU on the host, 55 GiB in job_7's subtree.
    assert_eq!(m.host_other_page_cache, ByteSize(45 * G));

    let out = f.out();
    assert_eq!(
        startup_headroom(&out, "0.5.21"),
        (Some(129 * G), 129 * G as i128)
    );
    for rel in ["0.5.22", "0.5.23"] {
        assert_eq!(
            startup_headroom(&out, rel),
            (Some(184 * G), 184 * G as i128),
            "{rel}"
        );
    }
    assert!(
        startup_log(&out, "0.5.21")
            .contains("HiCache memory headroom: host 400.0 GiB, cgroup 129.0 GiB")
    );
    assert!(startup_log(&out, "0.5.22").contains("cgroup 184.0 GiB"));
}

/// A tree with files SGLang fails on, and a partial one.
#[test]
fn bad_and_unreadable_files_name_the_file() {
    let setup = || {
        let f = Fake::new();
        f.meminfo(64 * G, 10 * G, 40 * G, G, G);
        f.put("proc/self/cgroup", "0::/job\n");
        let cg = f.root().join("cg").display().to_string();
        f.put(
            "proc/self/mountinfo",
            &format!("30 23 0:26 / {cg} rw - cgroup2 cgroup2 rw\n"),
        );
        f.mkdir("cg");
        f.v2(
            "cg/job",
            Some(&(32 * G).to_string()),
            Some("max"),
            Some(0),
            4 * G,
            4 * G,
            0,
            0,
            0,
            0,
        );
        f
    };
    let args = ["--node", "hgx-h200", "--nvidia-smi", "none"];

    // A limit SGLang reads, and the usage it then needs, unreadable: exit 2 naming it.
    let f = setup();
    f.unreadable("cg/job/memory.current");
    let (code, _, err) = f.capture(&args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cg/job/memory.current") && err.contains("raises"),
        "{err}"
    );

    // A limit that is not a number.
    let f = setup();
    f.put("cg/job/memory.max", "lots\n");
    let (code, _, err) = f.capture(&args);
    assert_eq!(code, 2);
    assert!(
        err.contains("cg/job/memory.max") && err.contains("`lots`"),
        "{err}"
    );

    // A mountinfo line without ` - `: file and line.
    let f = setup();
    f.put(
        "proc/self/mountinfo",
        "22 1 8:1 / / rw shared:1 - ext4 /dev/sda1 rw\nbroken line\n",
    );
    let (code, _, err) = f.capture(&args);
    assert_eq!(code, 2);
    assert!(err.contains("proc/self/mountinfo:2"), "{err}");

    // A membership whose directory does not exist: SGLang's RuntimeError.
    let f = setup();
    f.put("proc/self/cgroup", "0::/gone\n");
    let (code, _, err) = f.capture(&args);
    assert_eq!(code, 2);
    assert!(
        err.contains("Cannot locate the process memory cgroup"),
        "{err}"
    );

    // memory.stat without the file LRU keys at a level with a limit (a KeyError).
    let f = setup();
    f.put("cg/job/memory.stat", "anon 5\n");
    let (code, _, err) = f.capture(&args);
    assert_eq!(code, 2);
    assert!(
        err.contains("cg/job/memory.stat") && err.contains("active_file"),
        "{err}"
    );

    // No meminfo: a partial capture that says what is missing; the rest is written.
    let f = setup();
    std::fs::remove_file(f.proc().join("meminfo")).unwrap();
    let (code, out, err) = f.capture(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("meminfo: no such file: host_total, psutil_available"),
        "{out}"
    );
    let m = memory_of(&out);
    assert_eq!((m.host_total, m.psutil_available), (None, None));
    assert_eq!(m.cgroup.unwrap().max, Some(ByteSize(32 * G)));

    // No GPU information and no --node.
    let f = setup();
    let (code, _, err) = f.capture(&["--nvidia-smi", "none"]);
    assert_eq!(code, 2);
    assert!(err.contains("--node") && err.contains("hgx-h200"), "{err}");

    // The output may not be one of the files read.
    let f = setup();
    let meminfo = f.proc().join("meminfo").display().to_string();
    let (code, _, err) = f.capture(&["--node", "hgx-h200", "--nvidia-smi", "none", "-o", &meminfo]);
    assert_eq!(code, 2);
    assert!(err.contains("destroy the input"), "{err}");
    assert!(
        std::fs::read_to_string(&meminfo)
            .unwrap()
            .starts_with("MemTotal")
    );

    // Nor any file of a cgroup directory read (`memory.max`, `memory.stat`,
    // `memory.current`), a new file beside them, or a link pointing there: exit 2, the
    // file untouched.
    let f = setup();
    let link = f.root().join("link.yaml");
    std::os::unix::fs::symlink(f.root().join("cg/job/memory.max"), &link).unwrap();
    for rel in [
        "cg/job/memory.max",
        "cg/job/memory.stat",
        "cg/job/memory.current",
        "cg/job/scenario.yaml",
    ] {
        let target = f.root().join(rel).display().to_string();
        let before = std::fs::read(&target).ok();
        let (code, _, err) =
            f.capture(&["--node", "hgx-h200", "--nvidia-smi", "none", "-o", &target]);
        assert_eq!(code, 2, "{rel}: {err}");
        assert!(err.contains("inside the cgroupfs mount"), "{rel}: {err}");
        assert_eq!(std::fs::read(&target).ok(), before, "{rel} changed");
    }
    let (code, _, err) = f.capture(&[
        "--node",
        "hgx-h200",
        "--nvidia-smi",
        "none",
        "-o",
        &link.display().to_string(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        std::fs::read_to_string(f.root().join("cg/job/memory.max")).unwrap(),
        format!("{}\n", 32 * G)
    );
}

/// No procfs cgroup files (not Linux): SGLang's headroom is None, and the scenario has
/// no `cgroup:`; `nvidia-smi` (a fake here) names the node.
#[test]
fn nvidia_smi_names_the_node_and_no_cgroup_files() {
    let f = Fake::new();
    f.meminfo(2048 * G, 1500 * G, 1900 * G, 50 * G, 50 * G);
    let smi = f.root().join("nvidia-smi");
    let lines: String = (0..8)
        .map(|i| format!("{i}, NVIDIA H200, 143771, 570.86.15\n"))
        .collect();
    std::fs::write(&smi, format!("#!/bin/sh\ncat <<'EOF'\n{lines}EOF\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, out, err) = f.capture(&[
        "--nvidia-smi",
        &smi.display().to_string(),
        "--model",
        "llama-3.1-70b",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("preset: \"hgx-h200\""), "{out}");
    assert!(
        out.contains("gpus_per_node: 8") && out.contains("gpu_memory: 143771MiB"),
        "{out}"
    );
    assert!(
        out.contains("SGLang's headroom is None (no procfs)"),
        "{out}"
    );
    let m = memory_of(&out);
    assert!(m.cgroup.is_none());
    assert_eq!(m.host_other_page_cache, ByteSize(100 * G));
    let path = f.out();
    std::fs::write(&path, &out).unwrap();
    assert_eq!(startup_headroom(&path, "0.5.23"), (None, 1900 * G as i128));
    // The scenario starts as written: TP from the 8 GPUs listed (Llama-3.1-70B at TP1
    // would leave no GPU memory for the KV cache, a failure that is about --tp).
    assert!(
        out.contains("server:")
            && out.contains("  tp_size: 8")
            && out.contains("the 8 GPU(s) nvidia-smi lists"),
        "{out}"
    );
    let o = sim()
        .args(["startup", &path, "--format", "json"])
        .output()
        .unwrap();
    succeeded(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "ok", "{}", v["verdict"]);
    assert_eq!(v["world_size"], 8);
}

/// A v2 tree: the process in `cg/p/job` (32 GiB limit) under `cg/p` (64 GiB), beside a
/// sibling `cg/p/sib`.
fn parent_job_sibling() -> Fake {
    let f = Fake::new();
    f.meminfo(64 * G, 10 * G, 40 * G, G, G);
    f.put("proc/self/cgroup", "0::/p/job\n");
    let cg = f.root().join("cg").display().to_string();
    f.put(
        "proc/self/mountinfo",
        &format!("30 23 0:26 / {cg} rw - cgroup2 cgroup2 rw\n"),
    );
    f.mkdir("cg");
    let lim = |g: u64| (g * G).to_string();
    f.v2(
        "cg/p",
        Some(&lim(64)),
        None,
        Some(0),
        6 * G,
        5 * G,
        0,
        0,
        0,
        0,
    );
    f.v2(
        "cg/p/job",
        Some(&lim(32)),
        None,
        Some(0),
        4 * G,
        4 * G,
        0,
        0,
        0,
        0,
    );
    f.v2("cg/p/sib", None, None, Some(0), G, G, 0, 0, 0, 0);
    f
}

/// A FIFO as `meminfo`, as a limit on the process's walk, as a sibling's `memory.min`:
/// each refused before it is opened (it waited forever for a writer). The first two
/// are files SGLang reads (exit 2 naming the file); the sibling's `memory.min` is one
/// its scan counts as protected when unreadable.
#[test]
fn fifos_in_the_tree_are_refused() {
    let args = ["--node", "hgx-h200", "--nvidia-smi", "none"];
    let f = parent_job_sibling();
    std::fs::remove_file(f.proc().join("meminfo")).unwrap();
    crate::support::fifo(&f.proc().join("meminfo"));
    let (code, _, err) = f.capture(&args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("proc/meminfo: cannot read it: a FIFO"),
        "{err}"
    );

    let f = parent_job_sibling();
    std::fs::remove_file(f.root().join("cg/p/memory.max")).unwrap();
    crate::support::fifo(&f.root().join("cg/p/memory.max"));
    let (code, _, err) = f.capture(&args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cg/p/memory.max") && err.contains("a FIFO (named pipe), not a regular file"),
        "{err}"
    );

    let f = parent_job_sibling();
    std::fs::remove_file(f.root().join("cg/p/sib/memory.min")).unwrap();
    crate::support::fifo(&f.root().join("cg/p/sib/memory.min"));
    let (code, out, err) = f.capture(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("cg/p/sib/memory.min: a FIFO (named pipe), not a regular file"),
        "{out}"
    );
    let cg = memory_of(&out).cgroup.unwrap();
    assert_eq!(cg.siblings[0].name, "sib");
    assert!(cg.siblings[0].min_unreadable, "{out}");
}

/// Two symlinks to their own folder in a sibling cgroup (2^32 paths 32 levels deep):
/// each directory is read once, and the capture says what it did not read.
#[test]
fn a_symlink_loop_among_siblings_is_read_once() {
    let f = parent_job_sibling();
    let sib = f.root().join("cg/p/sib");
    std::os::unix::fs::symlink(&sib, sib.join("a")).unwrap();
    std::os::unix::fs::symlink(".", sib.join("b")).unwrap();
    let out = f.capture_ok();
    assert!(
        out.contains("cg/p/sib/a: the directory")
            && out.contains("cg/p/sib/b: the directory")
            && out.contains("a symlink loop"),
        "{out}"
    );
    let m = memory_of(&out);
    let cg = m.cgroup.unwrap();
    assert_eq!(cg.siblings.len(), 1, "{out}");
    assert_eq!(cg.siblings[0].name, "sib");
}

/// Runs `capture` with an `nvidia-smi` that is the shell script `body`, and
/// `HICACHE_SIM_NVIDIA_SMI_TIMEOUT=timeout`; returns (exit code, stdout, stderr).
fn capture_with_smi(f: &Fake, body: &str, timeout: &str, extra: &[&str]) -> (i32, String, String) {
    use std::os::unix::fs::PermissionsExt;
    let smi = f.root().join("nvidia-smi");
    std::fs::write(&smi, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = sim()
        .env("SOURCE_DATE_EPOCH", "1767225600")
        .env("HICACHE_SIM_NVIDIA_SMI_TIMEOUT", timeout)
        .arg("capture")
        .arg("--proc-root")
        .arg(f.proc())
        .arg("--nvidia-smi")
        .arg(&smi)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An `nvidia-smi` that never exits is killed at the deadline
/// (`HICACHE_SIM_NVIDIA_SMI_TIMEOUT`, 10 s unless set), one that writes without end past
/// 1 MiB: no GPU is read, which without `--node` is an error naming the command, and
/// with it a note. A deadline that is not a number of seconds is refused.
#[test]
fn nvidia_smi_is_bounded_in_time_and_output() {
    let f = parent_job_sibling();
    let (code, _, err) = capture_with_smi(&f, "exec sleep 1000", "0.5", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("nvidia-smi --query-gpu=")
            && err.contains("did not finish within 0.5 s (HICACHE_SIM_NVIDIA_SMI_TIMEOUT sets another deadline): killed")
            && err.contains("--node PRESET"),
        "{err}"
    );
    let (code, out, err) = capture_with_smi(&f, "exec sleep 1000", "0.5", &["--node", "hgx-h200"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("did not finish within 0.5 s")
            && out.contains("gpus_per_node and gpu_memory are the preset's"),
        "{out}"
    );

    let (code, _, err) = capture_with_smi(
        &f,
        "exec yes '0, NVIDIA H200, 143771, 570.86.15'",
        "600",
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("wrote more than 1 MiB to stdout") && err.contains("killed"),
        "{err}"
    );
    let (code, _, err) = capture_with_smi(&f, "exec yes >&2", "600", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("wrote more than 1 MiB to stderr"), "{err}");

    // Within both, the GPUs are read as before.
    let (code, out, err) = capture_with_smi(
        &f,
        "echo '0, NVIDIA H200, 143771, 570.86.15'",
        "600",
        &["--model", "llama-3.1-70b"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("preset: \"hgx-h200\"") && out.contains("gpus_per_node: 1"),
        "{out}"
    );

    for bad in ["0", "-1", "ten", "inf"] {
        let (code, _, err) = capture_with_smi(&f, "exit 0", bad, &[]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(
            err.contains("HICACHE_SIM_NVIDIA_SMI_TIMEOUT") && err.contains(&format!("got `{bad}`")),
            "{bad}: {err}"
        );
    }
}

/// Whether a process whose command line contains `marker` is alive.
fn alive(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(marker)
            })
            .unwrap_or(false)
    })
}

/// An `nvidia-smi` that starts processes of its own dies with them: one that never
/// exits has its whole process group killed at the deadline (its child `sleep` too,
/// not only the shell), and one that exits while a child it left behind holds its
/// output open is reported at the deadline with that child killed.
#[test]
fn nvidia_smi_children_die_with_it() {
    let f = parent_job_sibling();
    let (code, _, err) = capture_with_smi(&f, "sleep 1001.25\nsleep 1000", "0.5", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did not finish within 0.5 s"), "{err}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        !alive("sleep 1001.25"),
        "the shell's child outlived the kill"
    );

    let (code, _, err) = capture_with_smi(
        &f,
        "sleep 1002.75 &\necho '0, NVIDIA H200, 143771, 570.86.15'",
        "0.5",
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did not finish within 0.5 s"), "{err}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        !alive("sleep 1002.75"),
        "the child holding the pipe outlived the capture"
    );
}
