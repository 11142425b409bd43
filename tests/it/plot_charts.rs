//! Each plot writes a valid PNG (signature, IHDR size) and SVG (axis labels and series
//! names in its text), and reports the data it drew: series and point counts computed by
//! hand from the synthetic sweep below.

use std::path::Path;

use hicache_sim::report::plot::{self, PlotInfo, Table};

const FRACTION: &str = "server.hicache_host_memory_fraction";
const RATIO: &str = "server.hicache_ratio";

/// 6 fractions × 4 ratios × 2 seeds. Budget = fraction × 100 GB; request = ratio × 40 GB
/// (unset ratio: 95 % of the budget, always started). Started iff request ≤ budget, except
/// (1.0, 3.0) replica 1, which is OOM-killed.
fn sweep_csv() -> String {
    let mut s = String::from(
        "point,server.hicache_host_memory_fraction,server.hicache_ratio,seed,outcome,budget_bytes,requested_bytes,margin_bytes,hit_rate_device,hit_rate_host,hit_rate_storage,hit_rate_total,error\n",
    );
    let mut i = 0;
    for f10 in 5..=10u64 {
        for r in ["", "1.5", "2.0", "3.0"] {
            for rep in 0..2u64 {
                let budget = f10 * 10_000_000_000;
                let req = match r {
                    "" => budget * 95 / 100,
                    x => (x.parse::<f64>().unwrap() * 40e9) as u64,
                };
                let mut outcome = if req <= budget { "started" } else { "refused" };
                if f10 == 10 && r == "3.0" && rep == 1 {
                    outcome = "oom_killed";
                }
                let hits = if outcome == "started" {
                    let host = (req as f64 / 200e9).min(0.5);
                    format!("0.4,{host:.4},0,{:.4}", 0.4 + host)
                } else {
                    ",,,".to_string()
                };
                s += &format!(
                    "{i},0.{f10},{r},{rep},{outcome},{budget},{req},{},{hits},\n",
                    budget as i64 - req as i64
                )
                .replace("0.10,", "1.0,");
                i += 1;
            }
        }
    }
    s
}

/// A temporary folder, or `$HICACHE_PLOT_DIR` to keep the pictures for a look.
fn out_dir() -> (Option<tempfile::TempDir>, std::path::PathBuf) {
    match std::env::var_os("HICACHE_PLOT_DIR") {
        Some(d) => (None, d.into()),
        None => {
            let t = tempfile::tempdir().unwrap();
            let p = t.path().to_path_buf();
            (Some(t), p)
        }
    }
}

fn table() -> Table {
    Table::from_csv(sweep_csv().as_bytes(), "results.csv").unwrap()
}

