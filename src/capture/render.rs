//! The captured scenario as YAML: a header saying when and where it was captured and what
//! could not be read, `node:` and `memory:` with a comment naming the file behind each
//! figure, and the model / server / start-up sections as a commented template.

use super::Captured;
use crate::scenario::schema::{CgroupLevelSpec, CgroupVersionSpec, PreexistingSpec, SiblingSpec};

/// Comment text on one line (a cgroup name may hold any byte but `/`).
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// A YAML double-quoted scalar (JSON's escapes are YAML's).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}

struct W {
    out: String,
}

impl W {
    fn line(&mut self, indent: usize, text: &str, comment: Option<&str>) {
        let mut l = format!("{:indent$}{text}", "");
        if let Some(c) = comment {
            let pad = 40usize.saturating_sub(l.chars().count()).max(1);
            l += &format!("{:pad$}# {}", "", clean(c));
        }
        self.out += l.trim_end();
        self.out.push('\n');
    }
    fn comment(&mut self, indent: usize, text: &str) {
        self.out += &format!("{:indent$}# {}", "", clean(text));
        self.out = self.out.trim_end().to_string();
        self.out.push('\n');
    }
}

fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
}

/// `{anon: 1, shmem: 2}` with the non-zero kinds only.
fn flow(p: &PreexistingSpec) -> String {
    let parts: Vec<String> = [
        ("anon", p.anon),
        ("shmem", p.shmem),
        ("inactive_file", p.inactive_file),
        ("active_file", p.active_file),
        ("dirty", p.dirty),
        ("writeback", p.writeback),
    ]
    .iter()
    .filter(|(_, v)| v.0 > 0)
    .map(|(k, v)| format!("{k}: {}", v.0))
    .collect();
    format!("{{{}}}", parts.join(", "))
}

fn sum(p: &PreexistingSpec) -> u64 {
    p.anon.0 + p.shmem.0 + p.inactive_file.0 + p.active_file.0 + p.dirty.0 + p.writeback.0
}

/// The limit and protection fields of a level (job, parent, below).
fn level_fields(w: &mut W, c: &Captured, ind: usize, field: &str, l: &CgroupLevelSpec) {
    let com = |k: &str| c.comments.get(&format!("{field}.{k}")).map(String::as_str);
    if let Some(m) = l.max {
        w.line(ind, &format!("max: {}", m.0), com("max"));
    }
    if let Some(h) = l.high {
        w.line(ind, &format!("high: {}", h.0), com("high"));
    }
    if l.min.0 > 0 {
        w.line(
            ind,
            &format!("min: {}", l.min.0),
            Some(&format!("memory.min, {}", gib(l.min.0))),
        );
    }
    if l.low.0 > 0 {
        w.line(
            ind,
            &format!("low: {}", l.low.0),
            Some(&format!("memory.low, {}", gib(l.low.0))),
        );
    }
    if l.min_unreadable {
        w.line(
            ind,
            "min_unreadable: true",
            Some("memory.min missing or unreadable: 0.5.22+ counts it as protected"),
        );
    }
    if l.protected_inside {
        w.line(
            ind,
            "protected_inside: true",
            Some("a protected cgroup below, not listed: 0.5.22+ drops the page-cache credit"),
        );
    }
    if sum(&l.preexisting) > 0 {
        w.line(
            ind,
            &format!("preexisting: {}", flow(&l.preexisting)),
            com("preexisting"),
        );
    }
}

fn siblings(w: &mut W, c: &Captured, ind: usize, field: &str, sibs: &[SiblingSpec]) {
    if sibs.is_empty() {
        return;
    }
    w.line(ind, "siblings:", None);
    for (k, s) in sibs.iter().enumerate() {
        let com = c
            .comments
            .get(&format!("{field}.siblings[{k}]"))
            .map(String::as_str);
        w.line(ind + 2, &format!("- name: {}", quoted(&s.name)), com);
        let i = ind + 4;
        for (key, v) in [
            ("anon", s.anon),
            ("page_cache", s.page_cache),
            ("shmem", s.shmem),
        ] {
            if v.0 > 0 {
                w.line(i, &format!("{key}: {}", v.0), Some(&gib(v.0)));
            }
        }
        if s.min.0 > 0 {
            w.line(
                i,
                &format!("min: {}", s.min.0),
                Some(&format!("memory.min, {}", gib(s.min.0))),
            );
        }
        if s.low.0 > 0 {
            w.line(
                i,
                &format!("low: {}", s.low.0),
                Some(&format!("memory.low, {}", gib(s.low.0))),
            );
        }
        if let Some(m) = s.max {
            w.line(i, &format!("max: {}", m.0), Some(&gib(m.0)));
        }
        if let Some(h) = s.high {
            w.line(i, &format!("high: {}", h.0), Some(&gib(h.0)));
        }
        if s.min_unreadable {
            w.line(i, "min_unreadable: true", None);
        }
        if s.protected_inside {
            w.line(i, "protected_inside: true", None);
        }
        if sum(&s.preexisting) > 0 {
            w.line(i, &format!("preexisting: {}", flow(&s.preexisting)), None);
        }
    }
}

fn level(w: &mut W, c: &Captured, ind: usize, field: &str, l: &CgroupLevelSpec) {
    let path = c.comments.get(&format!("{field}.path")).map(String::as_str);
    w.line(ind, &format!("- name: {}", quoted(&l.name)), path);
    let i = ind + 2;
    level_fields(w, c, i, field, l);
    siblings(w, c, i, field, &l.siblings);
}

