//! `[topology]`: generated fat trees and leaf-spines in the scenario format, their names, tiers
//! and down links, ECMP routing by default, and the errors of a bad table.

use mpsched_core::table::ECMP_GROUP;
use mpsched_scenario::{NodeKind, Routing, Scenario};

fn fat_tree(extra: &str) -> String {
    format!(
        r#"
[scenario]
name = "ft"
duration = "1s"
{extra}
[topology]
kind = "fat-tree"
k = 4
[topology.host_links]
rate = "10Gbps"
[topology.edge_links]
rate = "40Gbps"
delay = "1us"
queue_pkts = 50
[topology.core_links]
rate = "40Gbps"
ecn_threshold_pkts = 20

[[flow]]
name = "f"
src = "tor0-h0"
dst = "tor7-h1"
protocol = "tcp"
"#
    )
}

fn refused(text: &str, field: &str, says: &str) {
    let e = Scenario::from_toml(text, "t.toml").unwrap_err();
    assert_eq!(e.field, field, "{e}");
    assert!(e.message.contains(says), "{e}");
}

#[test]
fn a_fat_tree_becomes_nodes_and_links_with_each_tiers_values() {
    let sc = Scenario::from_toml(&fat_tree(""), "t.toml").unwrap();
    assert_eq!(sc.routing, Routing::Ecmp, "ECMP by default with a [topology]");
    let hosts = sc.nodes.iter().filter(|n| n.kind == NodeKind::Host).count();
    assert_eq!((hosts, sc.nodes.len(), sc.links.len()), (16, 36, 48));
    assert_eq!(sc.nodes[0].ip, 0x0a00_0001, "hosts first, from 10.0.0.1");
    let by = |n: &str| sc.nodes.iter().position(|x| x.name == n).unwrap();
    let link = |a: &str, b: &str| {
        let (a, b) = (by(a), by(b));
        sc.links
            .iter()
            .find(|l| (l.a, l.b) == (a, b) || (l.a, l.b) == (b, a))
            .unwrap()
    };
    assert_eq!(link("tor0-h0", "tor0").rate_bps, 10_000_000_000);
    let edge = link("tor0", "pod0-agg1");
    assert_eq!(
        (edge.rate_bps, edge.delay_ps, edge.queue_pkts),
        (40_000_000_000, 1_000_000, 50)
    );
    assert_eq!(link("pod3-agg1", "core3").ecn_threshold_pkts, Some(20));
}

#[test]
fn switches_route_over_every_equal_cost_uplink() {
    let sc = Scenario::from_toml(&fat_tree(""), "t.toml").unwrap();
    let w = sc.wiring().unwrap();
    let by = |n: &str| sc.nodes.iter().position(|x| x.name == n).unwrap();
    let tor0 = w.switches[by("tor0")].as_ref().unwrap();
    let remote = sc.nodes[by("tor7-h1")].ip;
    let r = tor0.routes.iter().find(|r| r.prefix == remote).unwrap();
    assert_ne!(r.port & ECMP_GROUP, 0, "to another pod: an ECMP group");
    let mut ups = tor0.ecmp_groups[usize::from(r.port & !ECMP_GROUP)].clone();
    ups.sort_unstable();
    let want: Vec<_> = ["pod0-agg0", "pod0-agg1"]
        .iter()
        .map(|a| w.port_to(by("tor0"), by(a)).unwrap())
        .collect();
    assert_eq!(ups, want, "both aggregation switches");
    let local = sc.nodes[by("tor0-h1")].ip;
    assert_eq!(
        tor0.routes.iter().find(|r| r.prefix == local).unwrap().port & ECMP_GROUP,
        0
    );
    let seeds: std::collections::HashSet<u32> = w.switches.iter().flatten().map(|c| c.hash_seed).collect();
    assert_eq!(seeds.len(), 20, "a hash seed per switch");
    // One shortest path per destination when asked.
    let sc = Scenario::from_toml(&fat_tree("routing = \"shortest\""), "t.toml").unwrap();
    assert!(sc
        .wiring()
        .unwrap()
        .switches
        .iter()
        .flatten()
        .all(|c| c.ecmp_groups.is_empty()));
}