fn png_size(p: &Path) -> (u32, u32) {
    let b = std::fs::read(p).unwrap();
    assert_eq!(
        &b[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        p.display()
    );
    assert_eq!(&b[12..16], b"IHDR");
    let w = u32::from_be_bytes(b[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(b[20..24].try_into().unwrap());
    assert!(b.len() > 10_000, "suspiciously small PNG");
    (w, h)
}

fn svg_text(p: &Path) -> String {
    let s = std::fs::read_to_string(p).unwrap();
    assert!(s.starts_with("<svg"), "{} is not an SVG", p.display());
    assert!(s.trim_end().ends_with("</svg>"));
    s
}

fn check_files(info: &PlotInfo, size: (u32, u32), texts: &[&str]) {
    assert_eq!(info.files.len(), 2);
    assert_eq!(png_size(&info.files[0]), size);
    let svg = svg_text(&info.files[1]);
    for t in texts {
        assert!(svg.contains(t), "SVG lacks `{t}`");
    }
}

fn series(info: &PlotInfo, panel: usize) -> Vec<(String, usize)> {
    info.panels[panel]
        .series
        .iter()
        .map(|s| (s.name.clone(), s.points))
        .collect()
}

#[test]
fn hit_rate_vs_fraction_one_line_per_ratio_with_refusals_marked() {
    let (_keep, d) = out_dir();
    let t = table();
    assert_eq!(t.rows.len(), 48);
    let info = plot::hit_rate_vs(&t, FRACTION, Some(RATIO), &d.join("hr")).unwrap();
    let titles: Vec<&str> = info.panels.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "device (L1): hit_rate_device",
            "host (L2): hit_rate_host",
            "storage (L3): hit_rate_storage",
            "total: hit_rate_total"
        ]
    );
    let want: Vec<(String, usize)> = [
        ("hicache_ratio=unset", 6),
        ("hicache_ratio=1.5", 5),
        ("refused: hicache_ratio=1.5", 1),
        ("hicache_ratio=2.0", 3),
        ("refused: hicache_ratio=2.0", 3),
        ("hicache_ratio=3.0", 0),
        ("refused: hicache_ratio=3.0", 6),
        ("oom_killed: hicache_ratio=3.0", 1),
    ]
    .iter()
    .map(|(n, c)| (n.to_string(), *c))
    .collect();
    for p in 0..4 {
        assert_eq!(series(&info, p), want);
        assert_eq!(info.panels[p].x_label, FRACTION);
    }
    check_files(
        &info,
        (1400, 1000),
        &[
            FRACTION,
            "hicache_ratio=1.5",
            "hicache_ratio=unset",
            // One marker colour for every group: the legend names the groups.
            "refused (× at 0): hicache_ratio=1.5, hicache_ratio=2.0, hicache_ratio=3.0",
            "OOM-killed (▲ at 0): hicache_ratio=3.0",
            "hicache_ratio=3.0 (never started)",
            "host (L2): hit_rate_host",
        ],
    );
}

#[test]
fn outcome_map_counts_cells_by_outcome() {
    let (_keep, d) = out_dir();
    let info = plot::outcome_map(&table(), FRACTION, RATIO, &d.join("om")).unwrap();
    assert_eq!(
        series(&info, 0),
        [
            ("meets_target", 14),
            ("below_target", 0),
            ("refused", 9),
            ("oom_killed", 1),
            ("failed", 0),
            ("no_result", 0)
        ]
        .map(|(n, c)| (n.to_string(), c))
    );
    // 6 columns × 4 rows: 110·6+300 = 960 wide plus a 190-px legend column, 60·4+220 = 460 high.
    // Margin labels: (0.5, unset) = 50 − 47.5 = +2.5 GB; (0.5, 3.0) = 50 − 120 = −70.0 GB.
    // Without a start_probability column a cell's P(start) is its seeds that started.
    check_files(
        &info,
        (1150, 460),
        &[
            FRACTION,
            RATIO,
            "P(start) ≥ 0.999 (14)",
            "refused (9)",
            "OOM-killed (1)",
            "P(start) 1.000",
            "+2.5 GB",
            "-70.0 GB",
            "unset",
        ],
    );
}

#[test]
fn budget_vs_request_has_the_refusal_line() {
    let (_keep, d) = out_dir();
    let info = plot::budget_vs_request(&table(), &d.join("bvr")).unwrap();
    assert_eq!(
        series(&info, 0),
        [
            ("refusal line (budget = request)", 2),
            ("meets", 28),
            ("refused", 19),
            ("oom_killed", 1)
        ]
        .map(|(n, c)| (n.to_string(), c))
    );
    check_files(
        &info,
        (900, 700),
        &[
            "request of the binding pool: the one with the least margin (GB)",
            "budget (GB)",
            "refusal line (budget = request)",
        ],
    );
}

#[test]
fn timeline_of_a_replay() {
    let mut csv = String::from("time_ns,host_occupancy,hit_rate_total,hit_rate_host\n");
    for i in 0..50u64 {
        csv += &format!(
            "{},{:.3},{:.3},{:.3}\n",
            i * 100_000_000,
            (i as f64 / 60.0).min(0.8),
            i as f64 / 100.0,
            i as f64 / 200.0
        );
    }
    let t = Table::from_csv(csv.as_bytes(), "timeline.csv").unwrap();
    let (_keep, d) = out_dir();
    let info = plot::timeline(&t, None, &d.join("tl")).unwrap();
    assert_eq!(info.panels.len(), 2);
    assert_eq!(series(&info, 0), [("host_occupancy".to_string(), 50)]);
    assert_eq!(
        series(&info, 1),
        [
            ("hit_rate_total".to_string(), 50),
            ("hit_rate_host".to_string(), 50)
        ]
    );
    assert_eq!(info.panels[0].x_label, "time (s)");
    check_files(
        &info,
        (1100, 940),
        &[
            "time (s)",
            "host_occupancy",
            "hit_rate_host",
            "Replay timeline",
        ],
    );
}

#[test]
fn plot_xy_with_categorical_x_and_groups() {
    let (_keep, d) = out_dir();
    let info = plot::plot_xy(
        &table(),
        RATIO,
        "hit_rate_host",
        Some(FRACTION),
        &d.join("xy"),
    )
    .unwrap();
    let s = series(&info, 0);
    // 6 fraction lines; 0.5 starts only with the unset ratio (1 point), refused at 3 ratios.
    assert_eq!(s[0], ("hicache_host_memory_fraction=0.5".to_string(), 1));
    assert_eq!(
        s[1],
        ("refused: hicache_host_memory_fraction=0.5".to_string(), 3)
    );
    assert_eq!(s.iter().filter(|(n, _)| !n.contains(':')).count(), 6);
    check_files(
        &info,
        (1000, 650),
        &[RATIO, "hit_rate_host", "unset", "1.5"],
    );
}

#[test]
fn default_plots_and_missing_columns() {
    let (_keep, d) = out_dir();
    let t = table();
    assert_eq!(plot::sweep_axes(&t), [FRACTION, RATIO]);
    let infos = plot::default_plots(&t, &[], &d).unwrap();
    let names: Vec<String> = infos
        .iter()
        .map(|i| {
            i.files[0]
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        names,
        [
            "hit_rate_vs_hicache_host_memory_fraction.png",
            "outcome_map.png",
            "budget_vs_request.png"
        ]
    );

    let bare = Table::from_csv(b"point,x,seed,y\n0,1,0,2\n", "bare.csv").unwrap();
    let e = plot::hit_rate_vs(&bare, "x", None, &d.join("nope")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("bare.csv: no column `hit_rate_total`"),
        "{e}"
    );
    let e = plot::plot_xy(&t, FRACTION, "hit_rate_hots", None, &d.join("nope")).unwrap_err();
    assert!(
        e.to_string().contains("did you mean `hit_rate_host`?"),
        "{e}"
    );
    let e = plot::outcome_map(&bare, "x", "y", &d.join("nope")).unwrap_err();
    assert!(e.to_string().contains("no column `outcome`"), "{e}");
    assert!(!d.join("nope.png").exists());
}

#[test]
fn plot_command_redraws_from_a_csv() {
    let (_keep, d) = out_dir();
    let csv = d.join("results_for_cmd.csv");
    std::fs::write(&csv, sweep_csv()).unwrap();
    let out = d.join("cmd");
    let infos = plot::plot_csv(&csv, None, None, None, &out).unwrap();
    assert_eq!(infos.len(), 3);
    assert!(out.join("outcome_map.svg").exists());
    // --x ratio --group fraction swaps the axes of the default plots.
    let infos = plot::plot_csv(&csv, Some(RATIO), None, Some(FRACTION), &out).unwrap();
    assert!(infos[0].files[0].ends_with("hit_rate_vs_hicache_ratio.png"));
    assert_eq!(
        infos[0].panels[0].series[0].name,
        "hicache_host_memory_fraction=0.5"
    );
    let infos = plot::plot_csv(
        &csv,
        None,
        Some("hit_rate_total,hit_rate_host"),
        Some(RATIO),
        &out,
    )
    .unwrap();
    assert!(
        infos[0].files[1]
            .ends_with("hit_rate_total+hit_rate_host_vs_hicache_host_memory_fraction.svg")
    );
    assert_eq!(
        infos[0].panels[0].series[0].name,
        "hit_rate_total | hicache_ratio=unset"
    );
    let e = plot::plot_csv(
        &csv,
        Some("server.nope"),
        Some("hit_rate_total"),
        None,
        &out,
    )
    .unwrap_err();
    assert!(e.to_string().contains("no column `server.nope`"), "{e}");
}

/// A CSV with its header and no rows is exit 2 with the reason, and no chart is written.
#[test]
fn a_header_only_csv_is_refused_not_drawn_empty() {
    let d = tempfile::tempdir().unwrap();
    let header = sweep_csv().lines().next().unwrap().to_string() + "\n";
    std::fs::write(d.path().join("results.csv"), header).unwrap();
    let o = crate::support::run(&["plot", "results.csv", "--out", "p"], d.path());
    assert_eq!(crate::support::code(&o), 2);
    assert!(
        crate::support::stderr(&o)
            .contains("results.csv: no rows under the header: nothing to plot"),
        "{}",
        crate::support::stderr(&o)
    );
    assert!(!d.path().join("p/outcome_map.png").exists());
}

/// A point that starts in run 0 but misses the target P(start) is drawn as a risk, not
/// as the darkest green of its margin: the quickstart's `--hicache-ratio 1.0` row (run
/// 0's tightest pool the 8.57 GB indexer pool, +58.3 GB; P(start) 0.96).
#[test]
fn a_start_below_the_target_is_amber_and_names_its_pool() {
    let (_keep, d) = out_dir();
    let csv = "point,server.hicache_host_memory_fraction,server.hicache_ratio,seed,outcome,budget_bytes,requested_bytes,margin_bytes,binding_pool,start_probability\n\
0,0.5,,2,started,103657822720,98474169600,5183653120,all,1.000000\n\
1,0.5,1.0,2,started,66874099136,8565967872,58308131264,indexer,0.960000\n\
2,0.5,1.5,2,refused,207315645440,208250265600,-934620160,kv,0.000000\n";
    let t = Table::from_csv(csv.as_bytes(), "results.csv").unwrap();
    let info = plot::outcome_map(&t, FRACTION, RATIO, &d.join("risk")).unwrap();
    assert_eq!(
        series(&info, 0),
        [
            ("meets_target", 1),
            ("below_target", 1),
            ("refused", 1),
            ("oom_killed", 0),
            ("failed", 0),
            ("no_result", 0)
        ]
        .map(|(n, c)| (n.to_string(), c))
    );
    let svg = std::fs::read_to_string(d.join("risk.svg")).unwrap();
    for label in [
        "P(start) 0.960",
        "+58.3 GB indexer",
        "+5.2 GB all pools",
        "-0.9 GB kv",
        "starts, P(start) &lt; 0.999 (1)",
    ] {
        assert!(svg.contains(label), "{label} not drawn");
    }
    let info = plot::budget_vs_request(&t, &d.join("risk_bvr")).unwrap();
    assert_eq!(
        series(&info, 0),
        [
            ("refusal line (budget = request)", 2),
            ("meets", 1),
            ("below", 1),
            ("refused", 1)
        ]
        .map(|(n, c)| (n.to_string(), c))
    );
    let svg = std::fs::read_to_string(d.join("risk_bvr.svg")).unwrap();
    assert!(
        svg.contains("started, P(start) &lt; 0.999: indexer pool"),
        "{svg}"
    );
}
