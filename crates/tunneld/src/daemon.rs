//! The daemon's event loop: inner packets from the TUN device scheduled onto paths, tunnel
//! datagrams from the paths opened, acknowledged, reordered and written to the TUN device,
//! and the timers (acknowledgements, keepalives, liveness, the reordering timeout).
//!
//! One thread, one `ppoll` over the TUN device and the path sockets, every descriptor
//! non-blocking, every read a batch; a second thread only answers metrics requests from a
//! snapshot the loop refreshes every [`SNAPSHOT_NS`], so a slow client never stalls packets. The protocol lives in `mpsched-tunnel`
//! (state machines without I/O): this file only moves bytes and reads the clock.

use crate::admission::Throttle;
use crate::config::{Config, PathSpec, Role, Transport};
use crate::inner::flow_of;
use crate::metrics::MetricsServer;
use crate::stream::{FirstRecord, Record, StreamPath, StreamStats};
use crate::tun::Tun;
use mpsched_core::tunnel::{SubtunnelView, TunnelScheduler};
use mpsched_core::MAX_PATHS;
use mpsched_programs::tunnel::tunnel_scheduler;
use mpsched_tunnel::equalize::DelayEqualizer;
use mpsched_tunnel::path::{PathReceiver, PathSender};
use mpsched_tunnel::reorder::ReorderBuffer;
use mpsched_tunnel::seal::{self, Keys, Opener, Sealer};
use mpsched_tunnel::wire::{extend_seq, Ack, DataHeader, Keepalive, Message, KIND_ACK, KIND_DATA, KIND_KEEPALIVE};
use mpsched_tunnel::TunnelExit;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Most packets read from one descriptor before the others get a turn.
const BATCH: usize = 64;
/// Longest the loop sleeps without looking at its timers, ns.
const MAX_SLEEP_NS: u64 = 100_000_000;
/// Packet buffers kept for reuse.
const POOL_BUFFERS: usize = 1024;
/// Flows whose arrival order is tracked (the least recently seen forgotten first).
const ORDER_FLOWS: usize = 65_536;
/// How often the metrics snapshot is refreshed, ns.
pub const SNAPSHOT_NS: u64 = 100_000_000;
/// Least time between two warnings of one kind, ns.
const WARN_EVERY_NS: u64 = 10_000_000_000;
/// Lines a path's peer moves may take every [`WARN_EVERY_NS`] (then one line of how many).
const ROAM_LOG_BURST: u32 = 4;
/// Largest inner packet read from the TUN device (an MTU raised after start still fits).
const TUN_READ_BYTES: usize = 65_535;
/// `SIOCOUTQ` (= `TIOCOUTQ`): bytes in a socket's send queue.
const SIOCOUTQ: libc::c_ulong = 0x5411;

/// Counters of one path.
#[derive(Clone, Debug, Default)]
pub struct PathStats {
    /// Data datagrams sent.
    pub tx_data: u64,
    /// Bytes of data datagrams sent.
    pub tx_bytes: u64,
    /// Data datagrams received (authentic).
    pub rx_data: u64,
    /// Bytes of authentic datagrams received.
    pub rx_bytes: u64,
    /// Acknowledgements sent.
    pub acks_sent: u64,
    /// Keepalives sent.
    pub keepalives_sent: u64,
    /// Sends the socket refused (full queue, unreachable network).
    pub send_errors: u64,
    /// Times an authentic datagram came from a new remote address.
    pub remote_changes: u64,
}

/// What carries a path's messages.
#[derive(Debug)]
enum Carrier {
    /// A UDP socket.
    Datagram(UdpSocket),
    /// A TCP connection.
    Stream(Box<StreamPath>),
}

impl Carrier {
    /// What carries path `spec`, and its far end as known now (a TCP path's once connected).
    fn open(cfg: &Config, spec: &PathSpec) -> io::Result<(Carrier, Option<SocketAddr>)> {
        Ok(match cfg.transport {
            Transport::Udp => (Carrier::Datagram(bind_path(spec)?), spec.remote),
            Transport::Tcp => {
                let listen = cfg.role == Role::Responder;
                let s = StreamPath::new(spec, &cfg.tcp, listen, cfg.path_timing.keepalive_ns)?;
                (Carrier::Stream(Box::new(s)), None)
            }
        })
    }
}

/// One path's socket and state.
#[derive(Debug)]
pub struct PathIo {
    /// Its configuration.
    pub spec: PathSpec,
    carrier: Carrier,
    remote: Option<SocketAddr>,
    /// The sending side's state.
    pub tx: PathSender,
    pub(crate) rx: PathReceiver,
    was_up: bool,
    /// The log of the peer's moves (a responder follows the newest authentic packet, and a
    /// copy raced ahead of it from elsewhere moves it too, so anyone on the path could make
    /// one line a packet).
    roam_log: Throttle,
    /// Counters.
    pub stats: PathStats,
}

