//! Two namespaces joined by two paths, a tunnel daemon at each end, and what the tests read
//! from them: counters over the metrics port, the daemons' logs, traffic through the tunnel.
//!
//! Each path is a veth pair (192.168.P.0/24), optionally rate-limited by tbf on both ends. This
//! kernel has no netem, so where a test wants propagation delay a third namespace sits in the
//! middle of each path and a **delay line** relays the tunnel's datagrams: a user-space UDP
//! relay (as Mahimahi's `mm-delay` is a user-space delay shell) that holds every datagram a
//! fixed time per direction. The daemons see a path with that delay; their datagrams are real
//! packets through real sockets, only the propagation is emulated.

use mpsched_netns::ns::Netns;
use std::collections::{BTreeMap, VecDeque};
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The daemons' UDP port and metrics address.
pub const PORT: u16 = 4789;
const METRICS: &str = "127.0.0.1:9120";
/// The tunnel's addresses at a and b.
pub const A_TUN: &str = "10.99.0.1";
/// The tunnel's address at b.
pub const B_TUN: &str = "10.99.0.2";

/// How the paths are built.
#[derive(Clone, Debug)]
pub struct Paths {
    /// tbf rate on each path's veth ends (`40mbit`, or one per path: `40mbit,20mbit`), or none.
    pub rate: Option<&'static str>,
    /// One-way delay per path, ms (a delay line in the middle when any is non-zero).
    pub delay_ms: Vec<u64>,
}

impl Paths {
    /// The tbf rate of path `i` (0-based): `rate`, which may list one per path
    /// (`40mbit,20mbit`).
    fn rate_of(&self, i: usize) -> Option<&'static str> {
        let r = self.rate?;
        let rates: Vec<&'static str> = r.split(',').collect();
        Some(rates.get(i).copied().unwrap_or(rates[rates.len() - 1]))
    }
}

/// The test network: namespaces a, b (and m for delay lines), daemons, scratch folder.
pub struct Net {
    pub a: Netns,
    pub b: Netns,
    m: Option<Netns>,
    pub dir: PathBuf,
    pub daemons: Vec<(String, Child)>,
    relays_stop: Arc<AtomicBool>,
    pub paths: usize,
    /// The daemons' `transport` (`udp` unless a test sets it before starting them).
    pub transport: &'static str,
}

