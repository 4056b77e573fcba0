//! TCP paths: one kernel TCP connection per path carrying the tunnel's sealed messages as
//! records (a 2-byte big-endian length, then the sealed datagram), as the AFMT paper's
//! subtunnels do. The kernel's TCP gives what AFMT weighs: the bytes queued and not yet
//! acknowledged (`SIOCOUTQ`), the congestion window and the smoothed RTT (`TCP_INFO`).
//!
//! The initiator connects from each path's local address to its remote, and connects again
//! after a break; the responder listens on each path's local address, and a connection
//! accepted there becomes the path's only once its first record proves the key
//! ([`crate::admission`]): it is pending until the daemon, which holds the key, judges that
//! record ([`StreamPath::promote`], [`StreamPath::refuse`]). Nothing is ever blocked on: a
//! record that does not fit the send buffer is refused whole (the caller counts the drop), and
//! a partly written one is finished before another is taken, so the stream stays framed.

use crate::admission::{Admission, PendingId, Throttle, LOG_EVERY_NS, MAX_PENDING, PENDING_TIMEOUT_NS};
use crate::config::{PathSpec, TcpSpec};
use socket2::{Domain, SockAddr, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};

/// Bytes of a record's length prefix.
pub const RECORD_PREFIX_BYTES: usize = 2;
/// Lines about the path's own connection made or closed: a few in each 10 s, room for a
/// restart's two (closed, then connected again), not for an initiator refused at every retry.
const CHANGES_LOG_EVERY_NS: u64 = 10_000_000_000;
/// The lines of that interval.
const CHANGES_LOG_BURST: u32 = 4;
/// Most bytes read from a connection before the other descriptors get a turn.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// What the kernel says of a connection, for the scheduler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamView {
    /// Bytes written and not yet acknowledged, with what this end still holds unwritten.
    pub fill_bytes: u64,
    /// Congestion window, bytes (segments x MSS).
    pub cwnd_bytes: u64,
    /// Smoothed RTT, ns.
    pub srtt_ns: u64,
}

/// Counters of one TCP path.
#[derive(Clone, Debug, Default)]
pub struct StreamStats {
    /// Connections made (initiator) or accepted (responder).
    pub connections: u64,
    /// Connections that broke (closed by the peer, reset, or a framing error).
    pub breaks: u64,
    /// Records refused because the send buffer was full.
    pub send_buffer_drops: u64,
    /// Records whose length no datagram can have: the connection is dropped.
    pub framing_errors: u64,
    /// Connections the responder dropped before their first record proved the key: not
    /// authentic, closed, silent past the deadline, or pushed out by newer ones.
    pub unauthenticated: u64,
}

/// A connection's state.
#[derive(Debug)]
enum Conn {
    /// None, and when the initiator tries again, ns.
    Idle { retry_at_ns: u64 },
    /// Connecting (the initiator), not yet writable.
    Connecting(TcpStream),
    /// Established.
    Up(TcpStream),
}

/// A connection the responder accepted, waiting for its first record.
#[derive(Debug)]
struct Waiting {
    stream: TcpStream,
    from: SocketAddr,
    /// Bytes read, not yet a whole first record (at most one record's).
    inbuf: Vec<u8>,
}

/// The first record of a pending connection, for the daemon to open: the connection becomes
/// the path's if the record is authentic ([`StreamPath::promote`]) and is dropped if not
/// ([`StreamPath::refuse`]); one or the other must follow.
#[derive(Debug)]
pub struct FirstRecord {
    /// The pending connection.
    pub id: PendingId,
    /// Its peer.
    pub from: SocketAddr,
    /// The sealed datagram.
    pub record: Record,
}

/// One TCP path.
#[derive(Debug)]
pub struct StreamPath {
    spec: PathSpec,
    tcp: TcpSpec,
    listener: Option<TcpListener>,
    conn: Conn,
    /// Connections accepted that have not yet proved the key (the responder's).
    pending: Admission<Waiting>,
    /// Lines about connections dropped unauthenticated: anyone can cause them.
    drops_log: Throttle,
    /// Lines about the path's own connection made and closed (an initiator with the wrong
    /// key is refused and connects again at every retry).
    changes_log: Throttle,
    /// Bytes of the last record not yet written.
    out: Vec<u8>,
    /// Bytes read and not yet a whole record.
    inbuf: Vec<u8>,
    retry_ns: u64,
    /// The established connection's peer.
    peer: Option<SocketAddr>,
    /// Counters.
    pub stats: StreamStats,
}