/// Counters of the daemon as a whole.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// Packets read from the TUN device.
    pub tun_rx: u64,
    /// Packets written to the TUN device.
    pub tun_tx: u64,
    /// Writes to the TUN device that failed.
    pub tun_write_errors: u64,
    /// Packets from the TUN device dropped because no path had a remote address.
    pub no_path_drops: u64,
    /// Packets from the TUN device that were no IP packet.
    pub not_ip: u64,
    /// Authentic datagrams that arrived on another path's socket than they name.
    pub wrong_path: u64,
    /// Authentic datagrams whose message did not decode.
    pub malformed: u64,
    /// Acknowledgements of numbers never sent or older than one taken.
    pub stale_acks: u64,
    /// Times a path went down.
    pub path_downs: u64,
    /// Authentic datagrams from another address than the path's remote, not followed (the
    /// initiator's remotes are fixed; the responder follows only the newest packet).
    pub foreign_source: u64,
    /// Times the peer restarted (a new session after the first).
    pub peer_restarts: u64,
    /// Reloads applied (SIGHUP), including those that changed nothing.
    pub reloads: u64,
    /// Reloads refused (the file did not check, or asked for what a reload cannot change):
    /// the daemon ran on unchanged.
    pub reloads_refused: u64,
    /// TCP SYNs whose MSS was lowered to what the device carries, both ways.
    pub mss_clamped: u64,
}

/// The running daemon.
pub struct Daemon {
    /// The configuration it runs.
    pub cfg: Config,
    tun: Tun,
    /// The paths, in the configuration's order (each knows its wire number, [`PathIo::wire`]).
    pub paths: Vec<PathIo>,
    sealer: Sealer,
    /// Opens what arrives (its counters: forged, replayed, truncated, oversized...).
    pub opener: Opener,
    /// The scheduler (its own counters are reported as metrics).
    pub scheduler: Box<dyn TunnelScheduler>,
    reads_fill: bool,
    next_tunnel_seq: u64,
    /// The reordering buffer of what arrives: packets with the time before which they may
    /// not leave (the delay equalizer's; their arrival without one).
    pub reorder: ReorderBuffer<Held>,
    /// The delay equalizer, for schedulers that spread a flow over paths (`bond`).
    pub equalizer: Option<DelayEqualizer<Vec<u8>>>,
    /// Packets ready for the TUN device.
    ready: Vec<Vec<u8>>,
    /// Whether packets are delivered as they arrive (`reorder_capacity = 0`): no buffer.
    passthrough: bool,
    /// The largest MSS the device carries, IPv4 and IPv6 ([`crate::mss::max_mss`]).
    max_mss: (u16, u16),
    /// Per-flow order of arrival against the order of entry, before any buffer.
    pub arrival_order: TunnelExit,
    /// The highest tunnel number received, extended to 64 bits.
    highest_tunnel_seq: u64,
    pool: Vec<Vec<u8>>,
    /// Counters.
    pub counters: Counters,
    metrics: Option<MetricsServer>,
    snapshot_at_ns: u64,
    /// When each kind of warning was last printed, ns (forged, wrong path, oversized).
    warned_ns: [Option<u64>; 3],
    /// When the peer's current session was first heard, ns (None before one).
    pub session_started_ns: Option<u64>,
    start: Instant,
    plain: Vec<u8>,
    sealed: Vec<u8>,
    rxbuf: Vec<u8>,
    deliver: Vec<Held>,
    views: Vec<SubtunnelView>,
    view_paths: Vec<usize>,
    records: Vec<Record>,
    firsts: Vec<FirstRecord>,
    poll_fds: Vec<(RawFd, i16)>,
}

/// Why a sealed datagram was not taken.
#[derive(Debug)]
enum Refusal {
    /// It names another path than the one it came on.
    WrongPath,
    /// The opener refused it.
    Seal(seal::SealError),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::WrongPath => f.write_str("it names another path"),
            Refusal::Seal(e) => write!(f, "{e}"),
        }
    }
}

impl PathIo {
    /// Bind path `spec`'s socket (for TCP: listen or prepare to connect) with fresh state.
    fn open(cfg: &Config, spec: &PathSpec) -> io::Result<PathIo> {
        let (carrier, remote) = Carrier::open(cfg, spec)?;
        Ok(PathIo {
            spec: spec.clone(),
            carrier,
            remote,
            tx: PathSender::new(cfg.path_timing),
            rx: PathReceiver::new(&cfg.path_timing),
            was_up: true,
            roam_log: Throttle::new(WARN_EVERY_NS, ROAM_LOG_BURST),
            stats: PathStats::default(),
        })
    }

    /// The path's number on the wire (and the scheduler's, the reordering buffer's and the
    /// equalizer's for it): its `id`.
    pub fn wire(&self) -> usize {
        usize::from(self.spec.id)
    }

    /// The far end's address, if known (for a TCP path: while connected).
    pub fn remote(&self) -> Option<SocketAddr> {
        self.remote
    }

    /// The TCP path's counters (all zero for a UDP path).
    pub fn stream_stats(&self) -> StreamStats {
        match &self.carrier {
            Carrier::Stream(s) => s.stats.clone(),
            Carrier::Datagram(_) => StreamStats::default(),
        }
    }

    /// Connections waiting on the TCP path to prove the key (0 for a UDP path).
    pub fn tcp_pending(&self) -> usize {
        match &self.carrier {
            Carrier::Stream(s) => s.pending(),
            Carrier::Datagram(_) => 0,
        }
    }
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon").field("tun", &self.tun).finish_non_exhaustive()
    }
}

/// The longest the paths' RTTs make a gap wait (a configured reorder_timeout above it stands), ns.
const MAX_REORDER_TIMEOUT_NS: u64 = 2_000_000_000;

/// A packet on its way to the TUN device, with the time before which it may not leave, ns.
pub type Held = (u64, Vec<u8>);