#[test]
fn down_links_are_left_out_and_oversubscription_adds_hosts() {
    let text = fat_tree("").replace(
        "[topology.host_links]",
        "oversubscription = 2\ndown = [[\"pod0-agg1\", \"core2\"], [\"tor0\", \"pod0-agg0\"]]\n[topology.host_links]",
    );
    let sc = Scenario::from_toml(&text, "t.toml").unwrap();
    let hosts = sc.nodes.iter().filter(|n| n.kind == NodeKind::Host).count();
    assert_eq!((hosts, sc.links.len()), (32, 64 - 2));
    let sc = Scenario::from_toml(
        &text.replace(
            "down = [[\"pod0-agg1\", \"core2\"], [\"tor0\", \"pod0-agg0\"]]",
            "down = [[\"tor0\", \"core0\"]]",
        ),
        "t.toml",
    );
    assert!(sc
        .unwrap_err()
        .message
        .contains("no generated link between `tor0` and `core0`"));
}

#[test]
fn a_leaf_spine_and_the_errors_of_a_bad_topology_table() {
    let ls = r#"
[scenario]
name = "ls"
duration = "1s"
[topology]
kind = "leaf-spine"
leaves = 4
spines = 2
hosts_per_leaf = 3
[topology.host_links]
rate = "25Gbps"
[topology.edge_links]
rate = "100Gbps"
[[flow]]
name = "f"
src = "leaf0-h0"
dst = "leaf3-h2"
rate = "1Gbps"
"#;
    let sc = Scenario::from_toml(ls, "t.toml").unwrap();
    assert_eq!((sc.nodes.len(), sc.links.len()), (18, 20));
    refused(
        &ls.replace("leaf-spine", "torus"),
        "topology.kind",
        "expected `fat-tree`, `three-tier` or `leaf-spine`",
    );
    refused(&ls.replace("spines = 2\n", ""), "topology.spines", "needs `spines`");
    refused(
        &ls.replace("leaves = 4", "leaves = 4\nk = 4"),
        "topology.k",
        "not a key of a leaf-spine",
    );
    refused(&fat_tree("").replace("k = 4", "k = 5"), "topology.k", "even k");
    refused(
        &fat_tree("").replace("rate = \"40Gbps\"\ndelay", "rate = \"fast\"\ndelay"),
        "topology.edge_links.rate",
        "expected a rate",
    );
    refused(
        &fat_tree("routing = \"ospf\""),
        "scenario.routing",
        "`shortest` or `ecmp`",
    );
    let no_core = fat_tree("").replace(
        "[topology.core_links]\nrate = \"40Gbps\"\necn_threshold_pkts = 20\n",
        "",
    );
    refused(&no_core, "topology.core_links", "needs `[topology.core_links]`");
    refused(
        &fat_tree("").replace("k = 4", "k = 4\nhosts_per_tor = 3\noversubscription = 2"),
        "topology.oversubscription",
        "not both",
    );
}

#[test]
fn the_node_count_is_bounded_before_anything_is_sized_by_it() {
    // k = 100: 250 000 nodes, refused before any is generated.
    let big = fat_tree("").replace("k = 4", "k = 100");
    let e = Scenario::from_toml(&big, "t.toml").unwrap_err();
    assert!(e.message.contains("at most 65536"), "{e}");
    let mut text = String::from("[scenario]\nname = \"many\"\nduration = \"1s\"\n");
    for i in 0..65_537 {
        text.push_str(&format!("[[node]]\nname = \"n{i}\"\nkind = \"switch\"\n"));
    }
    let e = Scenario::from_toml(&text, "t.toml").unwrap_err();
    assert_eq!(e.field, "node", "{e}");
    assert!(e.message.contains("65537 nodes; at most 65536"), "{e}");
}

#[test]
fn the_control_plane_is_bounded_by_what_its_tables_take() {
    // k = 40: 18 000 nodes, 2 000 switches: 490 MB of routes and tables, refused at the key
    // before it is generated.
    let big = fat_tree("").replace("k = 4", "k = 40");
    let e = Scenario::from_toml(&big, "t.toml").unwrap_err();
    assert_eq!(e.field, "topology.k", "{e}");
    assert!(e.message.contains("at most 256 MiB"), "{e}");
    // 8 193 switches were refused when routes were dense; 20 000 hosts behind two switches take
    // about a megabyte and pass.
    let mut text = String::from("[scenario]\nname = \"many\"\nduration = \"1s\"\n");
    text.push_str("[[node]]\nname = \"a\"\nkind = \"switch\"\n[[node]]\nname = \"b\"\nkind = \"switch\"\n");
    for i in 0..20_000 {
        text.push_str(&format!("[[node]]\nname = \"h{i}\"\nkind = \"host\"\n"));
    }
    for i in 0..20_000 {
        for s in ["a", "b"] {
            text.push_str(&format!("[[link]]\na = \"h{i}\"\nb = \"{s}\"\nrate = \"1Gbps\"\n"));
        }
    }
    text.push_str("[[flow]]\nname = \"f\"\nsrc = \"h0\"\ndst = \"h1\"\nrate = \"1Mbps\"\n");
    let sc = Scenario::from_toml(&text, "t.toml").unwrap();
    let bytes = mpsched_scenario::control_plane_bytes(&sc.nodes, &sc.links);
    assert!(bytes < 2 << 20, "{bytes} bytes for 20 000 hosts");
}

