//! TCP paths: one kernel TCP connection per path carrying the tunnel's sealed messages as
//! records (a 2-byte big-endian length, then the sealed datagram), as the AFMT paper's
//! subtunnels do. The kernel's TCP gives what AFMT weighs: the bytes queued and not yet
//! acknowledged (`SIOCOUTQ`), the congestion window and the smoothed RTT (`TCP_INFO`).
//!
//! The initiator connects from each path's local address to its remote, and connects again
//! after a break; the responder listens on each path's local address, and the newest
//! connection accepted there is the path's. Nothing is ever blocked on: a record that does
//! not fit the send buffer is refused whole (the caller counts the drop), and a partly written
//! one is finished before another is taken, so the stream stays framed.

use crate::config::{PathSpec, TcpSpec};
use socket2::{Domain, SockAddr, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};

/// Bytes of a record's length prefix.
pub const RECORD_PREFIX_BYTES: usize = 2;
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

/// One TCP path.
#[derive(Debug)]
pub struct StreamPath {
    spec: PathSpec,
    tcp: TcpSpec,
    listener: Option<TcpListener>,
    conn: Conn,
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
    pub fn connect_at_ns(&self) -> Option<u64> {
        match (&self.conn, &self.listener) {
            (Conn::Idle { retry_at_ns }, None) => Some(*retry_at_ns),
            _ => None,
        }
    }

    /// The initiator: start a connection if none is and it is time. A failure to start is
    /// tried again later, said once per break.
    pub fn poll_connect(&mut self, now_ns: u64) {
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

    /// Handle readiness of the path's descriptors: accept, finish connecting, flush, and read
    /// whole records into `records`. Returns whether the connection went up (a new one).
    pub fn on_ready(&mut self, now_ns: u64, max_record: usize, records: &mut Vec<Record>) -> bool {
        let mut new = self.accept();
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

    fn accept(&mut self) -> bool {
        let Some(l) = &self.listener else { return false };
        let mut newest = None;
        // The newest connection is the path's: a restarted initiator's replaces the old one.
        while let Ok((s, _)) = l.accept() {
            newest = Some(s);
        }
        let Some(s) = newest else { return false };
        if s.set_nonblocking(true).is_err() || s.set_nodelay(self.tcp.nodelay).is_err() {
            return false;
        }
        self.set_up(s);
        true
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
            eprintln!("mpsched tunnel: path `{}`: connection closed", self.spec.name);
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

/// Cut the whole records at the front of `buf` into `records`; the bytes taken (a partial
/// record stays), or the impossible length found (0, or above `max_record`).
pub fn split_records(buf: &[u8], max_record: usize, records: &mut Vec<Record>) -> Result<usize, usize> {
    let mut at = 0;
    while buf.len() - at >= RECORD_PREFIX_BYTES {
        let len = usize::from(u16::from_be_bytes([buf[at], buf[at + 1]]));
        if len == 0 || len > max_record {
            return Err(len);
        }
        if buf.len() - at < RECORD_PREFIX_BYTES + len {
            break;
        }
        records.push(buf[at + RECORD_PREFIX_BYTES..at + RECORD_PREFIX_BYTES + len].to_vec());
        at += RECORD_PREFIX_BYTES + len;
    }
    Ok(at)
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
            name: name.into(),
            local: local.parse().unwrap(),
            interface: None,
            remote: remote.map(|r| r.parse().unwrap()),
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

    /// Records cross a loopback connection whole and in order, however the stream cuts them;
    /// a record of an impossible length breaks the connection, and the initiator connects
    /// again.
    #[test]
    fn records_cross_whole_and_a_bad_length_breaks_the_connection() {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let tcp = TcpSpec::default();
        let mut b = StreamPath::new(&spec("p", &addr, None), &tcp, true, 1_000_000).unwrap();
        let mut a = StreamPath::new(&spec("p", "127.0.0.1:0", Some(&addr)), &tcp, false, 1_000_000).unwrap();
        let mut recs = Vec::new();
        let settle = |a: &mut StreamPath, b: &mut StreamPath, recs: &mut Vec<Record>| {
            for t in 0..200u64 {
                a.poll_connect(t * 1_000_000);
                a.on_ready(t * 1_000_000, 2000, recs);
                b.on_ready(t * 1_000_000, 2000, recs);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        };
        settle(&mut a, &mut b, &mut recs);
        assert!(a.peer().is_some() && b.peer().is_some(), "connected");
        let sent: Vec<Vec<u8>> = (1..=50u16).map(|n| vec![n as u8; usize::from(n) * 37]).collect();
        for r in &sent {
            assert!(a.send_record(r, 0));
        }
        settle(&mut a, &mut b, &mut recs);
        assert_eq!(recs, sent);
        assert!(a.view().srtt_ns > 0 && a.view().cwnd_bytes > 0, "{:?}", a.view());
        // A record longer than the receiver takes.
        assert!(a.send_record(&[7; 2001], 0));
        recs.clear();
        settle(&mut a, &mut b, &mut recs);
        assert!(recs.is_empty());
        assert_eq!(b.stats.framing_errors, 1);
        assert_eq!(a.stats.connections, 2, "the initiator connected again: {:?}", a.stats);
        assert!(a.send_record(&[1, 2, 3], 0));
        settle(&mut a, &mut b, &mut recs);
        assert_eq!(recs, [vec![1, 2, 3]]);
    }
}
