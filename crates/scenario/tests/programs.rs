//! Programs named by scenarios: `[scenario] program`, `[[node]] program`, `[topology.programs]`
//! by tier, `[programs.<name>]` parameters in the scenario's units, variants and sweeps that
//! change them, and the errors of each at its field.

use mpsched_core::table::ECMP_GROUP;
use mpsched_scenario::overrides::Override;
use mpsched_scenario::Scenario;

fn three_tier(extra: &str, topology_extra: &str) -> String {
    format!(
        r#"
[scenario]
name = "tt"
duration = "1s"
{extra}
[topology]
kind = "three-tier"
pods = 2
tors_per_pod = 1
aggs_per_pod = 2
cores = 2
hosts_per_tor = 2
{topology_extra}
[topology.host_links]
rate = "10Gbps"
[topology.edge_links]
rate = "40Gbps"
[topology.core_links]
rate = "40Gbps"

[[flow]]
name = "f"
src = "tor0-h0"
dst = "tor1-h1"
protocol = "tcp"
"#
    )
}

fn refused(text: &str, field: &str, says: &str) {
    let e = Scenario::from_toml(text, "t.toml").unwrap_err();
    assert_eq!(e.field, field, "{e}");
    assert!(e.message.contains(says), "{e}");
}

fn program_at(sc: &Scenario, node: &str) -> &'static str {
    sc.programs[sc.node_index(node).unwrap()].unwrap()
}

#[test]
fn switches_run_multipath_unless_told_and_hosts_run_nothing() {
    let sc = Scenario::from_toml(&three_tier("", ""), "t.toml").unwrap();
    assert_eq!(program_at(&sc, "tor0"), "multipath");
    assert_eq!(sc.programs[sc.node_index("tor0-h0").unwrap()], None);
}

#[test]
fn a_scenario_wide_program_its_parameters_and_tiers() {
    let text = three_tier(
        "program = \"letflow\"\n[programs.letflow]\nflowlet_gap = \"50us\"\ntable_entries = 256\n",
        "programs = { core = \"ecmp\" }",
    );
    let sc = Scenario::from_toml(&text, "t.toml").unwrap();
    assert_eq!(program_at(&sc, "tor0"), "letflow");
    assert_eq!(program_at(&sc, "pod0-agg1"), "letflow");
    assert_eq!(program_at(&sc, "core1"), "ecmp");
    let (spec, params) = sc.program_of(sc.node_index("tor1").unwrap()).unwrap();
    assert_eq!(spec.name(), "letflow");
    assert_eq!(params.get("flowlet_gap"), 50_000_000);
    assert_eq!(params.get("table_entries"), 256);
    // LetFlow's tables hold every equal-cost next hop even where `routing` is shortest.
    let text = text.replace("program = \"letflow\"", "program = \"letflow\"\nrouting = \"shortest\"");
    let sc = Scenario::from_toml(&text, "t.toml").unwrap();
    let w = sc.wiring().unwrap();
    let tor0 = w.switches[sc.node_index("tor0").unwrap()].as_ref().unwrap();
    assert_eq!(tor0.ecmp_groups.len(), 1, "{tor0:?}");
    assert!(tor0.routes.iter().any(|r| r.port & ECMP_GROUP != 0));
}

#[test]
fn a_variant_and_a_sweep_key_change_the_program() {
    let text = three_tier(
        "[[variant]]\nname = \"ECMP\"\nprogram = \"ecmp\"\n[[variant]]\nname = \"LetFlow\"\nprogram = \"letflow\"\n",
        "",
    );
    let sc = Scenario::from_toml(&text, "t.toml").unwrap();
    assert_eq!(program_at(&sc.with_variant("LetFlow").unwrap(), "core0"), "letflow");
    assert_eq!(program_at(&sc.with_variant("ECMP").unwrap(), "core0"), "ecmp");
    let v = sc.with_variant("LetFlow").unwrap();
    assert_eq!(
        v.program_of(v.node_index("tor0").unwrap())
            .unwrap()
            .1
            .get("flowlet_gap"),
        100_000_000
    );
    // A sweep (or `--set`) reaches any parameter by its dotted key.
    let set = |k: &str, v: &str| Override::parse(k, v).unwrap();
    let sc = Scenario::from_toml_with(
        &text,
        "t.toml",
        &[
            set("scenario.program", "letflow"),
            set("programs.letflow.flowlet_gap", "250us"),
        ],
    )
    .unwrap();
    let (spec, params) = sc.program_of(sc.node_index("core1").unwrap()).unwrap();
    assert_eq!((spec.name(), params.get("flowlet_gap")), ("letflow", 250_000_000));
    let e = Scenario::from_toml_with(&text, "t.toml", &[set("programs.letflow.flowlet_gap", "2s")]).unwrap_err();
    assert_eq!(e.field, "programs.letflow.flowlet_gap", "{e}");
}

