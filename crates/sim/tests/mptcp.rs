//! MPTCP in the simulator (issue #12): two subflows aggregate two disjoint paths, the coupled
//! controllers keep RFC 6356's goals on a shared bottleneck, and a seed fixes a run to the byte.

use mpsched_scenario::results::{FlowFigures, RunFigures};
use mpsched_scenario::Scenario;
use mpsched_sim::{SimOptions, Simulation};

mod common;
use common::{builtin, capture, run};

fn flow<'a>(r: &'a RunFigures, name: &str) -> &'a FlowFigures {
    r.flows.iter().find(|f| f.id == name).unwrap()
}

/// Two subflows, each leaving by its own interface over its own 100 Mbit/s path, deliver about
/// twice what one TCP connection gets over one of the paths, with every controller; each
/// subflow carries a fair part.
#[test]
fn two_subflows_over_disjoint_paths_aggregate_both() {
    let (path, text) = mpsched_scenario::builtin::find("mptcp/two-paths").unwrap();
    let single = text
        .replace("protocol = \"mptcp\"", "protocol = \"tcp\"")
        .replace("mptcp.subflows = 2\n", "");
    let single = &single[..single.find("[[variant]]").unwrap()];
    let tcp_sc = Scenario::from_toml(single, path)
        .unwrap()
        .scaled_to((60.0 * 1e12) as u64);
    let tcp = flow(&run(&tcp_sc, &SimOptions::with_seed(1)), "mp").delivered_mbps;
    for variant in ["cubic", "reno", "lia", "olia"] {
        let sc = builtin("mptcp/two-paths")
            .with_variant(variant)
            .unwrap()
            .scaled_to((60.0 * 1e12) as u64);
        let r = run(&sc, &SimOptions::with_seed(1));
        let mp = flow(&r, "mp");
        let t = mp.tcp.as_ref().unwrap();
        assert!(
            mp.delivered_mbps > 1.8 * tcp,
            "{variant}: MPTCP {} Mbit/s against one path's TCP {tcp}",
            mp.delivered_mbps
        );
        assert_eq!(t.subflows.len(), 2, "{variant}");
        for s in &t.subflows {
            assert!(s.acked_mbps > 0.4 * mp.delivered_mbps, "{variant}: {s:?}");
        }
        assert!(t.subflows[0].id.starts_with("10.1.0.2:") && t.subflows[1].id.starts_with("10.2.0.2:"));
    }
}

/// RFC 6356's goals against one NewReno flow on one bottleneck: coupled (LIA, OLIA), the MPTCP
/// connection takes about one share; uncoupled, about two.
#[test]
fn coupled_subflows_take_one_share_of_a_shared_bottleneck_and_uncoupled_two() {
    for (variant, lo, hi) in [("lia", 0.8, 1.3), ("olia", 0.8, 1.3), ("uncoupled", 1.6, 2.5)] {
        let sc = builtin("mptcp/shared-bottleneck").with_variant(variant).unwrap();
        let r = run(&sc, &SimOptions::with_seed(1));
        let ratio = flow(&r, "mptcp").delivered_mbps / flow(&r, "tcp").delivered_mbps;
        assert!(
            (lo..=hi).contains(&ratio),
            "{variant}: MPTCP / TCP = {ratio:.2}, expected {lo}-{hi}"
        );
    }
}

