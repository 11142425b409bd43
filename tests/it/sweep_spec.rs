//! Bad sweep files are refused before any work, naming file, line and field.

use hicache_sim::sweep::{self, SweepSpec};
use serde_json::{Value, json};

fn base() -> Value {
    json!({"seed": 1, "sglang": "pr40135",
           "server": {"hicache_host_memory_fraction": 1.0, "hicache_ratio": null, "page_size": 64,
                      "hicache_write_policy": "write_through", "enable_hierarchical_cache": true},
           "runtime": {"l1_pages": 6000, "l2_pages": 12000}})
}

fn expand(yaml: &str) -> Result<Vec<sweep::Point>, hicache_sim::error::InputError> {
    let spec = SweepSpec::from_scenario_yaml(yaml, "bad.yaml")?;
    sweep::expand(&spec, &base())
}

#[test]
fn a_good_file_expands() {
    let y = "sglang: pr40135\nsweep:\n  axes:\n    sglang: [pr35540, pr40135]\n    server.hicache_ratio: [null, 1.5, 2.0]\n  zip:\n    - {runtime.l1_pages: [1000, 2000], runtime.l2_pages: [2000, 4000]}\n  seeds: 3\n";
    let pts = expand(y).unwrap();
    assert_eq!(pts.len(), 2 * 3 * 2 * 3);
    let cols: Vec<&str> = pts[0].values.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        cols,
        [
            "sglang",
            "server.hicache_ratio",
            "runtime.l1_pages",
            "runtime.l2_pages"
        ]
    );
}

#[test]
fn unknown_field_names_line_and_suggests() {
    let y = "sweep:\n  axes:\n    server.hicache_host_memory_fraction: [0.5]\n    server.hicache_rato: [1.5, 2.0]\n";
    let e = expand(y).unwrap_err();
    assert_eq!(e.source, "bad.yaml");
    assert_eq!(e.line, Some(4));
    assert_eq!(e.field.as_deref(), Some("server.hicache_rato"));
    assert!(
        e.message.contains("did you mean `server.hicache_ratio`?"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "bad.yaml:4: field `server.hicache_rato`: unknown scenario field `server.hicache_rato`; did you mean `server.hicache_ratio`?"
    );
}

#[test]
fn empty_axis() {
    let y = "sweep:\n  axes:\n    server.page_size: []\n";
    let e = expand(y).unwrap_err();
    assert_eq!(
        (e.line, e.field.as_deref()),
        (Some(3), Some("server.page_size"))
    );
    assert!(e.message.contains("empty axis"), "{e}");
}

#[test]
fn wrong_type_points_at_the_value() {
    let y =
        "sweep:\n  axes:\n    server.hicache_host_memory_fraction:\n      - 0.5\n      - lots\n";
    let e = expand(y).unwrap_err();
    assert_eq!(
        (e.line, e.field.as_deref()),
        (Some(5), Some("server.hicache_host_memory_fraction"))
    );
    assert!(e.message.contains("expected a number"), "{e}");
    let y = "sweep:\n  axes:\n    server.page_size: [32, 64.5]\n";
    let e = expand(y).unwrap_err();
    assert_eq!(e.line, Some(3));
    assert!(e.message.contains("expected an integer"), "{e}");
    let y = "sweep:\n  axes:\n    server.enable_hierarchical_cache: [true, 1]\n";
    assert!(
        expand(y)
            .unwrap_err()
            .message
            .contains("expected a boolean")
    );
    // An axis that is not a list is a YAML-level type error, still with a line.
    let y = "sweep:\n  axes:\n    server.page_size: 64\n";
    let e = expand(y).unwrap_err();
    assert_eq!(e.line, Some(3), "{e}");
}

#[test]
fn zip_of_unequal_lengths() {
    let y = "sweep:\n  zip:\n    - runtime.l1_pages: [1000, 2000]\n      runtime.l2_pages: [2000, 4000, 8000]\n";
    let e = expand(y).unwrap_err();
    assert_eq!(
        (e.line, e.field.as_deref()),
        (Some(4), Some("runtime.l2_pages"))
    );
    assert!(e.message.contains("equal lengths"), "{e}");
    assert!(
        e.message
            .contains("has 3 values but `runtime.l1_pages` has 2"),
        "{e}"
    );
}

#[test]
fn swept_twice_and_seed_axis() {
    let y = "sweep:\n  axes:\n    runtime.l1_pages: [1]\n  zip:\n    - {runtime.l1_pages: [1], runtime.l2_pages: [2]}\n";
    let e = expand(y).unwrap_err();
    assert!(e.message.contains("swept twice (first on line 3)"), "{e}");
    let y = "sweep:\n  axes:\n    seed: [1, 2]\n";
    assert!(expand(y).unwrap_err().message.contains("sweep.seeds"));
}

#[test]
fn unknown_sweep_key() {
    let y = "sweep:\n  axis:\n    runtime.l1_pages: [1]\n";
    let e = SweepSpec::from_scenario_yaml(y, "bad.yaml").unwrap_err();
    assert_eq!(e.line, Some(2), "{e}");
    assert!(e.message.contains("axis"), "{e}");
}

#[test]
fn invalid_combinations_are_refused_up_front() {
    let y = "sweep:\n  axes:\n    server.hicache_host_memory_fraction: [0.5, 1.5]\n";
    let spec = SweepSpec::from_scenario_yaml(y, "bad.yaml").unwrap();
    let pts = sweep::expand(&spec, &base()).unwrap();
    let validate = |v: &Value, _: &sweep::Point| {
        let f = v["server"]["hicache_host_memory_fraction"]
            .as_f64()
            .unwrap();
        if f > 0.0 && f <= 1.0 {
            Ok(())
        } else {
            Err(format!("--hicache-host-memory-fraction must be in (0, 1], got {f}").into())
        }
    };
    let e = sweep::check_points(&spec, &base(), &pts, &validate).unwrap_err();
    assert_eq!(e.line, Some(2)); // the body of `sweep:`
    assert!(
        e.message
            .contains("server.hicache_host_memory_fraction=1.5"),
        "{e}"
    );
    assert!(e.message.contains("must be in (0, 1]"), "{e}");
}