fn bind_path(spec: &PathSpec) -> io::Result<UdpSocket> {
    let sock = UdpSocket::bind(spec.local)
        .map_err(|e| io::Error::new(e.kind(), format!("path `{}`: bind {}: {e}", spec.name, spec.local)))?;
    if let Some(dev) = &spec.interface {
        // SAFETY: the option value is the name's bytes, of the length given.
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_BINDTODEVICE,
                dev.as_ptr().cast(),
                dev.len() as libc::socklen_t,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("path `{}`: bind to interface {dev}: {e}", spec.name),
            ));
        }
    }
    sock.set_nonblocking(true)?;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        let bytes: libc::c_int = 4 << 20;
        // SAFETY: an int option of its size. A refusal only leaves the default buffer.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&bytes as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    Ok(sock)
}

/// The session's epoch: the wall clock in ns, so that a restarted daemon's is larger. A clock
/// before 2020 is refused: every run would take a similar epoch, and the peer would refuse
/// (or, after its own restart, confuse) the sessions.
fn session_epoch() -> io::Result<u64> {
    const Y2020_NS: u128 = 1_577_836_800 * 1_000_000_000;
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    if ns < Y2020_NS {
        return Err(io::Error::other(
            "the system clock is before 2020: set it (the tunnel's sessions are numbered by it)",
        ));
    }
    Ok(ns as u64)
}

