//! A backup path (`role = "backup"`) and `mpsched tunnel status` on a running pair of ends.

use crate::net::{Net, Paths};
use std::time::Duration;

/// Data messages end `e` sent on path `n`.
fn data_on(net: &Net, e: char, n: u32) -> f64 {
    net.counter(e, &format!("mpsched_tunnel_path_tx_packets_total{{path=\"p{n}\"}}"))
}

/// 100 pings from a to b through the tunnel, 10 ms apart (the tests' own pinger: Debian's
/// ping is not installed): how many were answered.
fn pings(net: &Net) -> usize {
    let script = crate::PINGS
        .replace(", 40, set()", ", 100, set()")
        .replace("0.25", "0.01");
    assert!(script.contains(", 100, set()") && script.contains("0.01"), "{script}");
    let o = net.a.exec("python3", &["-c", &script]).unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    out.trim().parse().unwrap_or_else(|_| panic!("the pinger said: {out}"))
}

/// The fields of `status`'s line for path `p`.
fn status_row(status: &str, p: &str) -> Vec<String> {
    status
        .lines()
        .find(|l| l.split_whitespace().next() == Some(p))
        .unwrap_or_else(|| panic!("no row for {p}: {status}"))
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Path p2 is a backup at both ends: while p1 is up every ping crosses p1 and p2 carries no
/// data (only its acknowledgements and keepalives); with p1's link down the pings cross p2.
/// `mpsched tunnel status` shows the peer's session, both paths up with an RTT and their
/// addresses, then p1 down.
pub fn a_backup_path_carries_data_only_while_the_active_one_is_down_and_status_shows_it() {
    let _g = crate::serial();
    let mut net = Net::build(
        "backup",
        &Paths {
            rate: None,
            delay_ms: vec![0, 0],
        },
    );
    net.start_both_edited("bond", "keepalive = \"100ms\"\ndead_after = \"300ms\"", |t| {
        t.replace("name = \"p2\"\n", "name = \"p2\"\nrole = \"backup\"\n")
    });
    let before = (data_on(&net, 'a', 2), data_on(&net, 'b', 2));
    assert_eq!(pings(&net), 100);
    assert!(data_on(&net, 'a', 1) >= 100.0 && data_on(&net, 'b', 1) >= 100.0);
    assert_eq!(
        (data_on(&net, 'a', 2), data_on(&net, 'b', 2)),
        before,
        "the backup carried data"
    );
    let s = net.status('a');
    eprintln!("{s}");
    assert!(s.starts_with("mpsched tunnel at 127.0.0.1:"), "{s}");
    assert!(s.contains("initiator, scheduler bond, device mpt0"), "{s}");
    assert!(s.contains("peer: session heard for"), "{s}");
    for (p, remote) in [("p1", "192.168.1.2:4789"), ("p2", "192.168.2.2:4789")] {
        let row = status_row(&s, p);
        assert_eq!(row[1], "up", "{s}");
        assert_eq!(row[4], remote, "{s}");
        assert!(row[5].parse::<f64>().is_ok_and(|ms| ms > 0.0), "an RTT: {s}");
    }
    let o = net.b.ip(&["link", "set", "b1", "down"]).unwrap();
    assert!(o.status.success());
    std::thread::sleep(Duration::from_millis(800));
    let answered = pings(&net);
    assert!(answered >= 95, "{answered} of 100 over the backup: {}", net.log('a'));
    assert!(data_on(&net, 'a', 2) >= before.0 + 95.0, "a sent on p2");
    assert!(data_on(&net, 'b', 2) >= before.1 + 95.0, "b answered on p2");
    let s = net.status('a');
    eprintln!("{s}");
    assert_eq!(status_row(&s, "p1")[1], "down", "{s}");
    assert_eq!(status_row(&s, "p2")[1], "up", "{s}");
}