/// A generated layout: `kind` with `sizes`, the tiers it needs and one flow between its first
/// two hosts (`a` and `b`).
fn layout(kind: &str, sizes: &str, a: &str, b: &str) -> String {
    format!(
        "[scenario]\nname = \"l\"\nduration = \"1s\"\n[topology]\nkind = \"{kind}\"\n{sizes}\n\
         [topology.host_links]\nrate = \"1Gbps\"\n[topology.edge_links]\nrate = \"1Gbps\"\n{}\
         [[flow]]\nname = \"f\"\nsrc = \"{a}\"\ndst = \"{b}\"\nrate = \"1Mbps\"\n",
        if kind == "leaf-spine" {
            ""
        } else {
            "[topology.core_links]\nrate = \"1Gbps\"\n"
        }
    )
}

/// Issue 45 item 5: what a layout derives from a few sizes (links, the control plane's bytes,
/// the route searches' steps) is bounded before it is generated, at the key to make smaller.
#[test]
fn a_layouts_products_are_bounded_before_it_is_generated_at_its_largest_size() {
    let leaf_spine = |l: u32, s: u32| {
        let sizes = format!("leaves = {l}\nspines = {s}\nhosts_per_leaf = 1");
        layout("leaf-spine", &sizes, "leaf0-h0", "leaf1-h0")
    };
    // 12 000 nodes and 16 million links: 3.45 GB and an abort before.
    let t0 = std::time::Instant::now();
    refused(
        &leaf_spine(4000, 4000),
        "topology.leaves",
        "has 16004000 links; at most 262144",
    );
    assert!(t0.elapsed().as_secs_f64() < 1.0, "refused before anything is generated");
    refused(&leaf_spine(300, 900), "topology.spines", "has 270300 links");
    // 250 500 links, but 1 500 route columns over 1 500 nodes and 501 000 ports.
    refused(
        &leaf_spine(500, 500),
        "topology.leaves",
        "computing its routes would take 753750000 steps",
    );
    assert!(Scenario::from_toml(&leaf_spine(64, 64), "t.toml").is_ok());
    // k = 192 and a host a rack: 64 512 nodes, 3.5 million links.
    let ft = layout("fat-tree", "k = 192\nhosts_per_tor = 1", "tor0-h0", "tor1-h0");
    refused(&ft, "topology.k", "has 3557376 links");
    let three = "pods = 2\ntors_per_pod = 10\naggs_per_pod = 200\ncores = 800\nhosts_per_tor = 1";
    let three = layout("three-tier", three, "tor0-h0", "tor1-h0");
    refused(&three, "topology.cores", "has 324020 links");
}

/// A run computes the routes again for each failure and keeps every switch's tables for each:
/// bounded at validation, at `failure`.
#[test]
fn failures_multiply_the_control_plane_and_are_bounded_with_it() {
    let k28 = layout("fat-tree", "k = 28", "tor0-h0", "tor1-h0");
    assert!(Scenario::from_toml(&k28, "t.toml").is_ok(), "one set of tables: 86 MB");
    let failures: String = (0..5)
        .map(|a| format!("[[failure]]\na = \"tor0\"\nb = \"pod0-agg{a}\"\nat = \"100ms\"\n"))
        .collect();
    refused(
        &format!("{k28}{failures}"),
        "failure",
        "the network with 5 failures: the control plane's routes and switch tables would take",
    );
}

/// A scenario's own flows count against the bound on flows with those its workloads draw.
#[test]
fn the_files_own_flows_count_against_the_bound_on_flows() {
    let own = "[[flow]]\nname = \"g\"\nsrc = \"tor0-h0\"\ndst = \"tor1-h0\"\nprotocol = \"tcp\"\n";
    refused(
        &format!(
            "{}{own}",
            workload("load = 1.0").replace("duration = \"1s\"", "duration = \"1000s\"")
        ),
        "workload[0].load",
        "flows expected, with 1 before them; at most 250000",
    );
    let mut text = fat_tree("");
    for i in 0..mpsched_scenario::MAX_FLOWS {
        text.push_str(&format!(
            "[[flow]]\nname = \"g{i}\"\nsrc = \"tor0-h0\"\ndst = \"tor1-h0\"\n"
        ));
    }
    refused(&text, "flow", "250001 flows; at most 250000");
}