impl Daemon {
    /// Bind the sockets and the metrics port, then create the TUN device: what can fail
    /// without leaving anything behind comes first.
    pub fn start(cfg: Config) -> io::Result<Daemon> {
        let keys = cfg
            .psk
            .as_ref()
            .map(|psk| Keys::derive(&psk.0, to_seal_role(cfg.role)))
            .transpose()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let prog = tunnel_scheduler(&cfg.scheduler)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "unknown scheduler"))?;
        let epoch = session_epoch()?;
        let paths = cfg
            .paths
            .iter()
            .map(|spec| PathIo::open(&cfg, spec))
            .collect::<io::Result<Vec<_>>>()?;
        let metrics = cfg
            .metrics
            .map(MetricsServer::bind)
            .transpose()
            .map_err(|e| io::Error::new(e.kind(), format!("metrics: {e}")))?;
        let tun = Tun::create(&cfg.device)?;
        let max = cfg.max_datagram_bytes();
        let mut reorder = ReorderBuffer::new(cfg.reorder_capacity, cfg.reorder_timeout_ns);
        // A live path carries a keepalive at least every keepalive interval; one silent for
        // dead_after is dead at the far end too, and must not hold back the floor.
        reorder.track_paths(paths.iter().map(PathIo::wire), silence_ns(&cfg), 0);
        Ok(Daemon {
            scheduler: prog.build(&cfg.scheduler_params, epoch),
            reads_fill: !matches!(prog.name(), "rr" | "bond"),
            sealer: keys
                .as_ref()
                .map_or_else(|| Sealer::clear(epoch), |k| Sealer::new(k, epoch)),
            opener: keys
                .as_ref()
                .map_or_else(Opener::clear, Opener::new)
                .with_max_datagram_bytes(max),
            reorder,
            // With no reordering buffer (`reorder_capacity = 0`) nothing is held.
            equalizer: (prog.equalizes_delay() && cfg.reorder_capacity > 0)
                .then(|| DelayEqualizer::new(MAX_PATHS, cfg.reorder_capacity.max(1), cfg.reorder_timeout_ns)),
            ready: Vec::new(),
            passthrough: cfg.reorder_capacity == 0,
            max_mss: crate::mss::max_mss(cfg.device.mtu),
            arrival_order: TunnelExit::new(ORDER_FLOWS),
            highest_tunnel_seq: 0,
            tun,
            paths,
            next_tunnel_seq: 0,
            pool: Vec::new(),
            counters: Counters::default(),
            metrics,
            snapshot_at_ns: 0,
            warned_ns: [None; 3],
            session_started_ns: None,
            start: Instant::now(),
            plain: Vec::with_capacity(DataHeader::BYTES + TUN_READ_BYTES),
            sealed: Vec::with_capacity(max),
            rxbuf: vec![0; seal::MAX_DATAGRAM_BYTES + 1],
            deliver: Vec::new(),
            views: Vec::new(),
            view_paths: Vec::new(),
            records: Vec::new(),
            firsts: Vec::new(),
            poll_fds: Vec::new(),
            cfg,
        })
    }

    /// The TUN device's name.
    pub fn device(&self) -> &str {
        self.tun.name()
    }

    /// Time since the daemon started, ns (its clock: every time it reports is on it).
    pub fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Run until `stop` is set (by a signal handler); each time `reload` is set (SIGHUP),
    /// re-read the configuration from `config` and apply it ([`Daemon::reload`]).
    pub fn run(&mut self, stop: &AtomicBool, reload: Option<(&AtomicBool, &Path)>) -> io::Result<()> {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut owner: Vec<usize> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            if let Some((flag, config)) = reload {
                if flag.swap(false, Ordering::Relaxed) {
                    self.reload_from(config);
                }
            }
            self.poll_set(&mut fds, &mut owner);
            let now = self.now_ns();
            let sleep = self.next_deadline_ns(now).saturating_sub(now).min(MAX_SLEEP_NS);
            let ts = libc::timespec {
                tv_sec: (sleep / 1_000_000_000) as libc::time_t,
                tv_nsec: (sleep % 1_000_000_000) as libc::c_long,
            };
            // SAFETY: `fds` is a valid array of its length; no signal mask is changed.
            let n = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if fds[0].revents != 0 {
                self.read_tun()?;
            }
            let mut last = usize::MAX;
            for (f, &i) in fds.iter().zip(&owner).skip(1) {
                // A TCP path may have two descriptors: one turn for both.
                if f.revents != 0 && i != last {
                    self.read_path(i);
                    last = i;
                }
            }
            let now = self.now_ns();
            self.timers(now);
            if now >= self.snapshot_at_ns + SNAPSHOT_NS {
                self.snapshot_at_ns = now;
                if let Some(m) = &self.metrics {
                    m.publish(crate::report::exposition(self));
                }
            }
        }
        Ok(())
    }

    /// The descriptors to wait on, and the path each belongs to (the TUN device first): a TCP
    /// path's change as its connection comes and goes.
    fn poll_set(&mut self, fds: &mut Vec<libc::pollfd>, owner: &mut Vec<usize>) {
        fds.clear();
        owner.clear();
        let pollfd = |fd, events| libc::pollfd { fd, events, revents: 0 };
        fds.push(pollfd(self.tun.as_raw_fd(), libc::POLLIN));
        owner.push(usize::MAX);
        for (i, p) in self.paths.iter().enumerate() {
            self.poll_fds.clear();
            match &p.carrier {
                Carrier::Datagram(s) => self.poll_fds.push((s.as_raw_fd(), libc::POLLIN)),
                Carrier::Stream(s) => s.poll_fds(&mut self.poll_fds),
            }
            for &(fd, ev) in &self.poll_fds {
                fds.push(pollfd(fd, ev));
                owner.push(i);
            }
        }
    }

    /// The earliest timer: reordering timeout, acknowledgement, keepalive.
    fn next_deadline_ns(&mut self, now: u64) -> u64 {
        let mut t = now + MAX_SLEEP_NS;
        if let Some(d) = self.equalizer.as_ref().and_then(DelayEqualizer::deadline_ns) {
            t = t.min(d);
        }
        if let Some(d) = self.reorder.deadline_ns() {
            t = t.min(d);
        }
        for p in &self.paths {
            if let Some(d) = p.rx.ack_deadline_ns() {
                t = t.min(d);
            }
            if p.remote.is_some() {
                t = t.min(p.tx.keepalive_at_ns());
            }
            if let Carrier::Stream(s) = &p.carrier {
                t = t.min(s.timer_at_ns().unwrap_or(u64::MAX));
            }
            t = t.min(p.roam_log.due_ns().unwrap_or(u64::MAX));
        }
        t
    }

    /// Read a batch of inner packets and send each on the path the scheduler picks.
    fn read_tun(&mut self) -> io::Result<()> {
        for _ in 0..BATCH {
            self.plain.clear();
            self.plain.resize(DataHeader::BYTES + TUN_READ_BYTES, 0);
            let n = match self.tun.recv(&mut self.plain[DataHeader::BYTES..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io::Error::new(e.kind(), format!("read from {}: {e}", self.tun.name()))),
            };
            self.counters.tun_rx += 1;
            self.plain.truncate(DataHeader::BYTES + n);
            if self.cfg.device.clamp_mss && crate::mss::clamp(&mut self.plain[DataHeader::BYTES..], self.max_mss) {
                self.counters.mss_clamped += 1;
            }
            let Some(flow) = flow_of(&self.plain[DataHeader::BYTES..]) else {
                self.counters.not_ip += 1;
                continue;
            };
            let now = self.now_ns();
            let Some(i) = self.pick_path(&flow, n as u32, now) else {
                self.counters.no_path_drops += 1;
                continue;
            };
            let (path_seq, sent_us) = self.paths[i].tx.on_send_data(now, n as u64);
            let h = DataHeader {
                path_seq,
                tunnel_seq: self.next_tunnel_seq as u32,
                sent_us,
            };
            self.next_tunnel_seq += 1;
            self.plain[..DataHeader::BYTES].copy_from_slice(&h.to_bytes());
            if self.send(i, KIND_DATA) {
                self.paths[i].stats.tx_data += 1;
                self.paths[i].stats.tx_bytes += self.sealed.len() as u64;
            }
        }
        Ok(())
    }

    /// The path for a packet: the scheduler's choice among the active paths that are up and
    /// have a remote address; among the backup paths that are up when no active one is; among
    /// all with an address when none is up.
    fn pick_path(&mut self, flow: &mpsched_core::tunnel::FlowKey, bytes: u32, now: u64) -> Option<usize> {
        self.views.clear();
        self.view_paths.clear();
        // Offered in turn until one tier has a path: the active paths that are up, the backup
        // paths that are up (every active one is down), then every path with a far end.
        for (want_up, want_backup) in [(true, Some(false)), (true, Some(true)), (false, None)] {
            for (i, p) in self.paths.iter().enumerate() {
                if p.remote.is_none() || (want_up && !p.tx.is_up()) || want_backup.is_some_and(|b| b != p.spec.backup) {
                    continue;
                }
                let v = p.tx.view();
                let mut view = SubtunnelView {
                    path: p.spec.id,
                    fill_bytes: 0,
                    cwnd_bytes: 0,
                    srtt_ns: v.srtt_ns,
                    min_rtt_ns: v.min_rtt_ns,
                    in_flight_pkts: v.in_flight,
                    in_flight_bytes: v.in_flight_bytes,
                    delivery_rate_bytes_per_s: v.delivery_rate_bytes_per_s,
                    weight: p.spec.weight,
                };
                if self.reads_fill {
                    match &p.carrier {
                        Carrier::Datagram(s) => view.fill_bytes = outq_bytes_fd(s.as_raw_fd()),
                        // What the paper's AFMT weighs: the kernel's own queue, window and RTT.
                        Carrier::Stream(s) => {
                            let k = s.view();
                            (view.fill_bytes, view.cwnd_bytes, view.srtt_ns) = (k.fill_bytes, k.cwnd_bytes, k.srtt_ns);
                        }
                    }
                }
                self.views.push(view);
                self.view_paths.push(i);
            }
            if !self.views.is_empty() {
                break;
            }
        }
        if self.views.is_empty() {
            return None;
        }
        let k = self.scheduler.select(flow, bytes, now, &self.views);
        self.view_paths.get(k).copied()
    }

    /// Seal `self.plain` as a message of `kind` and send it on path `i`; false if not sent.
    fn send(&mut self, i: usize, kind: u8) -> bool {
        // Read only for a TCP path (its retry time after a break): a UDP send needs no clock.
        let now = match self.paths[i].carrier {
            Carrier::Stream(_) => self.now_ns(),
            Carrier::Datagram(_) => 0,
        };
        let p = &mut self.paths[i];
        let Some(remote) = p.remote else { return false };
        if self
            .sealer
            .seal(kind, p.spec.id, &self.plain, &mut self.sealed)
            .is_err()
        {
            p.stats.send_errors += 1;
            return false;
        }
        let sent = match &mut p.carrier {
            Carrier::Datagram(s) => s.send_to(&self.sealed, remote).is_ok(),
            Carrier::Stream(s) => {
                let sent = s.send_record(&self.sealed, now);
                p.remote = s.peer();
                sent
            }
        };
        if !sent {
            p.stats.send_errors += 1;
        }
        sent
    }

    fn send_ack(&mut self, i: usize, now: u64) {
        let Some(ack) = self.paths[i].rx.ack(now) else { return };
        self.plain.clear();
        ack.encode(&mut self.plain);
        if self.send(i, KIND_ACK) {
            self.paths[i].stats.acks_sent += 1;
        }
    }

    fn send_keepalive(&mut self, i: usize, now: u64) {
        let (path_seq, sent_us) = self.paths[i].tx.on_send(now);
        self.plain.clear();
        Keepalive {
            path_seq,
            sent_us,
            tunnel_next: self.next_tunnel_seq as u32,
        }
        .encode(&mut self.plain);
        if self.send(i, KIND_KEEPALIVE) {
            self.paths[i].stats.keepalives_sent += 1;
        }
    }

    /// Read what path `i` has: a batch of datagrams, or a TCP path's records (and its
    /// connection's comings and goings).
    fn read_path(&mut self, i: usize) {
        if let Carrier::Stream(_) = self.paths[i].carrier {
            return self.read_stream(i);
        }
        for _ in 0..BATCH {
            let Carrier::Datagram(sock) = &self.paths[i].carrier else {
                return;
            };
            let (n, from) = match sock.recv_from(&mut self.rxbuf) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock, or an ICMP error queued on the socket: nothing to read now.
                Err(_) => return,
            };
            self.on_sealed(i, n, from);
        }
    }

    fn read_stream(&mut self, i: usize) {
        let now = self.now_ns();
        let max = self.cfg.max_datagram_bytes();
        let mut records = std::mem::take(&mut self.records);
        let mut firsts = std::mem::take(&mut self.firsts);
        let p = &mut self.paths[i];
        let Carrier::Stream(s) = &mut p.carrier else { return };
        let connected = s.on_ready(now, max, &mut records, &mut firsts);
        p.remote = s.peer();
        if connected {
            self.connected(i, now);
            // The responder takes a connection only once a record proves the key: send one now.
            self.send_keepalive(i, now);
        }
        self.take_records(i, &mut records);
        for f in firsts.drain(..) {
            self.judge_first(i, f, now, &mut records);
        }
        self.records = records;
        self.firsts = firsts;
    }

    /// Path `i`'s connection is new: say so and count it.
    fn connected(&mut self, i: usize, now: u64) {
        let p = &mut self.paths[i];
        p.stats.remote_changes += 1;
        let Carrier::Stream(s) = &mut p.carrier else { return };
        let peer = s.peer().map_or("?".into(), |a| a.to_string());
        s.say_change(now, &format!("connected to {peer}"));
    }

    /// Open the records of path `i`'s connection.
    fn take_records(&mut self, i: usize, records: &mut Vec<Record>) {
        let from = self.paths[i].remote;
        for r in records.drain(..) {
            self.rxbuf[..r.len()].copy_from_slice(&r);
            if let Some(from) = from {
                self.on_sealed(i, r.len(), from);
            }
        }
    }

    /// The first record of a connection pending on path `i`: authentic and fresh, the
    /// connection becomes the path's and the record is taken; if not, the connection is
    /// dropped and the established one carries on untouched.
    fn judge_first(&mut self, i: usize, f: FirstRecord, now: u64, records: &mut Vec<Record>) {
        let n = f.record.len();
        self.rxbuf[..n].copy_from_slice(&f.record);
        let mut plain = std::mem::take(&mut self.plain);
        let verdict = self.open_for(i, n, &mut plain);
        let max = self.cfg.max_datagram_bytes();
        let p = &mut self.paths[i];
        let Carrier::Stream(s) = &mut p.carrier else { return };
        match verdict {
            Err(why) => s.refuse(f.id, now, &first_refused(&why)),
            Ok((kind, newest)) => {
                s.promote(f.id, now, max, records);
                p.remote = s.peer();
                self.connected(i, now);
                self.on_datagram(i, kind, f.from, newest, n, &plain);
                self.take_records(i, records);
            }
        }
        self.plain = plain;
    }

    /// A sealed datagram of `n` bytes in `self.rxbuf` from `from` on path `i`: check, open and
    /// handle it.
    fn on_sealed(&mut self, i: usize, n: usize, from: SocketAddr) {
        let mut plain = std::mem::take(&mut self.plain);
        match self.open_for(i, n, &mut plain) {
            Ok((kind, newest)) => self.on_datagram(i, kind, from, newest, n, &plain),
            Err(Refusal::WrongPath) => self.warn(
                1,
                "a datagram on another path's socket (are the paths listed in the same order at both ends?)",
            ),
            Err(Refusal::Seal(seal::SealError::Forged)) => self.warn(
                0,
                "a datagram failed authentication (the same key at both ends, and one initiator and one responder?)",
            ),
            Err(Refusal::Seal(seal::SealError::Oversized)) => self.warn(
                2,
                "a datagram longer than this end's MTU allows (the same MTU at both ends?)",
            ),
            Err(_) => {}
        }
        self.plain = plain;
    }

    /// Open the sealed datagram of `n` bytes in `self.rxbuf` that came on path `i` into
    /// `plain`: its kind and whether it is the newest packet of the session, or why not (each
    /// refusal counted). A newer session of the peer is followed here.
    fn open_for(&mut self, i: usize, n: usize, plain: &mut Vec<u8>) -> Result<(u8, bool), Refusal> {
        // The path byte is authenticated, but a copy sent to another path's socket must be
        // refused before it is opened: opening would mark its number seen, and the genuine
        // datagram, still on its way on its own path, would then be refused as a replay.
        if n > 1 && self.rxbuf[1] != self.paths[i].spec.id {
            self.counters.wrong_path += 1;
            return Err(Refusal::WrongPath);
        }
        let sessions = self.opener.stats().sessions;
        let o = self.opener.open(&self.rxbuf[..n], plain).map_err(Refusal::Seal)?;
        if self.opener.stats().sessions > sessions {
            self.session_started_ns = Some(self.now_ns());
            if sessions > 0 {
                self.peer_restarted();
            }
        }
        let newest = self.opener.window().highest() == Some(o.packet_number);
        Ok((o.kind, newest))
    }

    /// Print `what` unless a warning of `kind` was printed in the last [`WARN_EVERY_NS`].
    fn warn(&mut self, kind: usize, what: &str) {
        let now = self.now_ns();
        if self.warned_ns[kind].is_some_and(|t| now < t + WARN_EVERY_NS) {
            return;
        }
        self.warned_ns[kind] = Some(now);
        eprintln!(
            "mpsched tunnel: {:.3} s: {what}; counted, and said again at most every 10 s",
            now as f64 / 1e9
        );
    }

    /// Re-read the configuration in `file` and apply it, or say why not and run on unchanged.
    fn reload_from(&mut self, file: &Path) {
        let now = self.now_ns();
        let result = Config::load(file)
            .map_err(|e| e.to_string())
            .and_then(|new| self.reload(new));
        let secs = now as f64 / 1e9;
        match result {
            Ok(what) => eprintln!("mpsched tunnel: {secs:.3} s: reloaded {}: {what}", file.display()),
            Err(why) => eprintln!(
                "mpsched tunnel: {secs:.3} s: reload of {} refused, running on unchanged: {why}",
                file.display()
            ),
        }
    }

    /// Apply configuration `new` to the running tunnel without ending its session: paths
    /// removed, added, rebound or updated ([`crate::reload::plan`]). Every new socket is bound
    /// before anything changes, so a refusal (what cannot change, a bind that fails) leaves
    /// the tunnel as it was. Returns what changed, for the log.
    pub fn reload(&mut self, new: Config) -> Result<String, String> {
        let plan = crate::reload::plan(&self.cfg, &new);
        let plan = plan.and_then(|plan| {
            let added = (plan.added.iter())
                .map(|spec| PathIo::open(&new, spec))
                .collect::<io::Result<Vec<_>>>();
            let rebound = (plan.rebound.iter())
                .map(|spec| Carrier::open(&new, spec).map(|c| (spec.clone(), c)))
                .collect::<io::Result<Vec<_>>>();
            match (added, rebound) {
                (Ok(a), Ok(r)) => Ok((plan, a, r)),
                (Err(e), _) | (_, Err(e)) => Err(e.to_string()),
            }
        });
        let (plan, added, rebound) = match plan {
            Ok(p) => p,
            Err(why) => {
                self.counters.reloads_refused += 1;
                return Err(why);
            }
        };
        let what = plan.describe(&self.cfg);
        let now = self.now_ns();
        self.remove_paths(&plan.removed, now);
        for (spec, (carrier, remote)) in rebound {
            let p = self.path_mut(spec.id);
            (p.carrier, p.remote, p.spec) = (carrier, remote, spec);
        }
        for spec in plan.updated {
            let learned = self.path_mut(spec.id).remote;
            let p = self.path_mut(spec.id);
            // A responder told no remote keeps the one it learned; UDP follows a new one now
            // (a TCP path's remote is its connection's).
            if new.transport == Transport::Udp {
                p.remote = spec.remote.or(learned);
            }
            p.spec = spec;
        }
        for p in added {
            self.reorder.track_path(p.wire(), now);
            self.paths.push(p);
        }
        // In the file's order, which is the scheduler's order of preference among equals.
        self.paths
            .sort_by_key(|p| new.paths.iter().position(|s| s.name == p.spec.name));
        self.cfg = new;
        self.counters.reloads += 1;
        Ok(what)
    }

    /// The path numbered `id` (one the plan names, so present).
    fn path_mut(&mut self, id: u8) -> &mut PathIo {
        let i = self.paths.iter().position(|p| p.spec.id == id);
        &mut self.paths[i.expect("a path the reload plan names is running")]
    }

    /// Close the paths numbered `ids`: gaps stop waiting for them, the equalizer forgets their
    /// delay, and what they had in flight is lost (the reordering buffer gives it up as the
    /// other paths pass it).
    fn remove_paths(&mut self, ids: &[u8], now: u64) {
        let mut out = std::mem::take(&mut self.deliver);
        for &id in ids {
            self.paths.retain(|p| p.spec.id != id);
            self.reorder.forget_path(usize::from(id), now, &mut out);
            if let Some(e) = &mut self.equalizer {
                e.forget_path(usize::from(id));
            }
        }
        self.write_out(&mut out, now);
        self.deliver = out;
    }

    /// The peer started a new session: its receivers and sender count from nothing, so ours
    /// start afresh too (RTTs and liveness stay).
    fn peer_restarted(&mut self) {
        let now = self.now_ns();
        self.counters.peer_restarts += 1;
        eprintln!(
            "mpsched tunnel: {:.3} s: the peer restarted (a new session)",
            now as f64 / 1e9
        );
        for p in &mut self.paths {
            p.rx.new_session();
            p.tx.peer_restarted();
        }
        // What waits leaves now; the new session numbers from zero again; the counters go on
        // (they are totals).
        let mut out = std::mem::take(&mut self.deliver);
        self.reorder.new_session(now, &mut out);
        self.write_out(&mut out, u64::MAX);
        self.deliver = out;
        if let Some(e) = &mut self.equalizer {
            e.flush(&mut self.ready);
            e.new_session();
        }
        self.write_ready();
        self.reorder
            .track_paths(self.paths.iter().map(PathIo::wire), silence_ns(&self.cfg), now);
        self.highest_tunnel_seq = 0;
        self.arrival_order.new_session();
    }

    fn on_datagram(&mut self, i: usize, kind: u8, from: SocketAddr, newest: bool, bytes: usize, plain: &[u8]) {
        let now = self.now_ns();
        let responder = self.cfg.role == crate::config::Role::Responder;
        let p = &mut self.paths[i];
        p.stats.rx_bytes += bytes as u64;
        if p.remote != Some(from) {
            // Authentic, but a copy can be raced ahead of the genuine datagram from any address:
            // only the responder follows, and only the newest packet (the peer roamed, or it
            // learns the peer's address); the initiator's remotes are what it was told.
            if responder && (newest || p.remote.is_none()) {
                if p.roam_log.event(now) {
                    eprintln!(
                        "mpsched tunnel: {:.3} s: path `{}`: the peer is at {from}",
                        now as f64 / 1e9,
                        p.spec.name
                    );
                }
                p.remote = Some(from);
                p.stats.remote_changes += 1;
            } else {
                self.counters.foreign_source += 1;
            }
        }
        match Message::decode(kind, plain) {
            Err(_) => self.counters.malformed += 1,
            Ok(Message::Ack(a)) => self.on_ack(i, &a, now),
            Ok(Message::Keepalive(k)) => {
                self.paths[i].rx.on_message(k.path_seq, k.sent_us, now, true);
                self.send_ack(i, now);
                let mut out = std::mem::take(&mut self.deliver);
                self.reorder
                    .raise_floor(self.paths[i].wire(), k.tunnel_next, now, &mut out);
                self.write_out(&mut out, now);
                self.deliver = out;
            }
            Ok(Message::Data(h, inner)) => {
                self.paths[i].stats.rx_data += 1;
                if self.paths[i].rx.on_message(h.path_seq, h.sent_us, now, false) {
                    self.send_ack(i, now);
                }
                self.note_arrival(h.tunnel_seq, inner);
                let mut buf = self.pool.pop().unwrap_or_default();
                buf.clear();
                buf.extend_from_slice(inner);
                let not_before = match &mut self.equalizer {
                    Some(e) => e.on_arrival(self.paths[i].wire(), h.sent_us, now),
                    None => now,
                };
                let mut out = std::mem::take(&mut self.deliver);
                if self.passthrough {
                    out.push((not_before, buf));
                } else {
                    let wire = self.paths[i].wire();
                    self.reorder
                        .push_on(wire, h.tunnel_seq, now, (not_before, buf), &mut out);
                }
                self.write_out(&mut out, now);
                self.deliver = out;
            }
        }
    }

    /// Count an inner packet that arrives after one of its flow that entered later (RFC 4737
    /// on the order of entry, before the reordering buffer): the AFMT paper's measure.
    fn note_arrival(&mut self, tunnel_seq: u32, inner: &[u8]) {
        let seq = extend_seq(tunnel_seq, self.highest_tunnel_seq);
        self.highest_tunnel_seq = self.highest_tunnel_seq.max(seq);
        if let Some(flow) = flow_of(inner) {
            self.arrival_order.forward(&flow, seq);
        }
    }

    fn on_ack(&mut self, i: usize, a: &Ack, now: u64) {
        if self.paths[i].tx.on_ack(a, now) {
            let sample = self.paths[i].tx.ack_sample();
            self.scheduler.on_ack(self.paths[i].wire(), &sample, now);
        } else {
            self.counters.stale_acks += 1;
        }
    }

    /// Write released packets to the TUN device and keep their buffers.
    /// Packets in order, each with the time before which it may not leave: through the delay
    /// equalizer (if any) to the TUN device.
    fn write_out(&mut self, out: &mut Vec<Held>, now: u64) {
        for (not_before, pkt) in out.drain(..) {
            match &mut self.equalizer {
                Some(e) => e.push(not_before, pkt, now, &mut self.ready),
                None => self.ready.push(pkt),
            }
        }
        self.write_ready();
    }

    fn write_ready(&mut self) {
        for mut pkt in self.ready.drain(..) {
            if self.cfg.device.clamp_mss && crate::mss::clamp(&mut pkt, self.max_mss) {
                self.counters.mss_clamped += 1;
            }
            match self.tun.send(&pkt) {
                Ok(_) => self.counters.tun_tx += 1,
                Err(_) => self.counters.tun_write_errors += 1,
            }
            if self.pool.len() < POOL_BUFFERS {
                self.pool.push(pkt);
            }
        }
    }

    /// Acknowledgements due, keepalives due, liveness, and the reordering timeout.
    /// (Liveness judges the paths this end sends on.)
    fn timers(&mut self, now: u64) {
        for p in &mut self.paths {
            if let Carrier::Stream(s) = &mut p.carrier {
                s.on_timer(now);
            }
        }
        // A gap waits at least twice the slowest live path's RTT: a slower path's packet behind
        // a queue of tens of ms is on its way, not lost. reorder_timeout is the floor and is
        // kept as configured; only the RTT-derived part is capped (a path's stale RTT after
        // an outage must not hold every gap for seconds).
        // A backup waiting idle (an active path is up) carries none of the gaps.
        let active_up = self.paths.iter().any(|p| p.tx.is_up() && !p.spec.backup);
        let slowest_rtt = self
            .paths
            .iter()
            .filter(|p| p.tx.is_up() && !(active_up && p.spec.backup))
            .map(|p| p.tx.view().srtt_ns)
            .max()
            .unwrap_or(0);
        self.reorder.set_timeout(
            self.cfg
                .reorder_timeout_ns
                .max(slowest_rtt.saturating_mul(2).min(MAX_REORDER_TIMEOUT_NS)),
        );
        let mut out = std::mem::take(&mut self.deliver);
        self.reorder.poll(now, &mut out);
        self.write_out(&mut out, now);
        self.deliver = out;
        if let Some(e) = &mut self.equalizer {
            e.poll(now, &mut self.ready);
        }
        self.write_ready();
        for i in 0..self.paths.len() {
            if self.paths[i].rx.ack_deadline_ns().is_some_and(|d| d <= now) {
                self.send_ack(i, now);
            }
            if self.paths[i].remote.is_some() && self.paths[i].tx.keepalive_due(now) {
                self.send_keepalive(i, now);
            }
            let p = &mut self.paths[i];
            if let Some(n) = p.roam_log.summary(now) {
                eprintln!(
                    "mpsched tunnel: {:.3} s: path `{}`: the peer moved {n} more times since the last such line, now at {}",
                    now as f64 / 1e9,
                    p.spec.name,
                    p.remote.map_or("?".into(), |a| a.to_string())
                );
            }
            if p.tx.poll_liveness(now) {
                self.counters.path_downs += 1;
            }
            let up = p.tx.is_up();
            if up != p.was_up {
                p.was_up = up;
                let secs = now as f64 / 1e9;
                let state = if up { "up" } else { "down" };
                eprintln!("mpsched tunnel: {secs:.3} s: path `{}` {state}", p.spec.name);
            }
        }
    }
}

