//! Rate-controlled UDP transfers: a `[[flow]]` of a `size` paced by a rate controller, a
//! `[[workload]]` of them (`protocol = "udp"`), a variant that runs them as TCP, and the errors
//! at their fields.

use mpsched_scenario::{Protocol, RateControl, Scenario, TcpApp, DEFAULT_RETRANSMIT_TIMEOUT_PS};
use mpsched_transport::cc::CcKind;

/// Hosts a and b through switch s, 10 Gbit/s links, one flow `f` from a to b with `flow_extra`.
fn with_flow(flow_extra: &str) -> String {
    format!(
        r#"
[scenario]
name = "pt"
duration = "1s"
[[node]]
name = "a"
kind = "host"
[[node]]
name = "s"
kind = "switch"
[[node]]
name = "b"
kind = "host"
[[link]]
a = "a"
b = "s"
rate = "10Gbps"
[[link]]
a = "s"
b = "b"
rate = "10Gbps"
[[flow]]
name = "f"
src = "a"
dst = "b"
{flow_extra}
"#
    )
}

/// A k = 4 fat tree at 10 Gbit/s with one web-search workload of `workload_extra`.
fn with_workload(workload_extra: &str) -> String {
    format!(
        r#"
[scenario]
name = "pw"
duration = "20ms"
seed = 3
[topology]
kind = "fat-tree"
k = 4
[topology.host_links]
rate = "10Gbps"
[topology.edge_links]
rate = "10Gbps"
[topology.core_links]
rate = "10Gbps"
[tcp]
cc = "dctcp"
ecn = true
min_rto = "2ms"
[[workload]]
name = "ws"
cdf = "websearch"
load = 0.5
{workload_extra}
"#
    )
}

const PACED: &str = "protocol = \"udp\"\n[workload.rate_control]\ncc = \"dcqcn\"";

fn refused(text: &str, field: &str, says: &str) {
    let e = Scenario::from_toml(text, "t.toml").unwrap_err();
    assert_eq!(e.field, field, "{e}");
    assert!(e.message.contains(says), "{e}");
}

#[test]
fn a_sized_paced_flow_is_a_transfer_with_the_default_timeout_and_no_host_limit() {
    let sc = Scenario::from_toml(
        &with_flow("rate = \"9Gbps\"\nsize = \"100KB\"\necn = \"ect0\"\n[flow.rate_control]\ncc = \"dcqcn\""),
        "t.toml",
    )
    .unwrap();
    let f = &sc.flows[0];
    assert_eq!(f.protocol, Protocol::Udp);
    assert_eq!(f.paced_size_bytes(), Some(100_000));
    let p = f.paced.unwrap();
    assert_eq!(p.retransmit_timeout_ps, DEFAULT_RETRANSMIT_TIMEOUT_PS);
    assert_eq!(p.host_queue_limit_bytes, None);
    // An unsized paced flow has its transport too, without a size.
    let sc = Scenario::from_toml(
        &with_flow("rate = \"9Gbps\"\n[flow.rate_control]\ncc = \"dcqcn\"\nhost_queue_limit = \"16KB\""),
        "t.toml",
    )
    .unwrap();
    let p = sc.flows[0].paced.unwrap();
    assert_eq!((p.size_bytes, p.host_queue_limit_bytes), (None, Some(16_000)));
    // A flow without a rate controller has none.
    let sc = Scenario::from_toml(&with_flow("rate = \"9Gbps\""), "t.toml").unwrap();
    assert_eq!(sc.flows[0].paced, None);
}

#[test]
fn paced_transfer_mistakes_are_refused_at_their_fields() {
    refused(
        &with_flow("rate = \"9Gbps\"\nsize = \"100KB\""),
        "flow[0].size",
        "constant-rate UDP flow has no size",
    );
    refused(
        &with_flow("rate = \"9Gbps\"\nsize = \"0B\"\n[flow.rate_control]\ncc = \"dcqcn\""),
        "flow[0].size",
        "at least 1B",
    );
    refused(
        &with_flow("rate = \"9Gbps\"\n[flow.rate_control]\ncc = \"dcqcn\"\nretransmit_timeout = \"1ms\""),
        "flow[0].rate_control.retransmit_timeout",
        "applies to a flow with a `size`",
    );
    refused(
        &with_flow(
            "rate = \"9Gbps\"\nsize = \"1MB\"\n[flow.rate_control]\ncc = \"dcqcn\"\nretransmit_timeout = \"0s\"",
        ),
        "flow[0].rate_control.retransmit_timeout",
        "at least 1ns",
    );
    refused(
        &with_flow("rate = \"9Gbps\"\n[flow.rate_control]\ncc = \"pmqecn\"\nhost_queue_limit = \"0B\""),
        "flow[0].rate_control.host_queue_limit",
        "1B to 1GiB",
    );
    refused(
        &with_flow("rate = \"9Gbps\"\n[flow.rate_control]\ncc = \"dcqcn\"\nhost_queue_limit = \"2GiB\""),
        "flow[0].rate_control.host_queue_limit",
        "1B to 1GiB",
    );
}