/// One whole record read: the sealed datagram.
pub type Record = Vec<u8>;

impl StreamPath {
    /// The path of `spec`: the responder's listening socket bound now (so a taken address is
    /// an error before anything else is made); the initiator connects on its first
    /// [`StreamPath::poll_connect`]. A broken connection is tried again after `retry_ns`.
    pub fn new(spec: &PathSpec, tcp: &TcpSpec, listen: bool, retry_ns: u64) -> io::Result<StreamPath> {
        let listener = match listen {
            true => Some(listen_on(spec, tcp)?),
            false => None,
        };
        Ok(StreamPath {
            spec: spec.clone(),
            tcp: tcp.clone(),
            listener,
            conn: Conn::Idle { retry_at_ns: 0 },
            pending: Admission::new(MAX_PENDING, PENDING_TIMEOUT_NS),
            drops_log: Throttle::new(LOG_EVERY_NS, 1),
            changes_log: Throttle::new(CHANGES_LOG_EVERY_NS, CHANGES_LOG_BURST),
            out: Vec::new(),
            inbuf: Vec::new(),
            retry_ns,
            peer: None,
            stats: StreamStats::default(),
        })
    }

    /// The connection's peer, once established.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// Connections waiting to prove the key.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    fn set_up(&mut self, s: TcpStream) {
        self.peer = s.peer_addr().ok();
        self.stats.connections += 1;
        self.out.clear();
        self.inbuf.clear();
        self.conn = Conn::Up(s);
    }

    /// The descriptors to poll and for what: the listener (readable: a connection to accept),
    /// the connection (readable; writable while connecting or while a record is half written).
    pub fn poll_fds(&self, out: &mut Vec<(RawFd, i16)>) {
        if let Some(l) = &self.listener {
            out.push((l.as_raw_fd(), libc::POLLIN));
        }
        out.extend(self.pending.iter().map(|p| (p.conn.stream.as_raw_fd(), libc::POLLIN)));
        match &self.conn {
            Conn::Idle { .. } => {}
            Conn::Connecting(s) => out.push((s.as_raw_fd(), libc::POLLOUT)),
            Conn::Up(s) => {
                let w = if self.out.is_empty() { 0 } else { libc::POLLOUT };
                out.push((s.as_raw_fd(), libc::POLLIN | w));
            }
        }
    }

    /// When the initiator next tries to connect, if it is waiting to.
    fn connect_at_ns(&self) -> Option<u64> {
        match (&self.conn, &self.listener) {
            (Conn::Idle { retry_at_ns }, None) => Some(*retry_at_ns),
            _ => None,
        }
    }

    /// When [`StreamPath::on_timer`] next has something to do: connect, drop a pending
    /// connection, or say how many were dropped.
    pub fn timer_at_ns(&self) -> Option<u64> {
        [
            self.connect_at_ns(),
            self.pending.deadline_ns(),
            self.drops_log.due_ns(),
            self.changes_log.due_ns(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The timers: connect (the initiator), drop the pending connections past their deadline,
    /// and say what the log held back.
    pub fn on_timer(&mut self, now_ns: u64) {
        self.poll_connect(now_ns);
        let mut late = Vec::new();
        self.pending.expire(now_ns, &mut late);
        for p in late {
            let why = format!("no record within {} s", PENDING_TIMEOUT_NS / 1_000_000_000);
            self.dropped(now_ns, p.conn.from, &why);
        }
        if let Some(n) = self.drops_log.summary(now_ns) {
            let what = format!(
                "dropped {n} more unauthenticated {} since the last such line",
                plural(n)
            );
            self.say(now_ns, &what);
        }
        if let Some(n) = self.changes_log.summary(now_ns) {
            let what = format!("{n} more {} made or closed since the last such line", plural(n));
            self.say(now_ns, &what);
        }
    }

    /// Say that the path's connection was made or closed ([`CHANGES_LOG_BURST`] lines every
    /// 10 s at most).
    pub fn say_change(&mut self, now_ns: u64, what: &str) {
        if self.changes_log.event(now_ns) {
            self.say(now_ns, what);
        }
    }

    fn say(&self, now_ns: u64, what: &str) {
        eprintln!(
            "mpsched tunnel: {:.3} s: path `{}`: {what}",
            now_ns as f64 / 1e9,
            self.spec.name
        );
    }

    /// The initiator: start a connection if none is and it is time. A failure to start is
    /// tried again later, said once per break.
    fn poll_connect(&mut self, now_ns: u64) {
        let Some(at) = self.connect_at_ns() else { return };
        if now_ns < at {
            return;
        }
        let Some(remote) = self.spec.remote else { return };
        match connect_to(&self.spec, &self.tcp, remote) {
            Ok(s) => self.conn = Conn::Connecting(s),
            Err(e) => {
                self.warn_once(&format!("connect to {remote}: {e}"));
                self.conn = Conn::Idle {
                    retry_at_ns: now_ns + self.retry_ns,
                };
            }
        }
    }

    /// Handle readiness of the path's descriptors: accept (into the pending connections),
    /// read pending connections' first records into `firsts`, finish connecting, flush, and
    /// read the path's connection's whole records into `records`. Returns whether the
    /// initiator's connection went up.
    pub fn on_ready(
        &mut self,
        now_ns: u64,
        max_record: usize,
        records: &mut Vec<Record>,
        firsts: &mut Vec<FirstRecord>,
    ) -> bool {
        let mut new = false;
        self.accept(now_ns);
        self.read_pending(now_ns, max_record, firsts);
        if let Conn::Connecting(s) = &self.conn {
            match s.take_error() {
                Ok(None) if s.peer_addr().is_ok() => {
                    let Conn::Connecting(s) = std::mem::replace(&mut self.conn, Conn::Idle { retry_at_ns: 0 }) else {
                        unreachable!()
                    };
                    self.set_up(s);
                    new = true;
                }
                Ok(None) => return false, // still connecting
                Ok(Some(e)) | Err(e) => {
                    self.warn_once(&format!("connect: {e}"));
                    self.drop_conn(now_ns);
                    return false;
                }
            }
        }
        if self.flush().is_err() {
            self.drop_conn(now_ns);
            return new;
        }
        if let Err(e) = self.read_records(max_record, records) {
            if e.kind() != io::ErrorKind::UnexpectedEof {
                self.warn_once(&format!("connection: {e}"));
            }
            self.drop_conn(now_ns);
        }
        new
    }

    /// Write one record (`sealed`, framed here); false if refused whole: no connection, or
    /// the send buffer full (counted in `send_buffer_drops`).
    pub fn send_record(&mut self, sealed: &[u8], now_ns: u64) -> bool {
        if !matches!(self.conn, Conn::Up(_)) {
            return false;
        }
        if self.flush().is_err() {
            self.drop_conn(now_ns);
            return false;
        }
        if !self.out.is_empty() {
            self.stats.send_buffer_drops += 1;
            return false;
        }
        self.out.extend_from_slice(&(sealed.len() as u16).to_be_bytes());
        self.out.extend_from_slice(sealed);
        let Conn::Up(s) = &mut self.conn else { unreachable!() };
        match s.write(&self.out) {
            Ok(n) => {
                self.out.drain(..n);
                true
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.out.clear();
                self.stats.send_buffer_drops += 1;
                false
            }
            Err(_) => {
                self.drop_conn(now_ns);
                false
            }
        }
    }

    /// The kernel's view of the connection (all zero without one).
    pub fn view(&self) -> StreamView {
        let Conn::Up(s) = &self.conn else {
            return StreamView::default();
        };
        let fd = s.as_raw_fd();
        let (cwnd_bytes, srtt_ns) = tcp_info(fd).map_or((0, 0), |i| {
            (
                u64::from(i.tcpi_snd_cwnd) * u64::from(i.tcpi_snd_mss),
                u64::from(i.tcpi_rtt) * 1000,
            )
        });
        StreamView {
            fill_bytes: crate::daemon::outq_bytes_fd(fd) + self.out.len() as u64,
            cwnd_bytes,
            srtt_ns,
        }
    }

    /// The pending connection `id` proved the key: it becomes the path's (a restarted
    /// initiator's replaces the old one), and what it sent after its first record is cut into
    /// `records`. False if `id` no longer waits.
    pub fn promote(&mut self, id: PendingId, now_ns: u64, max_record: usize, records: &mut Vec<Record>) -> bool {
        let Some(p) = self.pending.take(id) else { return false };
        self.set_up(p.conn.stream);
        self.inbuf = p.conn.inbuf;
        match split_records(&self.inbuf, max_record, records) {
            Ok(at) => {
                self.inbuf.drain(..at);
            }
            Err(_) => {
                self.stats.framing_errors += 1;
                self.drop_conn(now_ns);
            }
        }
        true
    }

    /// The pending connection `id` did not prove the key (`why`): it is dropped, and said so
    /// at most once a second.
    pub fn refuse(&mut self, id: PendingId, now_ns: u64, why: &str) {
        if let Some(p) = self.pending.take(id) {
            self.dropped(now_ns, p.conn.from, why);
        }
    }

    /// A pending connection from `from` dropped (`why`): counted, and said at most once a
    /// second.
    fn dropped(&mut self, now_ns: u64, from: SocketAddr, why: &str) {
        self.stats.unauthenticated += 1;
        if self.drops_log.event(now_ns) {
            self.say(
                now_ns,
                &format!("dropped an unauthenticated connection from {from}: {why} (such lines at most once a second)"),
            );
        }
    }

    /// Take the connections waiting on the listener as pending ones (a turn's worth: a flood
    /// of them cannot hold the loop); the oldest pending is pushed out when too many wait.
    fn accept(&mut self, now_ns: u64) {
        let Some(l) = &self.listener else { return };
        let mut accepted = Vec::new();
        while accepted.len() < MAX_PENDING {
            let Ok((s, from)) = l.accept() else { break };
            if s.set_nonblocking(true).is_ok() && s.set_nodelay(self.tcp.nodelay).is_ok() {
                accepted.push((s, from));
            }
        }
        for (stream, from) in accepted {
            let w = Waiting {
                stream,
                from,
                inbuf: Vec::new(),
            };
            if let (_, Some(old)) = self.pending.admit(w, now_ns) {
                self.dropped(now_ns, old.conn.from, "pushed out by newer connections");
            }
        }
    }

    /// Read what the pending connections sent; each whole first record goes to `firsts`, a
    /// connection that closed, failed or framed no record is dropped.
    fn read_pending(&mut self, now_ns: u64, max_record: usize, firsts: &mut Vec<FirstRecord>) {
        let mut failed = Vec::new();
        for p in self.pending.iter_mut() {
            match read_first(&mut p.conn, max_record) {
                Ok(Some(record)) => firsts.push(FirstRecord {
                    id: p.id,
                    from: p.conn.from,
                    record,
                }),
                Ok(None) => {}
                Err(why) => failed.push((p.id, why)),
            }
        }
        for (id, why) in failed {
            self.refuse(id, now_ns, &why);
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        let Conn::Up(s) = &mut self.conn else { return Ok(()) };
        match s.write(&self.out) {
            Ok(n) => {
                self.out.drain(..n);
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Read what the connection has (up to [`READ_CHUNK_BYTES`] a turn) and cut it into
    /// records. End of stream and framing errors are errors: the connection is dropped.
    fn read_records(&mut self, max_record: usize, records: &mut Vec<Record>) -> io::Result<()> {
        let Conn::Up(s) = &mut self.conn else { return Ok(()) };
        let start = self.inbuf.len();
        self.inbuf.resize(start + READ_CHUNK_BYTES, 0);
        let r = s.read(&mut self.inbuf[start..]);
        let n = match r {
            Ok(0) => {
                self.inbuf.truncate(start);
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => {
                self.inbuf.truncate(start);
                return Err(e);
            }
        };
        self.inbuf.truncate(start + n);
        match split_records(&self.inbuf, max_record, records) {
            Ok(at) => {
                self.inbuf.drain(..at);
                Ok(())
            }
            Err(len) => {
                self.stats.framing_errors += 1;
                Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a record of {len} B (most {max_record} B): not a tunnel peer, or another MTU"),
                ))
            }
        }
    }

    fn drop_conn(&mut self, now_ns: u64) {
        if matches!(self.conn, Conn::Up(_)) {
            self.stats.breaks += 1;
            self.say_change(now_ns, "connection closed");
        }
        self.out.clear();
        self.inbuf.clear();
        self.peer = None;
        self.conn = Conn::Idle {
            retry_at_ns: now_ns + self.retry_ns,
        };
    }

    fn warn_once(&self, what: &str) {
        if self.stats.breaks == 0 && self.stats.connections == 0 {
            eprintln!("mpsched tunnel: path `{}`: {what} (trying again)", self.spec.name);
        }
    }
}

fn plural(n: u64) -> &'static str {
    match n {
        1 => "connection",
        _ => "connections",
    }
}

/// The length of the record at the front of `buf` once it is whole (None: not yet), or the
/// impossible length found (0, or above `max_record`).
fn record_len(buf: &[u8], max_record: usize) -> Result<Option<usize>, usize> {
    let [a, b, ..] = *buf else { return Ok(None) };
    let len = usize::from(u16::from_be_bytes([a, b]));
    if len == 0 || len > max_record {
        return Err(len);
    }
    Ok((buf.len() >= RECORD_PREFIX_BYTES + len).then_some(len))
}

/// Cut the whole records at the front of `buf` into `records`; the bytes taken (a partial
/// record stays), or the impossible length found (0, or above `max_record`).
pub fn split_records(buf: &[u8], max_record: usize, records: &mut Vec<Record>) -> Result<usize, usize> {
    let mut at = 0;
    while let Some(len) = record_len(&buf[at..], max_record)? {
        records.push(buf[at + RECORD_PREFIX_BYTES..at + RECORD_PREFIX_BYTES + len].to_vec());
        at += RECORD_PREFIX_BYTES + len;
    }
    Ok(at)
}

/// Read a pending connection's bytes, never past its first record; that record once whole
/// (what follows it stays in `w.inbuf`), or why the connection is to be dropped.
fn read_first(w: &mut Waiting, max_record: usize) -> Result<Option<Record>, String> {
    let start = w.inbuf.len();
    w.inbuf.resize(RECORD_PREFIX_BYTES + max_record, 0);
    let got = w.stream.read(&mut w.inbuf[start..]);
    w.inbuf.truncate(start + *got.as_ref().unwrap_or(&0));
    match got {
        Ok(0) => return Err("closed before its first record".into()),
        Err(e) if e.kind() != io::ErrorKind::WouldBlock && e.kind() != io::ErrorKind::Interrupted => {
            return Err(e.to_string())
        }
        _ => {}
    }
    match record_len(&w.inbuf, max_record) {
        Err(len) => Err(format!("its first record's length, {len} B, is no message's")),
        Ok(None) => Ok(None),
        Ok(Some(len)) => {
            let record = w.inbuf[RECORD_PREFIX_BYTES..RECORD_PREFIX_BYTES + len].to_vec();
            w.inbuf.drain(..RECORD_PREFIX_BYTES + len);
            Ok(Some(record))
        }
    }
}

/// A TCP socket with the path's options, bound to its local address (and interface).
fn socket_for(spec: &PathSpec, tcp: &TcpSpec) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(spec.local), Type::STREAM, None)?;
    let ctx = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("path `{}`: {what}: {e}", spec.name));
    s.set_reuse_address(true).map_err(|e| ctx("SO_REUSEADDR", e))?;
    if let Some(dev) = &spec.interface {
        s.bind_device(Some(dev.as_bytes()))
            .map_err(|e| ctx(&format!("bind to interface {dev}"), e))?;
    }
    if let Some(cc) = &tcp.congestion {
        s.set_tcp_congestion(cc.as_bytes()).map_err(|e| {
            ctx(
                &format!("congestion control `{cc}` (see /proc/sys/net/ipv4/tcp_available_congestion_control)"),
                e,
            )
        })?;
    }
    // Set before connect and listen, so the window scale is chosen for them.
    if let Some(b) = tcp.send_buffer_bytes {
        s.set_send_buffer_size(b as usize).map_err(|e| ctx("SO_SNDBUF", e))?;
    }
    if let Some(b) = tcp.receive_buffer_bytes {
        s.set_recv_buffer_size(b as usize).map_err(|e| ctx("SO_RCVBUF", e))?;
    }
    s.set_nodelay(tcp.nodelay).map_err(|e| ctx("TCP_NODELAY", e))?;
    s.bind(&SockAddr::from(spec.local))
        .map_err(|e| ctx(&format!("bind {}", spec.local), e))?;
    s.set_nonblocking(true)?;
    Ok(s)
}

fn listen_on(spec: &PathSpec, tcp: &TcpSpec) -> io::Result<TcpListener> {
    let s = socket_for(spec, tcp)?;
    s.listen(4)
        .map_err(|e| io::Error::new(e.kind(), format!("path `{}`: listen: {e}", spec.name)))?;
    Ok(s.into())
}

fn connect_to(spec: &PathSpec, tcp: &TcpSpec, remote: SocketAddr) -> io::Result<TcpStream> {
    let s = socket_for(spec, tcp)?;
    match s.connect(&SockAddr::from(remote)) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(s.into())
}

/// `TCP_INFO` of a connected socket.
fn tcp_info(fd: RawFd) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain integers; all zeroes is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `info`.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, local: &str, remote: Option<&str>) -> PathSpec {
        PathSpec {
            id: 0,
            name: name.into(),
            local: local.parse().unwrap(),
            interface: None,
            remote: remote.map(|r| r.parse().unwrap()),
            backup: false,
            weight: 1,
        }
    }

    proptest::proptest! {
        /// Records framed and cut anywhere come out whole and in order, however the stream
        /// is cut; bytes of any kind never panic, and give either records or the bad length.
        #[test]
        fn records_survive_any_cut_and_garbage_is_refused_not_a_panic(
            recs in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 1..300), 0..20),
            cuts in proptest::collection::vec(1usize..700, 1..30),
            garbage in proptest::collection::vec(proptest::num::u8::ANY, 0..2000),
        ) {
            let mut stream = Vec::new();
            for r in &recs {
                stream.extend_from_slice(&(r.len() as u16).to_be_bytes());
                stream.extend_from_slice(r);
            }
            let (mut buf, mut got, mut fed) = (Vec::new(), Vec::new(), 0);
            for c in cuts.iter().cycle() {
                if fed == stream.len() {
                    break;
                }
                let end = (fed + c).min(stream.len());
                buf.extend_from_slice(&stream[fed..end]);
                fed = end;
                let at = split_records(&buf, 300, &mut got).unwrap();
                buf.drain(..at);
            }
            proptest::prop_assert_eq!(got, recs);
            proptest::prop_assert!(buf.is_empty());
            let mut out = Vec::new();
            match split_records(&garbage, 300, &mut out) {
                Ok(at) => proptest::prop_assert!(at <= garbage.len()),
                Err(len) => proptest::prop_assert!(len == 0 || len > 300),
            }
        }
    }

    fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    /// One turn of both ends at `now` (ms), the responder judging first records as the daemon
    /// does with its key: here a record is "authentic" if it starts with byte 1. Authentic
    /// first records are kept in `recs` with the rest.
    fn turn(a: &mut StreamPath, b: &mut StreamPath, now: u64, recs: &mut Vec<Record>) {
        let now = now * 1_000_000;
        let mut firsts = Vec::new();
        a.on_timer(now);
        b.on_timer(now);
        a.on_ready(now, 2000, recs, &mut firsts);
        b.on_ready(now, 2000, recs, &mut firsts);
        for f in firsts {
            match f.record.first() == Some(&1) {
                true => {
                    recs.push(f.record);
                    b.promote(f.id, now, 2000, recs);
                }
                false => b.refuse(f.id, now, "not authentic"),
            }
        }
    }

    /// A connected initiator `a` and responder `b` on loopback, `a`'s first record taken.
    fn connected_pair() -> (StreamPath, StreamPath, SocketAddr) {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let tcp = TcpSpec::default();
        let mut b = StreamPath::new(&spec("p", &addr.to_string(), None), &tcp, true, 1_000_000).unwrap();
        let mut a = StreamPath::new(
            &spec("p", "127.0.0.1:0", Some(&addr.to_string())),
            &tcp,
            false,
            1_000_000,
        )
        .unwrap();
        let mut recs = Vec::new();
        settle(&mut a, &mut b, 0, &mut recs);
        assert!(a.peer().is_some(), "connected");
        assert_eq!(b.peer(), None, "not the path's before a record proves the key");
        assert!(a.send_record(&[1, 0], 0));
        settle(&mut a, &mut b, 200, &mut recs);
        assert_eq!(recs, [vec![1, 0]]);
        assert!(b.peer().is_some() && b.pending() == 0);
        (a, b, addr)
    }

    fn settle(a: &mut StreamPath, b: &mut StreamPath, from_ms: u64, recs: &mut Vec<Record>) {
        for t in from_ms..from_ms + 200 {
            turn(a, b, t, recs);
            if a.peer().is_some() && a.out.is_empty() && t > from_ms + 20 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Records cross a loopback connection whole and in order, however the stream cuts them;
    /// a record of an impossible length breaks the connection, and the initiator connects
    /// again.
    #[test]
    fn records_cross_whole_and_a_bad_length_breaks_the_connection() {
        let (mut a, mut b, _) = connected_pair();
        let mut recs = Vec::new();
        let sent: Vec<Vec<u8>> = (1..=50u16).map(|n| vec![n as u8; usize::from(n) * 37]).collect();
        for r in &sent {
            assert!(a.send_record(r, 0));
        }
        settle(&mut a, &mut b, 400, &mut recs);
        assert_eq!(recs, sent);
        assert!(a.view().srtt_ns > 0 && a.view().cwnd_bytes > 0, "{:?}", a.view());
        // A record longer than the receiver takes.
        assert!(a.send_record(&[7; 2001], 0));
        recs.clear();
        settle(&mut a, &mut b, 600, &mut recs);
        settle(&mut a, &mut b, 800, &mut recs);
        assert!(recs.is_empty());
        assert_eq!(b.stats.framing_errors, 1);
        assert_eq!(a.stats.connections, 2, "the initiator connected again: {:?}", a.stats);
        assert!(a.send_record(&[1, 2, 3], 0));
        settle(&mut a, &mut b, 1000, &mut recs);
        assert_eq!(recs, [vec![1, 2, 3]], "the new connection's first record proves it");
        assert_eq!(b.stats.connections, 2);
    }

    /// Connections from anyone to the responder's port: one sends a record that does not
    /// authenticate, one a length no record has, one closes, one stays silent. None becomes
    /// the path's or disturbs it; each is dropped and counted, the silent one at its deadline;
    /// and a flood of silent ones holds at most [`MAX_PENDING`], the oldest pushed out.
    #[test]
    fn connections_that_do_not_prove_the_key_never_displace_the_path() {
        use std::io::Write as _;
        let (mut a, mut b, addr) = connected_pair();
        let path_peer = b.peer();
        let mut forged = TcpStream::connect(addr).unwrap();
        forged.write_all(&[0, 3, 9, 9, 9]).unwrap();
        let mut framing = TcpStream::connect(addr).unwrap();
        framing.write_all(&[0xff, 0xff, 0]).unwrap();
        drop(TcpStream::connect(addr).unwrap());
        let _silent = TcpStream::connect(addr).unwrap();
        let mut recs = Vec::new();
        assert!(a.send_record(&[1, 5], 0));
        settle(&mut a, &mut b, 400, &mut recs);
        for t in 600..700 {
            turn(&mut a, &mut b, t, &mut recs);
            if b.stats.unauthenticated == 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert_eq!(b.stats.unauthenticated, 3, "{:?}", b.stats);
        assert_eq!((b.peer(), b.pending(), b.stats.connections), (path_peer, 1, 1));
        assert!(a.send_record(&[1, 6], 0));
        settle(&mut a, &mut b, 700, &mut recs);
        assert_eq!(recs, [vec![1, 5], vec![1, 6]], "the path's records still arrive");
        // The silent one, after its deadline.
        b.on_timer(700_000_000 + PENDING_TIMEOUT_NS);
        assert_eq!((b.stats.unauthenticated, b.pending()), (4, 0));
        // Taken as they come (a single-threaded responder and a listen backlog of 4).
        let flood: Vec<TcpStream> = (0..MAX_PENDING as u64 + 4)
            .map(|t| {
                let c = TcpStream::connect(addr).unwrap();
                turn(&mut a, &mut b, 9_000 + t, &mut recs);
                c
            })
            .collect();
        for t in 0..200 {
            turn(&mut a, &mut b, 10_000 + t, &mut recs);
            if b.stats.unauthenticated == 8 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert_eq!((b.stats.unauthenticated, b.pending()), (8, MAX_PENDING), "4 pushed out");
        assert_eq!((b.peer(), b.stats.connections, a.stats.breaks), (path_peer, 1, 0));
        drop(flood);
    }
}