fn workload(keys: &str) -> String {
    format!(
        "{}\n[[workload]]\nname = \"ws\"\ncdf = \"websearch\"\n{keys}\n",
        fat_tree("").split("[[flow]]").next().unwrap()
    )
}

/// #11 item 3: flows drawn from the web-search CDF at a load, to random servers or along a
/// permutation; their number follows the definition of load.
#[test]
fn a_workload_draws_poisson_flows_at_its_load() {
    // 16 hosts at 10 Gbit/s, load 0.3, 1 s: 16 x 0.3 x 10e9 / (8 x 1 711 250) = 3 506 flows.
    let sc = Scenario::from_toml(&workload("load = 0.3"), "t.toml").unwrap();
    let n = sc.flows.len() as f64;
    assert!((n / 3506.0 - 1.0).abs() < 0.05, "{n} flows");
    assert!(sc
        .flows
        .iter()
        .all(|f| f.src != f.dst && f.start_ps < 1_000_000_000_000));
    assert!(sc.flows.iter().all(|f| f.tcp.is_some()));
    let again = Scenario::from_toml(&workload("load = 0.3"), "t.toml").unwrap();
    assert_eq!(sc.flows, again.flows, "the same seed draws the same flows");
    let perm = Scenario::from_toml(&workload("load = 0.1\npattern = \"permutation\""), "t.toml").unwrap();
    let mut partner = std::collections::HashMap::new();
    for f in &perm.flows {
        assert_ne!(f.src, f.dst);
        assert_eq!(*partner.entry(f.src).or_insert(f.dst), f.dst, "one partner per client");
    }
    let mut dsts: Vec<_> = partner.values().collect();
    dsts.sort();
    dsts.dedup();
    assert_eq!(dsts.len(), partner.len(), "a permutation: each server once");
}

#[test]
fn bad_workloads_are_refused() {
    refused(&workload("load = 0"), "workload[0].load", "(0, 1]");
    refused(
        &workload("load = 0.5\npattern = \"incast\""),
        "workload[0].pattern",
        "`random` or `permutation`",
    );
    refused(
        &workload("load = 0.5").replace("websearch", "nowhere.txt"),
        "workload[0].cdf",
        "neither `websearch`",
    );
    refused(
        &workload("load = 0.5\nclients = [\"tor0\"]"),
        "workload[0].clients",
        "not a host",
    );
    refused(
        &workload("load = 1.0").replace("duration = \"1s\"", "duration = \"1000s\""),
        "workload[0].load",
        "at most 250000",
    );
    // Issue 27 item 5: a stop past the run's end is refused before a flow is drawn, at its key.
    refused(
        &workload("load = 1.0\nstop = \"1000s\""),
        "workload[0].stop",
        "1000s is after the run's end (scenario.duration = 1s)",
    );
    // Issue 27 item 10: an empty list of clients or servers, at its key.
    refused(
        &workload("load = 0.5\nclients = []"),
        "workload[0].clients",
        "at least one host",
    );
    refused(
        &workload("load = 0.5\nservers = []"),
        "workload[0].servers",
        "at least one host",
    );
    refused(&workload(""), "workload[0].load", "need a `load`");
    refused(
        &workload("load = 0.5").replace("cdf = \"websearch\"\n", ""),
        "workload[0].cdf",
        "need a flow-size `cdf`",
    );
    refused(
        &workload("arrivals = \"once\"\nload = 0.5"),
        "workload[0].load",
        "one flow per client",
    );
    refused(
        &workload("arrivals = \"burst\""),
        "workload[0].arrivals",
        "`poisson` or `once`",
    );
}

/// `arrivals = "once"`: one flow per client at `start`, sized from the CDF (every client at one
/// server is an incast) or, without a CDF, a long flow until `stop`.
#[test]
fn once_arrivals_start_one_flow_per_client() {
    let incast = Scenario::from_toml(
        &workload("arrivals = \"once\"\nstart = \"10ms\"\nservers = [\"tor0-h0\"]"),
        "t.toml",
    )
    .unwrap();
    assert_eq!(incast.flows.len(), 15, "every host but the server");
    let server = incast.node_index("tor0-h0").unwrap();
    assert!(incast
        .flows
        .iter()
        .all(|f| f.dst == server && f.start_ps == 10_000_000_000 && f.tcp.is_some()));
    let long = Scenario::from_toml(
        &workload("arrivals = \"once\"\npattern = \"permutation\"\nstop = \"500ms\"")
            .replace("cdf = \"websearch\"\n", ""),
        "t.toml",
    )
    .unwrap();
    assert_eq!(long.flows.len(), 16);
    assert!(long
        .flows
        .iter()
        .all(|f| f.stop_ps == 500_000_000_000 && f.src != f.dst));
}

