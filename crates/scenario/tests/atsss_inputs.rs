//! Bad ATSSS inputs are refused at their field: rate traces, tunnel scheduler parameters and
//! reordering buffers (issue #32).

use mpsched_scenario::builtin;
use mpsched_scenario::Scenario;

fn one_ue() -> String {
    builtin::find("atsss/one-ue").unwrap().1.to_string()
}

fn refused(text: &str) -> (String, String) {
    let e = Scenario::from_toml(text, "/nonexistent/dir/x.toml").unwrap_err();
    (e.field, e.message)
}

#[test]
fn rate_traces_are_checked_where_they_are_named() {
    let t = one_ue();
    let (f, m) = refused(&t.replace("link = \"wifi\"\nfile", "link = \"nope\"\nfile"));
    assert_eq!(
        (f.as_str(), m.contains("no link named")),
        ("rate_trace[0].link", true),
        "{m}"
    );
    let (f, m) = refused(&t.replace("file = \"wifi-falling\"", "file = \"missing.csv\""));
    assert_eq!(f, "rate_trace[0].file");
    assert!(
        m.contains("neither a built-in trace") && m.contains("wifi-office"),
        "{m}"
    );
    let twice = t.replace(
        "[[path]]\nname = \"via_wifi\"",
        "[[rate_trace]]\nlink = \"wifi\"\nfile = \"wifi-office\"\n[[path]]\nname = \"via_wifi\"",
    );
    let (f, m) = refused(&twice);
    assert_eq!(
        (f.as_str(), m.contains("already follows")),
        ("rate_trace[1].link", true),
        "{m}"
    );
    let sc = Scenario::from_toml(
        &t.replace("file = \"wifi-falling\"", "file = \"wifi-falling\"\nstart = \"25s\""),
        "x.toml",
    )
    .unwrap();
    assert!(
        sc.rate_traces[0].points.iter().all(|p| p.0 >= 25_000_000_000_000),
        "shifted by start"
    );
    assert!(
        sc.rate_traces[0].points.len() < 60,
        "points past the run's end are dropped"
    );
}

#[test]
fn tunnel_parameters_and_reordering_are_checked() {
    let t = one_ue();
    let (f, m) = refused(&t.replace(
        "reorder_capacity = 1024",
        "reorder_capacity = 1024\nparams = { wieght = 3 }",
    ));
    assert_eq!(
        (f.as_str(), m.contains("no tunnel scheduler has")),
        ("tunnel[0].params.wieght", true),
        "{m}"
    );
    let (f, _) = refused(&t.replace(
        "reorder_capacity = 1024",
        "reorder_capacity = 1024\nparams = { weight = 63 }",
    ));
    assert_eq!(f, "tunnel[0].params.weight", "RTTMon's weight stops at 62");
    let (f, _) = refused(&t.replace("weight = 191", "weight = 256"));
    assert_eq!(f, "variant[0].tunnel_params.weight");
    let (f, m) = refused(&t.replace("transport = \"udp\"", "transport = \"tcp\""));
    assert_eq!(f, "tunnel[0].reorder_capacity", "{m}");
    let (f, _) = refused(&t.replace("reorder_capacity = 1024", "reorder_capacity = 70000"));
    assert_eq!(f, "tunnel[0].reorder_capacity");
    let (f, _) = refused(&t.replace("reorder_timeout = \"100ms\"", "reorder_timeout = \"0s\""));
    assert_eq!(f, "tunnel[0].reorder_timeout");
    // A parameter another scheduler has is kept for it and ignored by this one.
    let sc = Scenario::from_toml(
        &t.replace(
            "reorder_capacity = 1024",
            "reorder_capacity = 1024\nparams = { initial_cwnd = 20 }",
        ),
        "x.toml",
    )
    .unwrap();
    let cmon = sc.with_variant("CMon").unwrap();
    assert_eq!(cmon.tunnels[0].scheduler_params.get("initial_cwnd"), 20);
}