#[test]
fn bad_programs_and_parameters_are_refused_at_their_field() {
    refused(
        &three_tier("program = \"conga\"", ""),
        "scenario.program",
        "registered: `multipath`",
    );
    refused(
        &three_tier("[programs.letflow]\nflowlet_gap = \"500ns\"", ""),
        "programs.letflow.flowlet_gap",
        "from 1us to 1s",
    );
    refused(
        &three_tier("[programs.letflow]\ntable_entries = 1000", ""),
        "programs.letflow.table_entries",
        "power of two",
    );
    refused(
        &three_tier("[programs.letflow]\ntable_entries = 4194304", ""),
        "programs.letflow.table_entries",
        "from 1 to 1048576",
    );
    refused(
        &three_tier("[programs.letflow]\ngap = \"1ms\"", ""),
        "programs.letflow.gap",
        "`flowlet_gap`",
    );
    refused(
        &three_tier("[programs.letflow]\nflowlet_gap = 100", ""),
        "programs.letflow.flowlet_gap",
        "a time",
    );
    refused(
        &three_tier("[programs.letflow]\nflowlet_gap = \"100.5us\"", ""),
        "programs.letflow.flowlet_gap",
        "a multiple of 1us",
    );
    refused(&three_tier("[programs.nope]", ""), "programs.nope", "no program `nope`");
    refused(
        &three_tier("", "programs = { spine = \"ecmp\" }"),
        "topology.programs.spine",
        "no tier `spine`",
    );
    refused(
        &three_tier("", "programs = { core = \"conga\" }"),
        "topology.programs.core",
        "no program `conga`",
    );
    refused(
        &three_tier("[[variant]]\nname = \"x\"\nprogram = \"x\"", ""),
        "variant[0].program",
        "no program `x`",
    );
}

#[test]
fn a_split_runs_only_through_switches_that_carry_splits() {
    let text = r#"
[scenario]
name = "s"
duration = "1s"
program = "letflow"
[[node]]
name = "h1"
kind = "host"
[[node]]
name = "s1"
kind = "switch"
[[node]]
name = "s2"
kind = "switch"
[[node]]
name = "s3"
kind = "switch"
[[node]]
name = "s4"
kind = "switch"
[[node]]
name = "h2"
kind = "host"
[[link]]
a = "h1"
b = "s1"
rate = "10Mbps"
[[link]]
a = "s1"
b = "s2"
rate = "10Mbps"
[[link]]
a = "s1"
b = "s3"
rate = "10Mbps"
[[link]]
a = "s2"
b = "s4"
rate = "10Mbps"
[[link]]
a = "s3"
b = "s4"
rate = "10Mbps"
[[link]]
a = "s4"
b = "h2"
rate = "10Mbps"
[[path]]
name = "p1"
nodes = ["s1", "s2", "s4"]
[[path]]
name = "p2"
nodes = ["s1", "s3", "s4"]
[[split]]
src = "h1"
dst = "h2"
paths = ["p1", "p2"]
scheduler = "wrr"
weights = [1, 1]
[[flow]]
name = "f"
src = "h1"
dst = "h2"
rate = "1Mbps"
"#;
    refused(text, "split", "does not carry splits");
    let ok = text.replace("program = \"letflow\"\n", "");
    Scenario::from_toml(&ok, "t.toml").unwrap();
    let host = ok.replace(
        "name = \"h1\"\nkind = \"host\"",
        "name = \"h1\"\nkind = \"host\"\nprogram = \"ecmp\"",
    );
    refused(&host, "node[0].program", "programs run on switches");
}

/// #29: HULA's parameters that bounds alone cannot refuse are refused at their field before
/// anything is built: a time constant that is not a power of two microseconds, an ageing time
/// no longer than the probe period, and a link too slow for the estimator's time constant
/// (named); the switches get their probe tables (ToR ids, port directions by level).
#[test]
fn hula_parameters_are_checked_together_and_against_link_rates() {
    let ok = three_tier("program = \"mphula\"\n[programs.mphula]\nbest_k = 3\n", "");
    let sc = Scenario::from_toml(&ok, "t.toml").unwrap();
    assert_eq!(program_at(&sc, "core0"), "mphula");
    let w = sc.wiring().unwrap();
    let tor = w.switches[sc.node_index("tor0").unwrap()].as_ref().unwrap();
    let probe = tor.probe.as_ref().expect("probe tables for a probe-driven program");
    assert_eq!((probe.tor_id, probe.n_tors), (Some(0), 2));
    refused(
        &three_tier("program = \"hula\"\n[programs.hula]\nutil_tau = \"300us\"\n", ""),
        "programs.hula.util_tau",
        "power of two",
    );
    refused(
        &three_tier("program = \"hula\"\n[programs.hula]\nageing = \"200us\"\n", ""),
        "programs.hula.ageing",
        "probe period",
    );
    let slow = three_tier("program = \"hula\"\n", "").replace("rate = \"10Gbps\"", "rate = \"1Mbps\"");
    refused(&slow, "programs.hula.util_tau", "tor0-h0 - tor0");
}