/// `YYYY-MM-DD HH:MM:SS UTC` of seconds since the epoch (civil-from-days).
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The scenario text.
pub fn render(c: &Captured) -> String {
    let mut w = W { out: String::new() };
    let host = c.host.clone().unwrap_or_else(|| "an unnamed host".into());
    w.comment(
        0,
        &format!(
            "Captured by `hicache-sim capture` on {host}{} at {}, from {}.",
            c.kernel
                .as_ref()
                .map(|k| format!(" (Linux {k})"))
                .unwrap_or_default(),
            utc(c.now),
            c.proc_root.display()
        ),
    );
    w.comment(0, "Read:");
    for r in &c.read {
        w.comment(0, &format!("  - {r}"));
    }
    if c.notes.is_empty() {
        w.comment(0, "Everything SGLang reads was read.");
    } else {
        w.comment(0, "Not captured, or not as SGLang reads it:");
        for n in &c.notes {
            w.comment(0, &format!("  - {n}"));
        }
    }
    w.comment(
        0,
        "Run `capture` where the server will start (the same container, Slurm job or pod): the",
    );
    w.comment(
        0,
        "ranks charge and read in the process's cgroup (the last `below` level, else the job).",
    );
    if c.model.is_none() {
        w.comment(
            0,
            "Fill in the model (`model:`, or `server.launch` and its --model-path) and `server:`, then:",
        );
    }
    w.comment(0, "  hicache-sim startup THIS_FILE");
    let name = format!(
        "capture-{}",
        c.host
            .as_deref()
            .unwrap_or("node")
            .chars()
            .map(
                |ch| if ch.is_ascii_alphanumeric() || ch == '-' || ch == '.' {
                    ch
                } else {
                    '-'
                }
            )
            .collect::<String>()
    );
    w.line(0, &format!("name: {}", quoted(&name)), None);
    w.line(0, "node:", None);
    w.line(
        2,
        &format!("preset: {}", quoted(&c.preset)),
        Some(&c.preset_why),
    );
    for (k, o) in &c.node_overrides {
        w.line(2, &format!("{k}: {}", o.value), Some(&o.comment));
    }
    if let Some(m) = &c.model {
        w.line(0, &format!("model: {}", quoted(m)), None);
    } else {
        w.line(0, "# model: deepseek-v3                 # a preset (hicache-sim presets), or {preset: NAME, FIELD: VALUE}", None);
    }
    let m = &c.memory;
    let com = |k: &str| c.comments.get(k).map(String::as_str);
    w.line(0, "memory:", None);
    if let Some(t) = m.host_total {
        w.line(2, &format!("host_total: {}", t.0), com("memory.host_total"));
    }
    if let Some(a) = m.psutil_available {
        w.line(
            2,
            &format!("psutil_available: {}", a.0),
            com("memory.psutil_available"),
        );
    }
    if m.host_other_page_cache.0 > 0 || c.comments.contains_key("memory.host_other_page_cache") {
        w.line(
            2,
            &format!("host_other_page_cache: {}", m.host_other_page_cache.0),
            com("memory.host_other_page_cache"),
        );
    }
    if let Some(cg) = &m.cgroup {
        w.line(2, "cgroup:", com("memory.cgroup.path"));
        let v = match cg.version {
            CgroupVersionSpec::V1 => "v1",
            CgroupVersionSpec::V2 => "v2",
        };
        w.line(4, &format!("version: {v}"), None);
        let job = CgroupLevelSpec {
            name: String::new(),
            max: cg.max,
            high: cg.high,
            min: cg.min,
            low: cg.low,
            min_unreadable: cg.min_unreadable,
            protected_inside: cg.protected_inside,
            preexisting: cg.preexisting.clone(),
            siblings: Vec::new(),
        };
        level_fields(&mut w, c, 4, "memory.cgroup", &job);
        siblings(&mut w, c, 4, "memory.cgroup", &cg.siblings);
        if !cg.parents.is_empty() {
            w.line(4, "parents:", Some("the job's parent first"));
            for (k, l) in cg.parents.iter().enumerate() {
                level(&mut w, c, 6, &format!("memory.cgroup.parents[{k}]"), l);
            }
        }
        if !cg.below.is_empty() {
            w.line(
                4,
                "below:",
                Some("the job's child first, the process's cgroup last"),
            );
            for (k, l) in cg.below.iter().enumerate() {
                level(&mut w, c, 6, &format!("memory.cgroup.below[{k}]"), l);
            }
        }
    }
    // A whole-node TP layout, so the scenario starts as it stands (TP1 of a large model
    // leaves no GPU memory for the KV cache: a refusal that is about `--tp`).
    w.line(
        0,
        "server:",
        Some("SGLang's flags (dashes as underscores), or a pasted `launch:` command"),
    );
    w.line(2, &format!("tp_size: {}", c.tp_size), Some(&c.tp_why));
    w.out += TEMPLATE;
    w.out
}

/// The sections `capture` cannot measure, to fill in.
const TEMPLATE: &str = "\
#   launch: python -m sglang.launch_server --model-path MODEL --tp 8 --page-size 64 --enable-hierarchical-cache --hicache-size 100
#   page_size: 64
#   enable_hierarchical_cache: true
#   hicache_size: 100                   # GB per rank
# startup:
#   process_memory: 15GB                # anon per rank process before the pools (Python, CUDA context)
#   weight_load:
#     through_page_cache: true          # safetensors read through the page cache, charged to the job
";

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_767_225_599), "2025-12-31 23:59:59 UTC");
    }
}