impl Drop for Net {
    fn drop(&mut self) {
        self.relays_stop.store(true, Ordering::Relaxed);
        for (_, c) in &mut self.daemons {
            let _ = c.kill();
            let _ = c.wait();
        }
        // The daemons' configurations, key and logs (a failing test has printed what it needs).
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ns_name(tag: &str, node: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("mps-{}x{tag}{:04x}-{node}", std::process::id(), nanos & 0xffff)
}

fn sh(ns: &Netns, args: &[&str]) {
    let out = ns
        .ip(args)
        .unwrap_or_else(|e| panic!("ip {args:?} in {}: {e}", ns.name()));
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn veth(x: &Netns, xname: &str, xaddr: &str, y: &Netns, yname: &str, yaddr: &str, rate: Option<&str>) {
    let out = Command::new("ip")
        .args([
            "link",
            "add",
            xname,
            "netns",
            x.name(),
            "type",
            "veth",
            "peer",
            "name",
            yname,
            "netns",
            y.name(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "veth: {}", String::from_utf8_lossy(&out.stderr));
    for (ns, name, addr) in [(x, xname, xaddr), (y, yname, yaddr)] {
        sh(ns, &["addr", "add", addr, "dev", name]);
        sh(ns, &["link", "set", name, "up"]);
        ns.frames_as_on_the_wire(name, false);
        if let Some(r) = rate {
            let out = ns
                .exec(
                    "tc",
                    &[
                        "qdisc", "add", "dev", name, "root", "tbf", "rate", r, "burst", "32kb", "latency", "100ms",
                    ],
                )
                .unwrap();
            assert!(out.status.success(), "tbf: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

impl Net {
    /// Namespaces and paths; no daemons yet.
    pub fn build(tag: &str, p: &Paths) -> Net {
        let a = Netns::create(&ns_name(tag, "a")).unwrap();
        let b = Netns::create(&ns_name(tag, "b")).unwrap();
        let delayed = p.delay_ms.iter().any(|&d| d > 0);
        let m = delayed.then(|| Netns::create(&ns_name(tag, "m")).unwrap());
        let dir = std::env::temp_dir().join(format!("mpsched-tunnel-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        for (i, &delay) in p.delay_ms.iter().enumerate() {
            let n = i + 1;
            match &m {
                None => veth(
                    &a,
                    &format!("a{n}"),
                    &format!("192.168.{n}.1/24"),
                    &b,
                    &format!("b{n}"),
                    &format!("192.168.{n}.2/24"),
                    p.rate_of(i),
                ),
                Some(m) => {
                    veth(
                        &a,
                        &format!("a{n}"),
                        &format!("192.168.{n}.1/24"),
                        m,
                        &format!("ma{n}"),
                        &format!("192.168.{n}.254/24"),
                        p.rate_of(i),
                    );
                    veth(
                        m,
                        &format!("mb{n}"),
                        &format!("192.168.{}.254/24", 10 + n),
                        &b,
                        &format!("b{n}"),
                        &format!("192.168.{}.2/24", 10 + n),
                        p.rate_of(i),
                    );
                    let to_a: SocketAddr = format!("192.168.{n}.254:{PORT}").parse().unwrap();
                    let to_b: SocketAddr = format!("192.168.{}.254:{}", 10 + n, PORT + 1).parse().unwrap();
                    let b_addr: SocketAddr = format!("192.168.{}.2:{PORT}", 10 + n).parse().unwrap();
                    delay_line(m, to_a, to_b, b_addr, Duration::from_millis(delay), &stop);
                }
            }
        }
        let net = Net {
            a,
            b,
            m,
            dir,
            daemons: Vec::new(),
            relays_stop: stop,
            paths: p.delay_ms.len(),
            transport: "udp",
        };
        std::fs::write(
            net.dir.join("key"),
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(net.dir.join("key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        net
    }

    /// The configuration of end `a` (initiator) or `b` (responder), with `extra` top-level
    /// lines and `timing` lines.
    pub fn config(&self, end: char, scheduler: &str, timing: &str) -> PathBuf {
        let (role, addr) = if end == 'a' {
            ("initiator", A_TUN)
        } else {
            ("responder", B_TUN)
        };
        let mut t = format!(
            "role = \"{role}\"\nkey_file = \"key\"\nscheduler = \"{scheduler}\"\nmetrics = \"{METRICS}\"\n\
             transport = \"{}\"\n\
             [device]\nname = \"mpt0\"\naddress = \"{addr}/30\"\n[timing]\n{timing}\n",
            self.transport
        );
        for n in 1..=self.paths {
            let delayed = self.m.is_some();
            let (local, remote) = match (end, delayed) {
                ('a', false) => (format!("192.168.{n}.1:{PORT}"), Some(format!("192.168.{n}.2:{PORT}"))),
                ('a', true) => (format!("192.168.{n}.1:{PORT}"), Some(format!("192.168.{n}.254:{PORT}"))),
                (_, false) => (format!("192.168.{n}.2:{PORT}"), None),
                (_, true) => (format!("192.168.{}.2:{PORT}", 10 + n), None),
            };
            t += &format!("[[path]]\nname = \"p{n}\"\nlocal = \"{local}\"\n");
            if let Some(r) = remote {
                t += &format!("remote = \"{r}\"\n");
            }
        }
        let f = self.dir.join(format!("{end}.toml"));
        std::fs::write(&f, t).unwrap();
        f
    }

    fn ns(&self, end: char) -> &Netns {
        if end == 'a' {
            &self.a
        } else {
            &self.b
        }
    }

    /// Start the daemon of `end` with configuration `cfg`; its stdout and stderr go to
    /// `DIR/END.out`, `DIR/END.err`.
    pub fn start(&mut self, end: char, cfg: &PathBuf) {
        let out = std::fs::File::create(self.dir.join(format!("{end}.out"))).unwrap();
        let err = std::fs::File::create(self.dir.join(format!("{end}.err"))).unwrap();
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                self.ns(end).name(),
                env!("CARGO_BIN_EXE_mpsched"),
                "tunnel",
            ])
            .arg(cfg)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap();
        self.daemons.push((end.to_string(), child));
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.metrics(end).is_none() {
            assert!(
                Instant::now() < deadline,
                "the daemon of {end} did not start: {}",
                self.log(end)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Both ends with `scheduler` and `timing`, and wait for every path to be up both ways.
    pub fn start_both(&mut self, scheduler: &str, timing: &str) {
        self.start_both_edited(scheduler, timing, |t| t.to_string());
    }

    /// As [`Net::start_both`], each end's configuration text passed through `edit` first.
    pub fn start_both_edited(&mut self, scheduler: &str, timing: &str, edit: fn(&str) -> String) {
        let (ca, cb) = (self.config('a', scheduler, timing), self.config('b', scheduler, timing));
        for c in [&ca, &cb] {
            let t = std::fs::read_to_string(c).unwrap();
            std::fs::write(c, edit(&t)).unwrap();
        }
        self.start('b', &cb);
        self.start('a', &ca);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let up = |e| {
                let m = self.metrics(e).unwrap_or_default();
                (1..=self.paths).all(|n| {
                    m.get(&format!("mpsched_tunnel_path_srtt_seconds{{path=\"p{n}\"}}"))
                        .is_some_and(|&v| v > 0.0)
                })
            };
            if up('a') && up('b') {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "paths not up: {}\n{}",
                self.log('a'),
                self.log('b')
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What `mpsched tunnel status` prints for `end` (its configuration in the test's folder).
    pub fn status(&self, end: char) -> String {
        let o = self
            .ns(end)
            .exec(
                env!("CARGO_BIN_EXE_mpsched"),
                &[
                    "tunnel",
                    "status",
                    &self.dir.join(format!("{end}.toml")).to_string_lossy(),
                ],
            )
            .unwrap();
        assert!(o.status.success(), "status: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Send signal `sig` to the daemon of `end` (`ip netns exec` runs it in its own process).
    pub fn signal(&self, end: char, sig: i32) {
        let (_, child) = self
            .daemons
            .iter()
            .rev()
            .find(|(e, _)| e.starts_with(end))
            .unwrap_or_else(|| panic!("no daemon of {end}"));
        // SAFETY: kill(2) on a child not yet waited for, so its pid is not reused.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
    }

    /// The daemon's stderr so far.
    pub fn log(&self, end: char) -> String {
        std::fs::read_to_string(self.dir.join(format!("{end}.err"))).unwrap_or_default()
    }

    /// The daemon's counters (None while it does not answer).
    pub fn metrics(&self, end: char) -> Option<BTreeMap<String, f64>> {
        mpsched_netns::backend::tunnel_counters(self.ns(end), METRICS)
    }

    /// One counter of `end`.
    pub fn counter(&self, end: char, key: &str) -> f64 {
        let m = self
            .metrics(end)
            .unwrap_or_else(|| panic!("{end}'s metrics: {}", self.log(end)));
        *m.get(key).unwrap_or_else(|| panic!("no {key} in {m:?}"))
    }

    /// Run iperf3 through the tunnel from a to b for `secs` seconds; the receiver's goodput,
    /// bit/s.
    pub fn iperf(&self, secs: u32) -> f64 {
        self.iperf_flows(secs, 1)
    }

    /// As [`Net::iperf`] with `flows` parallel TCP connections (`iperf3 -P`): their sum.
    pub fn iperf_flows(&self, secs: u32, flows: u32) -> f64 {
        let mut server = self.b.spawn("iperf3", &["-s", "-1", "-B", B_TUN, "-J"]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let out = self
            .a
            .exec(
                "iperf3",
                &["-c", B_TUN, "-t", &secs.to_string(), "-P", &flows.to_string(), "-J"],
            )
            .unwrap();
        let _ = server.kill();
        let _ = server.wait();
        let j: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("iperf3: {}", String::from_utf8_lossy(&out.stdout)));
        let cwnd_max = j["intervals"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|i| i["streams"].as_array().into_iter().flatten())
            .filter_map(|s| s["snd_cwnd"].as_f64())
            .fold(0.0, f64::max);
        let rtt = &j["end"]["streams"][0]["sender"];
        eprintln!(
            "iperf3 -P {flows}: {} retransmits, largest congestion window {:.0} KB, first flow's RTT min {} mean {} max {} us",
            j["end"]["sum_sent"]["retransmits"],
            cwnd_max / 1e3,
            rtt["min_rtt"],
            rtt["mean_rtt"],
            rtt["max_rtt"]
        );
        j["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap_or_else(|| panic!("iperf3 gave no goodput: {j}"))
    }
}

/// Where a direction of a delay line sends: a fixed address (b's daemon), or wherever a's
/// daemon last sent from.
#[derive(Clone)]
enum Dest {
    Fixed(SocketAddr),
    LearnedA(Arc<Mutex<Option<SocketAddr>>>),
}

/// A delay line in namespace `m`: datagrams to `to_a` (from a's daemon) leave from `to_b`'s
/// socket for `b_addr` after `delay`; datagrams to `to_b` (from b) go back to the last address a
/// sent from, after `delay`. Threads end when `stop` is set.
fn delay_line(
    m: &Netns,
    to_a: SocketAddr,
    to_b: SocketAddr,
    b_addr: SocketAddr,
    delay: Duration,
    stop: &Arc<AtomicBool>,
) {
    let (sa, sb) = m
        .enter(|| (UdpSocket::bind(to_a).unwrap(), UdpSocket::bind(to_b).unwrap()))
        .unwrap();
    let a_peer = Arc::new(Mutex::new(None));
    let (sa, sb) = (Arc::new(sa), Arc::new(sb));
    direction(
        Arc::clone(&sa),
        Arc::clone(&sb),
        delay,
        stop,
        Some(Arc::clone(&a_peer)),
        Dest::Fixed(b_addr),
    );
    direction(sb, sa, delay, stop, None, Dest::LearnedA(a_peer));
}

/// One direction of a delay line: a thread receiving on `rx` (noting the sender in `learn`),
/// a thread sending each datagram on `tx` to `dest` once it is `delay` old.
fn direction(
    rx: Arc<UdpSocket>,
    tx: Arc<UdpSocket>,
    delay: Duration,
    stop: &Arc<AtomicBool>,
    learn: Option<Arc<Mutex<Option<SocketAddr>>>>,
    dest: Dest,
) {
    type Queue = (Mutex<VecDeque<(Instant, Vec<u8>)>>, Condvar);
    let queue: Arc<Queue> = Arc::new((Mutex::new(VecDeque::new()), Condvar::new()));
    rx.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let (q, s) = (Arc::clone(&queue), Arc::clone(stop));
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        while !s.load(Ordering::Relaxed) {
            let Ok((n, from)) = rx.recv_from(&mut buf) else {
                continue;
            };
            if let Some(l) = &learn {
                *l.lock().unwrap() = Some(from);
            }
            q.0.lock()
                .unwrap()
                .push_back((Instant::now() + delay, buf[..n].to_vec()));
            q.1.notify_one();
        }
    });
    let s = Arc::clone(stop);
    std::thread::spawn(move || {
        let (lock, cv) = &*queue;
        while !s.load(Ordering::Relaxed) {
            let mut g = lock.lock().unwrap();
            if g.is_empty() {
                let _ = cv.wait_timeout(g, Duration::from_millis(100)).unwrap();
                continue;
            }
            let (due, _) = g[0];
            let now = Instant::now();
            if due > now {
                drop(g);
                std::thread::sleep(due - now);
                continue;
            }
            let Some((_, d)) = g.pop_front() else { continue };
            drop(g);
            let to = match &dest {
                Dest::Fixed(a) => Some(*a),
                Dest::LearnedA(l) => *l.lock().unwrap(),
            };
            if let Some(to) = to {
                let _ = tx.send_to(&d, to);
            }
        }
    });
}
