//! Tunnels that end at hosts, many per node (issue #31): a gateway switch ends one two-path
//! tunnel per user device, each device a host with two links; traffic both ways is delivered.

use mpsched_scenario::results::RunFigures;
use mpsched_scenario::Scenario;
use mpsched_sim::{SimOptions, Simulation};

/// `hosts` devices `ue<i>`, each linked to access switches `acc0` and `acc1`, which link to the
/// gateway `upf`; a server `srv` behind it. Tunnel `t<i>` from `upf` to `ue<i>` over
/// `upf - acc0 - ue<i>` and `upf - acc1 - ue<i>`. A 1 Mbit/s UDP download to every device;
/// a TCP upload from `ue0` to the server (its data enters the tunnel at the host, its ACKs at the
/// gateway).
fn gateway(hosts: usize, transport: &str) -> String {
    let mut t = String::from(
        "[scenario]\nname = \"gw\"\nduration = \"2s\"\nsample_interval = \"1s\"\n\
         [[node]]\nname = \"srv\"\nkind = \"host\"\n\
         [[node]]\nname = \"upf\"\nkind = \"switch\"\n\
         [[node]]\nname = \"acc0\"\nkind = \"switch\"\n\
         [[node]]\nname = \"acc1\"\nkind = \"switch\"\n",
    );
    for i in 0..hosts {
        t.push_str(&format!("[[node]]\nname = \"ue{i}\"\nkind = \"host\"\n"));
    }
    for (a, b) in [("srv", "upf"), ("upf", "acc0"), ("upf", "acc1")] {
        t.push_str(&format!(
            "[[link]]\na = \"{a}\"\nb = \"{b}\"\nrate = \"1Gbps\"\ndelay = \"1ms\"\n"
        ));
    }
    for i in 0..hosts {
        t.push_str(&format!(
            "[[link]]\na = \"ue{i}\"\nb = \"acc0\"\nrate = \"10Mbps\"\ndelay = \"5ms\"\n\
             [[link]]\na = \"ue{i}\"\nb = \"acc1\"\nrate = \"20Mbps\"\ndelay = \"10ms\"\n\
             [[path]]\nname = \"p{i}a\"\nnodes = [\"upf\", \"acc0\", \"ue{i}\"]\n\
             [[path]]\nname = \"p{i}b\"\nnodes = [\"upf\", \"acc1\", \"ue{i}\"]\n\
             [[tunnel]]\nname = \"t{i}\"\nentry = \"upf\"\nexit = \"ue{i}\"\nsubtunnels = [\"p{i}a\", \"p{i}b\"]\n\
             scheduler = \"rr\"\ntransport = \"{transport}\"\nflow_table_entries = 16\n\
             [[flow]]\nname = \"d{i}\"\nsrc = \"srv\"\ndst = \"ue{i}\"\nrate = \"1Mbps\"\nstart = \"0.1s\"\nstop = \"1.5s\"\n"
        ));
    }
    t.push_str(
        "[[flow]]\nname = \"up\"\nsrc = \"ue0\"\ndst = \"srv\"\nprotocol = \"tcp\"\nsize = \"200KB\"\nstart = \"0.2s\"\nstop = \"1.8s\"\n",
    );
    t
}

fn run(text: &str) -> RunFigures {
    let sc = Scenario::from_toml(text, "gw.toml").unwrap();
    Simulation::new(&sc, &SimOptions::with_seed(1))
        .unwrap()
        .run()
        .unwrap()
        .figures
}

#[test]
fn fifty_host_ended_tunnels_at_one_switch_deliver_both_ways() {
    for transport in ["udp", "tcp"] {
        let r = run(&gateway(50, transport));
        for i in 0..50 {
            let f = r.flows.iter().find(|f| f.id == format!("d{i}")).unwrap();
            assert!(
                f.delivered_mbps > 0.95,
                "{transport}: d{i} delivered {} Mbit/s",
                f.delivered_mbps
            );
            let down = r.tunnels.iter().find(|t| t.id == format!("t{i}.down")).unwrap();
            assert!(
                down.scheduled_pkts > 100,
                "{transport}: t{i} carried {}",
                down.scheduled_pkts
            );
            assert_eq!(down.forwarded_pkts, down.scheduled_pkts, "{transport}: t{i} lost none");
            assert!(
                down.per_subtunnel_pkts.values().all(|&n| n > 40),
                "{transport}: t{i} used both paths: {:?}",
                down.per_subtunnel_pkts
            );
        }
        // The upload entered ue0's tunnel at the host and arrived whole.
        let up = r.flows.iter().find(|f| f.id == "up").unwrap();
        assert!(
            up.delivered_pkts > 100,
            "{transport}: upload delivered {}",
            up.delivered_pkts
        );
        let t0 = r.tunnels.iter().find(|t| t.id == "t0.up").unwrap();
        assert!(t0.scheduled_pkts >= up.delivered_pkts, "{transport}: {t0:?}");
        let t1 = r.tunnels.iter().find(|t| t.id == "t1.up").unwrap();
        assert_eq!(t1.scheduled_pkts, 0, "{transport}: ue1 sent nothing");
    }
}