#[test]
fn a_cdf_file_must_be_a_small_regular_file() {
    refused(
        &workload("load = 0.5").replace("websearch", "/dev/zero"),
        "workload[0].cdf",
        "not a regular file",
    );
    let dir = tempfile_dir();
    std::fs::write(dir.join("flat.txt"), "1000 0\n1000 1\n").unwrap();
    let origin = dir.join("s.toml");
    let sc = Scenario::from_toml(
        &workload("load = 0.01").replace("websearch", "flat.txt"),
        origin.to_str().unwrap(),
    )
    .unwrap();
    assert!(sc.flows.iter().all(|f| matches!(
        f.tcp.as_ref().unwrap().app,
        mpsched_scenario::TcpApp::Transfer { size_bytes: 1000 }
    )));
    std::fs::remove_dir_all(dir).ok();
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mpsched-cdf-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `[[failure]]`: a link by name or by its ends, failing before the end of the run.
#[test]
fn failures_name_a_link_and_a_time_within_the_run() {
    let base = fat_tree("");
    let with = |f: &str| format!("{base}\n[[failure]]\n{f}\n");
    let sc = Scenario::from_toml(
        &with("a = \"tor0\"\nb = \"pod0-agg0\"\nat = \"100ms\"\nreroute_after = \"5ms\""),
        "t.toml",
    )
    .unwrap();
    let f = &sc.failures[0];
    let l = &sc.links[f.link];
    let ends = [sc.nodes[l.a].name.as_str(), sc.nodes[l.b].name.as_str()];
    assert!(ends.contains(&"tor0") && ends.contains(&"pod0-agg0"), "{ends:?}");
    assert_eq!((f.at_ps, f.reroute_after_ps), (100_000_000_000, 5_000_000_000));
    assert_eq!(
        sc.scaled_to(sc.duration_ps / 2).failures[0].at_ps,
        50_000_000_000,
        "scaled with the run"
    );
    refused(
        &with("a = \"tor0\"\nb = \"core0\"\nat = \"1ms\""),
        "failure[0].b",
        "no link joins",
    );
    refused(
        &with("link = \"nope\"\nat = \"1ms\""),
        "failure[0].link",
        "no link named",
    );
    refused(&with("at = \"1ms\""), "failure[0].link", "name the link");
    refused(
        &with("a = \"tor0\"\nb = \"pod0-agg0\"\nat = \"100s\""),
        "failure[0].at",
        "before the end",
    );
}

/// MP-HULA's Fig. 4 as a three-tier layout, and load as a fraction of a shared capacity.
#[test]
fn a_three_tier_layout_and_a_load_on_a_shared_capacity() {
    let (path, text) = mpsched_scenario::builtin::find("mphula2018/fig5-websearch-tcp-ecmp").unwrap();
    let sc = Scenario::from_toml(text, path).unwrap();
    assert_eq!(sc.nodes.len(), 40);
    assert_eq!(sc.links.len(), 32 + 4 + 8);
    // 0.5 x 80 Gbit/s over 0.5 s of arrivals, 1 711 250 B a flow: about 1 461 flows, all from
    // pod 1 (tor0) to pod 2 (tor1).
    let n = sc.flows.len() as f64;
    assert!((n / 1461.0 - 1.0).abs() < 0.06, "{n} flows");
    let (tor0, tor1) = (sc.node_index("tor0").unwrap(), sc.node_index("tor1").unwrap());
    let rack_of = |h: usize| {
        sc.links
            .iter()
            .find(|l| l.a == h || l.b == h)
            .map(|l| l.a + l.b - h)
            .unwrap()
    };
    assert!(sc
        .flows
        .iter()
        .all(|f| rack_of(f.src) == tor0 && rack_of(f.dst) == tor1));
    refused(
        &text.replace("cores = 2", "cores = 2\nk = 4"),
        "topology.k",
        "not a key of a three-tier",
    );
    refused(&text.replace("cores = 2\n", ""), "topology.cores", "needs `cores`");
}