/// The same seed gives the same figures and the same capture to the byte; another seed other
/// keys (so other tokens and data sequence numbers on the wire).
#[test]
fn a_seed_fixes_an_mptcp_run_to_the_byte() {
    let dir = std::env::temp_dir().join(format!("mpsched-mptcp-seed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sc = builtin("mptcp/two-paths")
        .with_variant("lia")
        .unwrap()
        .scaled_to((2.0 * 1e12) as u64);
    let (a, pa) = capture(&sc, &dir, 1);
    let (b, pb) = capture(&sc, &dir, 1);
    let (_, pc) = capture(&sc, &dir, 2);
    let seedless = |mut r: RunFigures| {
        r.seed = 0;
        r
    };
    assert_eq!(seedless(a), seedless(b));
    assert!(pa == pb, "two runs with seed 1 wrote different captures");
    assert!(pa != pc, "seeds 1 and 2 wrote the same capture");
    std::fs::remove_dir_all(&dir).ok();
}

/// A path fails under a subflow: its retransmissions time out, the data it held is sent again on
/// the other subflow (RFC 8684 3.3.6), and the connection goes on at the surviving path's rate
/// instead of stalling behind the lost data.
#[test]
fn a_subflow_whose_path_fails_hands_its_data_to_the_other() {
    let (path, text) = mpsched_scenario::builtin::find("mptcp/two-paths").unwrap();
    let failed = text.replace("[[flow]]", "[[failure]]\nlink = \"path2\"\nat = \"3s\"\n\n[[flow]]");
    let sc = Scenario::from_toml(&failed, path).unwrap().with_variant("lia").unwrap();
    let out = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap().run().unwrap();
    let col = out.series.columns.iter().position(|c| c == "mp_mbps").unwrap();
    // The subflow is stale after four timeouts (0.2 + 0.4 + 0.8 + 1.6 s); seconds 7 to 10 are
    // on the one path left. (Without reinjection the connection stalls for good.)
    let late: Vec<f64> = out.series.rows.iter().filter(|r| r[0] > 7.0).map(|r| r[col]).collect();
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    assert!(
        mean > 80.0,
        "after path2 failed the connection delivers {mean:.1} Mbit/s (one path: about 94)"
    );
    let t = flow(&out.figures, "mp").tcp.as_ref().unwrap();
    assert!(
        t.subflows[1].rtos.unwrap_or(0) > 0,
        "path2's subflow timed out: {:?}",
        t.subflows
    );
    let m = t.mptcp.as_ref().unwrap();
    assert!(m.reinjected_mappings > 0 && m.refused_segments == 0, "{m:?}");
}

/// What a switch program saw of MPTCP options.
#[derive(Default)]
struct Seen {
    server_key: Option<u64>,
    join_tokens: Vec<u32>,
    mappings: u64,
}

/// A router for `mptcp/two-paths`'s `r3` that reads every segment's MPTCP option as MP-HULA's
/// switches must: the server's key off MP_CAPABLE, the tokens off MP_JOIN SYNs, DSS mappings.
struct OptionReader(std::sync::Arc<std::sync::Mutex<Seen>>);

/// Exposes nothing to a control plane.
impl mpsched_core::control::ProgramControl for OptionReader {}

impl mpsched_core::program::Program for OptionReader {
    fn parses_mptcp(&self) -> bool {
        true
    }

    fn ingress(
        &mut self,
        pkt: &mut mpsched_core::packet::PacketMeta,
        ctx: &mut mpsched_core::program::Ctx,
    ) -> mpsched_core::program::Verdict {
        use mpsched_core::mptcp::MptcpOption;
        let mut seen = self.0.lock().unwrap();
        match ctx.mptcp_option() {
            // The SYN/ACK carries the server's key alone.
            Some(MptcpOption::Capable {
                sender_key: Some(k),
                receiver_key: None,
                ..
            }) if pkt.src_port == 5201 => seen.server_key = Some(*k),
            Some(MptcpOption::JoinSyn { receiver_token, .. }) => seen.join_tokens.push(*receiver_token),
            Some(MptcpOption::Dss { mapping: Some(_), .. }) => seen.mappings += 1,
            _ => {}
        }
        // r3's ports: eth0 to r1 (path1), eth1 to r2 (path2), eth2 to the server.
        let port = match std::net::Ipv4Addr::from(pkt.dst_ip).octets() {
            [10, 1, ..] => 0,
            [10, 2, ..] => 1,
            _ => 2,
        };
        mpsched_core::program::Verdict::Forward(port)
    }
}

/// A switch program is handed each segment's MPTCP option: on the path's last switch it reads
/// the server's key, finds that every MP_JOIN names the token derived from it, and sees the
/// mappings, while routing the connection as the control plane's tables do (the same figures).
#[test]
fn a_switch_program_reads_the_options_of_simulated_segments() {
    let sc = builtin("mptcp/two-paths")
        .with_variant("lia")
        .unwrap()
        .scaled_to(2_000_000_000_000);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Seen::default()));
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
    sim.install_program("r3", Box::new(OptionReader(seen.clone()))).unwrap();
    let r = sim.run().unwrap().figures;
    let plain = run(&sc, &SimOptions::with_seed(1));
    assert_eq!(
        flow(&r, "mp"),
        flow(&plain, "mp"),
        "routed as the control plane's tables do"
    );
    let seen = seen.lock().unwrap();
    let key = seen.server_key.expect("the server's key on its SYN/ACK");
    let token = mpsched_core::mptcp::token(mpsched_core::mptcp::MptcpVersion::V1, key);
    assert_eq!(seen.join_tokens, vec![token], "one MP_JOIN, naming the server's token");
    assert!(seen.mappings > 1000, "{} mappings", seen.mappings);
}

/// The time series' `<flow>_retx` of an MPTCP flow counts every subflow's retransmissions, as
/// its figures do, not the first subflow's alone: over two lossy paths its sum exceeds what the
/// first subflow retransmitted in the whole run.
#[test]
fn an_mptcp_flows_retransmission_series_counts_every_subflow() {
    let sc = builtin("mptcp/two-paths").with_variant("lia").unwrap();
    let out = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap().run().unwrap();
    let col = out.series.columns.iter().position(|c| c == "mp_retx").unwrap();
    let series: f64 = out.series.rows.iter().map(|r| r[col]).sum();
    let t = flow(&out.figures, "mp").tcp.as_ref().unwrap();
    let first = t.subflows[0].retransmitted_segments as f64;
    assert!(
        t.subflows[1].retransmitted_segments > 0 && series > first,
        "series {series} against the first subflow's {first} ({:?})",
        t.subflows
    );
    assert!(series <= t.retransmitted_segments.unwrap() as f64);
}