#[test]
fn a_node_ending_several_tunnels_must_have_hosts_at_their_far_ends() {
    let mut text = gateway(2, "udp")
        .replace("exit = \"ue1\"", "exit = \"acc1\"")
        .replace("subtunnels = [\"p1a\", \"p1b\"]", "subtunnels = [\"q\"]");
    text.push_str("[[path]]\nname = \"q\"\nnodes = [\"upf\", \"acc1\"]\n");
    let e = Scenario::from_toml(&text, "gw.toml").unwrap_err();
    assert!(e.message.contains("ends several tunnels"), "{e}");
    let twice = gateway(1, "udp").replace(
        "[[flow]]\nname = \"d0\"",
        "[[tunnel]]\nname = \"again\"\nentry = \"upf\"\nexit = \"ue0\"\nsubtunnels = [\"p0a\"]\nscheduler = \"rr\"\ntransport = \"udp\"\n[[flow]]\nname = \"d0\"",
    );
    let e = Scenario::from_toml(&twice, "gw.toml").unwrap_err();
    assert!(e.message.contains("a second tunnel between"), "{e}");
}

#[test]
fn ten_thousand_host_ended_tunnels_validate_route_in_linear_memory_and_run() {
    // Each download a packet or two (100 kbit/s for 0.1 s), so that the run is short in debug;
    // all start at once, so the links between the server and the access switches are fast and
    // their queues hold them all.
    let text = gateway(10_000, "udp")
        .replace(
            "rate = \"1Gbps\"\ndelay = \"1ms\"",
            "rate = \"100Gbps\"\ndelay = \"1ms\"\nqueue_pkts = 20000",
        )
        .replace(
            "rate = \"1Mbps\"\nstart = \"0.1s\"\nstop = \"1.5s\"",
            "rate = \"100kbps\"\nstart = \"0.1s\"\nstop = \"0.2s\"",
        )
        .replace("duration = \"2s\"", "duration = \"500ms\"")
        .replace(
            "size = \"200KB\"\nstart = \"0.2s\"\nstop = \"1.8s\"",
            "size = \"20KB\"\nstart = \"0.1s\"\nstop = \"0.4s\"",
        );
    let sc = Scenario::from_toml(&text, "gw.toml").unwrap();
    assert_eq!(sc.tunnels.len(), 10_000);
    // Routes: three switches and two classes of hosts (the server; the devices, all on the same
    // two access switches) share columns of 4 bytes a node, where a table of every pair of
    // nodes would take 4 n^2 bytes (400 MB).
    let g = mpsched_topo::Graph::new(&sc.nodes, &sc.links);
    let bytes = mpsched_topo::Routes::shortest(&g).table_bytes();
    let n = sc.nodes.len();
    assert!(
        bytes <= n * (6 * 4 + 12) + 2 * sc.links.len() * 8,
        "{bytes} bytes of routes for {n} nodes"
    );
    assert!(bytes * 500 < 4 * n * n, "{bytes} bytes against {} dense", 4 * n * n);
    let r = Simulation::new(&sc, &SimOptions::with_seed(1))
        .unwrap()
        .run()
        .unwrap()
        .figures;
    for i in 0..10_000 {
        let f = r.flows.iter().find(|f| f.id == format!("d{i}")).unwrap();
        assert!(f.delivered_pkts > 0, "d{i} delivered nothing");
    }
    let t0 = r.tunnels.iter().find(|t| t.id == "t0.up").unwrap();
    let up = r.flows.iter().find(|f| f.id == "up").unwrap();
    assert!(
        up.delivered_pkts > 10 && t0.scheduled_pkts >= up.delivered_pkts,
        "{up:?} {t0:?}"
    );
}