/// Why a pending connection's first record did not prove the key, for the log.
fn first_refused(why: &Refusal) -> String {
    match why {
        Refusal::Seal(seal::SealError::Forged) => {
            "its first record failed authentication (no peer of this tunnel, or another key)".into()
        }
        _ => format!("its first record was refused: {why}"),
    }
}

/// How long a path may be silent before the reordering buffer stops waiting for it: the
/// sender's dead_after starts an ack's flight later, and a keepalive may be lost, so one
/// keepalive interval more.
fn silence_ns(cfg: &Config) -> u64 {
    cfg.path_timing.dead_after_ns + cfg.path_timing.keepalive_ns
}

fn to_seal_role(r: crate::config::Role) -> seal::Role {
    match r {
        crate::config::Role::Initiator => seal::Role::Initiator,
        crate::config::Role::Responder => seal::Role::Responder,
    }
}

/// Bytes in a socket's send queue (0 if the kernel will not say): for TCP, written and not
/// yet acknowledged.
pub(crate) fn outq_bytes_fd(fd: RawFd) -> u64 {
    let mut v: libc::c_int = 0;
    // SAFETY: SIOCOUTQ writes one int.
    let r = unsafe { libc::ioctl(fd, SIOCOUTQ, &mut v) };
    if r < 0 {
        0
    } else {
        v.max(0) as u64
    }
}