#[test]
fn a_udp_workload_draws_paced_transfers_at_the_link_rate_less_headers_each_on_its_own_port() {
    let sc = Scenario::from_toml(&with_workload(PACED), "t.toml").unwrap();
    assert!(sc.flows.len() > 20, "{} flows", sc.flows.len());
    let mut ports = std::collections::HashSet::new();
    for f in &sc.flows {
        assert_eq!(f.protocol, Protocol::Udp, "{}", f.name);
        assert!(f.paced_size_bytes().is_some_and(|s| s > 0), "{}", f.name);
        assert!(matches!(f.rate_control, Some(RateControl::Dcqcn { .. })));
        assert_eq!(f.ecn, mpsched_core::packet::Ecn::Ect0, "DCQCN's switches mark ECT");
        // 10 Gbit/s of wire: 1470 of every 1512 bytes are payload.
        assert_eq!(f.rate_bps, 10_000_000_000 * 1470 / 1512);
        assert!(ports.insert((f.src, f.src_port)), "{} shares its host and port", f.name);
    }
    // The same draw as the TCP workload's: only the transport differs.
    let tcp = Scenario::from_toml(&with_workload(""), "t.toml").unwrap();
    assert_eq!(tcp.flows.len(), sc.flows.len());
    for (u, t) in sc.flows.iter().zip(&tcp.flows) {
        let Some(TcpApp::Transfer { size_bytes }) = t.tcp.as_ref().map(|t| t.app) else {
            panic!("{t:?}")
        };
        assert_eq!((u.src, u.dst, u.start_ps), (t.src, t.dst, t.start_ps));
        assert_eq!(u.paced_size_bytes(), Some(size_bytes));
    }
    // A rate given is every flow's.
    let sc = Scenario::from_toml(&with_workload(&format!("rate = \"5Gbps\"\n{PACED}")), "t.toml").unwrap();
    assert!(sc.flows.iter().all(|f| f.rate_bps == 5_000_000_000));
}

#[test]
fn udp_workload_mistakes_are_refused_at_the_workloads_fields() {
    refused(
        &with_workload("protocol = \"udp\""),
        "workload[0].rate_control",
        "paced by a rate controller",
    );
    refused(
        &with_workload("[workload.rate_control]\ncc = \"dcqcn\""),
        "workload[0].rate_control",
        "UDP workloads only",
    );
    refused(
        &with_workload("rate = \"1Gbps\""),
        "workload[0].rate",
        "UDP workloads only",
    );
    refused(
        &with_workload(&format!("{PACED}\ng_shift = 0")),
        "workload[0].rate_control.g_shift",
        "1 to 20",
    );
    refused(
        &with_workload(&format!("{PACED}\nmin_rate = \"20Gbps\"")),
        "workload[0].rate_control.min_rate",
        "at most the flow's `rate`",
    );
    refused(
        &with_workload("protocol = \"quic\""),
        "workload[0].protocol",
        "`tcp`, `mptcp` or `udp`",
    );
    // Poisson arrivals without a cdf: refused at the cdf, not at a key for transfers.
    let no_cdf = with_workload(&format!("{PACED}\nretransmit_timeout = \"1ms\"")).replace("cdf = \"websearch\"\n", "");
    refused(&no_cdf, "workload[0].cdf", "need a flow-size `cdf`");
    // Long flows (no cdf) have no size: a timeout for transfers is refused at the workload.
    let once = with_workload(&format!("{PACED}\nretransmit_timeout = \"1ms\""))
        .replace("cdf = \"websearch\"\nload = 0.5", "arrivals = \"once\"");
    refused(
        &once,
        "workload[0].rate_control.retransmit_timeout",
        "applies to a flow with a `size`",
    );
}

#[test]
fn a_tcp_variant_runs_the_paced_transfers_as_tcp_transfers_of_their_sizes_with_tcps_settings() {
    let text = format!(
        "{}\n[[variant]]\nname = \"D\"\nprotocol = \"tcp\"\ncc = \"dctcp\"\n[[variant]]\nname = \"R\"\nprotocol = \"tcp\"\ncc = \"reno\"\n",
        with_workload(PACED)
    );
    let sc = Scenario::from_toml(&text, "t.toml").unwrap();
    let d = sc.with_variant("D").unwrap();
    for (u, t) in sc.flows.iter().zip(&d.flows) {
        assert_eq!(t.protocol, Protocol::Tcp);
        let tcp = t.tcp.as_ref().unwrap();
        assert_eq!(
            tcp.app,
            TcpApp::Transfer {
                size_bytes: u.paced_size_bytes().unwrap()
            }
        );
        assert_eq!(
            (tcp.config.cc, tcp.config.ecn, tcp.config.min_rto_ns),
            (CcKind::Dctcp, true, 2_000_000)
        );
        assert_eq!((t.rate_control, t.paced, t.rate_bps), (None, None, 0));
        assert_eq!(
            (u.src, u.dst, u.start_ps, u.src_port),
            (t.src, t.dst, t.start_ps, t.src_port)
        );
    }
    // The variant's `cc` reaches the flows it made TCP.
    let r = sc.with_variant("R").unwrap();
    assert!(r
        .flows
        .iter()
        .all(|f| f.tcp.as_ref().unwrap().config.cc == CcKind::Reno));
    // An unsized paced flow becomes bulk TCP; a constant-rate one stays UDP.
    let two = format!(
        "{}\n[[flow]]\nname = \"cbr\"\nsrc = \"b\"\ndst = \"a\"\nrate = \"1Gbps\"\n[[variant]]\nname = \"T\"\nprotocol = \"tcp\"\n",
        with_flow("rate = \"9Gbps\"\n[flow.rate_control]\ncc = \"pmqecn\"")
    );
    let t = Scenario::from_toml(&two, "t.toml").unwrap().with_variant("T").unwrap();
    assert_eq!(t.flows[0].tcp.as_ref().unwrap().app, TcpApp::Bulk);
    assert_eq!(
        (t.flows[1].protocol, t.flows[1].rate_bps),
        (Protocol::Udp, 1_000_000_000)
    );
    // Nothing to make TCP: refused at the variant's key.
    let none = format!(
        "{}\n[[variant]]\nname = \"T\"\nprotocol = \"tcp\"\n",
        with_flow("rate = \"9Gbps\"")
    );
    refused(&none, "variant[0].protocol", "no rate-controlled UDP flow");
}
