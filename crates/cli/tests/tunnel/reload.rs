//! SIGHUP reloads a running end's configuration without ending the session: paths removed,
//! added back and given roles while pings cross the tunnel, and a change a reload cannot make
//! refused with the tunnel running on.

use crate::net::{Net, Paths};
use std::time::{Duration, Instant};

/// Data messages end `e` sent on path `n` (None once the path is gone from its metrics).
fn data_on(net: &Net, e: char, n: u32) -> Option<f64> {
    let m = net
        .metrics(e)
        .unwrap_or_else(|| panic!("{e}'s metrics: {}", net.log(e)));
    m.get(&format!("mpsched_tunnel_path_tx_packets_total{{path=\"p{n}\"}}"))
        .copied()
}

/// The pinger of the tests, `count` pings 10 ms apart, started in a; `wait_pings` reads how
/// many were answered.
fn start_pings(net: &Net, count: u32) -> std::process::Child {
    let script = crate::PINGS
        .replace(", 40, set()", &format!(", {count}, set()"))
        .replace("0.25", "0.01");
    assert!(script.contains("0.01"), "{script}");
    net.a.spawn("python3", &["-c", &script]).unwrap()
}

fn wait_pings(child: std::process::Child) -> usize {
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    out.trim().parse().unwrap_or_else(|_| panic!("the pinger said: {out}"))
}

/// Rewrite the configuration of each end in `ends` with `edit`, send each SIGHUP (one right
/// after the other: what the two ends disagree on between them is lost) and wait until their
/// metrics count `reloads` applied and `refused` refused reloads.
fn reload(net: &Net, ends: &[char], edit: impl Fn(char, &str) -> String, reloads: f64, refused: f64) {
    for &e in ends {
        let f = net.dir.join(format!("{e}.toml"));
        let t = std::fs::read_to_string(&f).unwrap();
        std::fs::write(&f, edit(e, &t)).unwrap();
    }
    for &e in ends {
        net.signal(e, libc::SIGHUP);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for &e in ends {
        loop {
            let m = net.metrics(e).unwrap_or_default();
            let got = |k: &str| m.get(k).copied().unwrap_or(-1.0);
            if got("mpsched_tunnel_reloads_total") == reloads && got("mpsched_tunnel_reloads_refused_total") == refused
            {
                break;
            }
            assert!(Instant::now() < deadline, "{e} did not reload: {}", net.log(e));
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Without path `pN` (its table cut out of the file).
fn without(t: &str, n: u32) -> String {
    let start = t.find(&format!("[[path]]\nname = \"p{n}\"")).unwrap();
    let end = t[start + 8..].find("[[path]]").map_or(t.len(), |e| start + 8 + e);
    format!("{}{}", &t[..start], &t[end..])
}

/// Three paths at each end, numbered by `id`, round robin. While 300 pings cross the tunnel,
/// p2 is removed at both ends (SIGHUP): the pings go on over p1 and p3 (at most a few lost,
/// those on p2 between the two ends' reloads), no new session begins, p2 leaves the metrics.
/// Then p2 comes back as a backup: it carries nothing while p1 and p3 do. A reload that asks to
/// change the scheduler is refused, said in the log and counted, and the tunnel runs on.
pub fn sighup_reloads_paths_and_roles_without_a_new_session() {
    let _g = crate::serial();
    let mut net = Net::build(
        "reload",
        &Paths {
            rate: None,
            delay_ms: vec![0, 0, 0],
        },
    );
    net.start_both_edited("rr", "keepalive = \"100ms\"\ndead_after = \"300ms\"", |t| {
        (1..=3).fold(t.to_string(), |t, n| {
            t.replace(
                &format!("name = \"p{n}\"\n"),
                &format!("name = \"p{n}\"\nid = {}\n", n - 1),
            )
        })
    });
    let original: Vec<String> = ['a', 'b']
        .iter()
        .map(|e| std::fs::read_to_string(net.dir.join(format!("{e}.toml"))).unwrap())
        .collect();
    let pinger = start_pings(&net, 300);
    std::thread::sleep(Duration::from_millis(1000));
    reload(&net, &['b', 'a'], |_, t| without(t, 2), 1.0, 0.0);
    let after_removal = [1, 3].map(|n| data_on(&net, 'a', n).unwrap());
    let answered = wait_pings(pinger);
    assert!(
        answered >= 295,
        "{answered} of 300 answered across the reload: {}",
        net.log('a')
    );
    for e in ['a', 'b'] {
        assert_eq!(data_on(&net, e, 2), None, "p2 still in {e}'s metrics");
        assert_eq!(
            net.counter(e, "mpsched_tunnel_peer_restarts_total"),
            0.0,
            "{}",
            net.log(e)
        );
        assert!(net.log(e).contains("path `p2` removed"), "{}", net.log(e));
    }
    for (n, before) in [1, 3].iter().zip(after_removal) {
        assert!(
            data_on(&net, 'a', *n).unwrap() > before + 50.0,
            "p{n} carried the pings after the reload"
        );
    }
    // p2 back, as a backup, at both ends.
    let backup = |e: char, _: &str| {
        let text = &original[usize::from(e == 'b')];
        text.replace("name = \"p2\"\nid = 1\n", "name = \"p2\"\nid = 1\nrole = \"backup\"\n")
    };
    reload(&net, &['b', 'a'], backup, 2.0, 0.0);
    for e in ['a', 'b'] {
        assert!(net.log(e).contains("path `p2` added (id 1)"), "{}", net.log(e));
    }
    std::thread::sleep(Duration::from_millis(500));
    let p2 = data_on(&net, 'a', 2).expect("p2 back in a's metrics");
    let p13 = [1, 3].map(|n| data_on(&net, 'a', n).unwrap());
    assert_eq!(wait_pings(start_pings(&net, 100)), 100);
    assert_eq!(data_on(&net, 'a', 2), Some(p2), "the backup carried data");
    assert!(p13
        .iter()
        .zip([1, 3])
        .all(|(b, n)| data_on(&net, 'a', n).unwrap() >= b + 40.0));
    // What a reload cannot change: refused, the tunnel unchanged.
    reload(
        &net,
        &['a'],
        |_, t| t.replace("scheduler = \"rr\"", "scheduler = \"bond\""),
        2.0,
        1.0,
    );
    let log = net.log('a');
    assert!(
        log.contains("refused, running on unchanged: scheduler cannot change"),
        "{log}"
    );
    assert_eq!(wait_pings(start_pings(&net, 50)), 50);
    for e in ['a', 'b'] {
        assert_eq!(
            net.counter(e, "mpsched_tunnel_peer_restarts_total"),
            0.0,
            "{}",
            net.log(e)
        );
        assert_eq!(net.counter(e, "mpsched_tunnel_sessions_total"), 1.0, "{}", net.log(e));
    }
}
