//! The traffic generator for fixed-size transfers on the kernel: iperf3 cannot draw sizes from
//! a distribution, and one iperf3 pair per flow does not scale to a workload's thousands.
//!
//! One server per receiving host accepts connections on [`TG_PORT`], reads each to its end and
//! answers one byte. One client per sending host reads a schedule (one line per flow: id,
//! destination, size, start, congestion control), opens a real kernel TCP connection per flow
//! at its start time, writes the bytes, half-closes, and waits for the answer. The completion
//! time is measured at the client, from just before `connect` to the answer: the handshake's
//! round trip and the answer's half round trip more than the simulator's (first byte sent to
//! last byte delivered), microseconds on namespaces without delay. Results are one JSON line per
//! flow on standard output. With [`Protocol::Mptcp`] (`--mptcp` on both ends) the sockets are
//! Multipath TCP's, and the namespace's MPTCP endpoints and limits decide the subflows.

use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The port the generator's servers listen on.
pub const TG_PORT: u16 = 5999;

/// `IPPROTO_MPTCP` (Linux 5.6 on; not in every libc crate release).
const IPPROTO_MPTCP: libc::c_int = 262;

/// The transport the generator's connections use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// TCP.
    #[default]
    Tcp,
    /// Multipath TCP (`IPPROTO_MPTCP` sockets): the kernel's path manager adds subflows as the
    /// namespace's MPTCP endpoints and limits allow, and falls back to TCP with a peer that
    /// does not speak it.
    Mptcp,
}

impl Protocol {
    /// A new blocking stream socket of this protocol, close-on-exec.
    fn socket(self) -> io::Result<std::os::fd::OwnedFd> {
        use std::os::fd::FromRawFd;
        let proto = match self {
            Protocol::Tcp => 0,
            Protocol::Mptcp => IPPROTO_MPTCP,
        };
        // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, proto) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(match (self, e.raw_os_error()) {
                (Protocol::Mptcp, Some(libc::EPROTONOSUPPORT | libc::EINVAL | libc::ENOPROTOOPT)) => io::Error::new(
                    e.kind(),
                    format!("this kernel does not open MPTCP sockets (CONFIG_MPTCP, sysctl net.mptcp.enabled): {e}"),
                ),
                _ => e,
            });
        }
        // SAFETY: `fd` is a descriptor just returned by socket(2) and owned by nobody else.
        Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
    }
}

/// How long a flow may take to connect before it counts as failed.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One flow of a client's schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduledFlow {
    /// The flow's index in the scenario.
    pub id: usize,
    /// The server's address.
    pub dst: Ipv4Addr,
    /// Bytes to send.
    pub size_bytes: u64,
    /// Start, nanoseconds after the run's time zero.
    pub start_ns: u64,
    /// Linux congestion control name (`cubic`, `reno`).
    pub cc: String,
    /// Nagle off (`TCP_NODELAY`).
    pub nodelay: bool,
    /// Segment size to clamp to (`TCP_MAXSEG`, timestamps included); 0: the kernel's.
    pub maxseg: u32,
}

/// A flow's outcome, one JSON line on the client's standard output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowResult {
    /// The flow's index in the scenario.
    pub id: usize,
    /// When it really started, seconds after time zero.
    pub start_s: f64,
    /// Completion time, s (None: it failed, or had not finished by the client's stop time).
    pub fct_s: Option<f64>,
    /// Of it, the time `connect` took (the handshake), s.
    #[serde(default)]
    pub connect_s: Option<f64>,
    /// Bytes delivered: the size for a finished transfer; for one still running at the stop
    /// time, what the receiver had acknowledged by then (`tcpi_bytes_acked`); 0 for one that
    /// never connected.
    pub bytes: u64,
    /// What went wrong, if anything (`not finished by the end of the run` for one still running
    /// at the stop time).
    pub error: Option<String>,
    /// The kernel's own figures of the connection (`TCP_INFO`) when it finished or at the stop
    /// time; None where the socket gave none (it never connected, or the kernel answers no
    /// `TCP_INFO` on it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_info: Option<TcpInfo>,
}

/// What `getsockopt(TCP_INFO)` says of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TcpInfo {
    /// Segments retransmitted over the connection (`tcpi_total_retrans`).
    pub retransmitted_segments: u64,
    /// Smoothed round-trip time, ms (`tcpi_rtt`).
    pub srtt_ms: f64,
    /// Congestion window, KiB (`tcpi_snd_cwnd` segments of `tcpi_snd_mss`).
    pub cwnd_kib: f64,
    /// Bytes the receiver acknowledged (`tcpi_bytes_acked`).
    pub bytes_acked: u64,
}

/// `getsockopt(TCP_INFO)` on `fd`, None where it fails.
fn tcp_info(fd: std::os::fd::RawFd) -> Option<TcpInfo> {
    // SAFETY: tcp_info is plain old data; all zeroes is a valid value.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: a descriptor the caller keeps open; a pointer to a live tcp_info and its size.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut ti as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    // Fields up to tcpi_bytes_acked (Linux 4.1) must be there.
    let needed = std::mem::offset_of!(libc::tcp_info, tcpi_bytes_acked) + 8;
    if rc != 0 || (len as usize) < needed {
        return None;
    }
    Some(TcpInfo {
        retransmitted_segments: u64::from(ti.tcpi_total_retrans),
        srtt_ms: f64::from(ti.tcpi_rtt) / 1000.0,
        cwnd_kib: f64::from(ti.tcpi_snd_cwnd) * f64::from(ti.tcpi_snd_mss) / 1024.0,
        bytes_acked: ti.tcpi_bytes_acked,
    })
}

/// A schedule as text: `id dst size start_ns cc nodelay maxseg` per line.
pub fn format_schedule(flows: &[ScheduledFlow]) -> String {
    flows
        .iter()
        .map(|f| {
            format!(
                "{} {} {} {} {} {} {}\n",
                f.id,
                f.dst,
                f.size_bytes,
                f.start_ns,
                f.cc,
                u8::from(f.nodelay),
                f.maxseg
            )
        })
        .collect()
}

/// Parse [`format_schedule`]'s text.
pub fn parse_schedule(text: &str) -> Result<Vec<ScheduledFlow>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(n, line)| {
            let bad = |what: &str| format!("schedule line {}: {what}: `{line}`", n + 1);
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.len() != 7 {
                return Err(bad("expected `id dst size start_ns cc nodelay maxseg`"));
            }
            Ok(ScheduledFlow {
                id: w[0].parse().map_err(|_| bad("bad id"))?,
                dst: w[1].parse().map_err(|_| bad("bad address"))?,
                size_bytes: w[2].parse().map_err(|_| bad("bad size"))?,
                start_ns: w[3].parse().map_err(|_| bad("bad start"))?,
                cc: w[4].to_string(),
                nodelay: w[5] == "1",
                maxseg: w[6].parse().map_err(|_| bad("bad maxseg"))?,
            })
        })
        .collect()
}

/// Serve until killed: read every connection to its end, answer one byte.
pub fn serve(bind: Ipv4Addr, port: u16, protocol: Protocol) -> io::Result<()> {
    let listener = listen_on(protocol, SocketAddrV4::new(bind, port))?;
    for conn in listener.incoming() {
        let Ok(mut s) = conn else { continue };
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => return,
                }
            }
            let _ = s.write_all(&[1]);
        });
    }
    Ok(())
}

/// A listening socket of `protocol` on `addr` (address reuse on, as std's listener sets it).
fn listen_on(protocol: Protocol, addr: SocketAddrV4) -> io::Result<TcpListener> {
    let fd = protocol.socket()?;
    set_int(&fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    let sa = sockaddr(addr);
    // SAFETY: a valid descriptor; a pointer to a live sockaddr_in of the size given.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })?;
    // SAFETY: a bound stream socket.
    check(unsafe { libc::listen(fd.as_raw_fd(), 1024) })?;
    Ok(TcpListener::from(fd))
}

fn sockaddr(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// `setsockopt` of an integer option.
fn set_int(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: a valid descriptor; a pointer to a live c_int of the size given.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Nanoseconds since the Unix epoch.
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// One result line on `out`.
fn write_line<W: Write>(out: &Mutex<W>, r: &FlowResult) {
    if let (Ok(line), Ok(mut w)) = (serde_json::to_string(r), out.lock()) {
        let _ = writeln!(w, "{line}");
        let _ = w.flush();
    }
}

/// The flows running now: their start and, once connected, their socket. At the stop time the
/// client reports them from here and marks the run ended; a flow that ends after that reports
/// nothing. A flow's socket is closed only while this is locked and after it has left the map,
/// so that the stop never reads a descriptor that has been closed (and perhaps reused).
#[derive(Default)]
struct Running {
    flows: std::collections::BTreeMap<usize, (f64, Option<std::os::fd::RawFd>)>,
    ended: bool,
}

/// Run `flows`, each at `t0 + start`, and write one [`FlowResult`] line per flow to `out` as
/// each ends. Returns when every flow has ended or, with `stop`, at that time: each flow still
/// running is then reported as not finished, with what its receiver had acknowledged and its
/// `TCP_INFO`, and each not yet started as not started.
pub fn run_client(
    flows: Vec<ScheduledFlow>,
    t0: SystemTime,
    stop: Option<SystemTime>,
    port: u16,
    protocol: Protocol,
    out: impl Write + Send + 'static,
) {
    let out = Arc::new(Mutex::new(out));
    let running = Arc::new(Mutex::new(Running::default()));
    let since_t0 = move |t: SystemTime| t.duration_since(t0).map_or(0.0, |d| d.as_secs_f64());
    let mut threads = Vec::with_capacity(flows.len());
    let mut flows = flows;
    flows.sort_by_key(|f| f.start_ns);
    let mut not_started = Vec::new();
    for f in flows {
        let at = t0 + Duration::from_nanos(f.start_ns);
        if stop.is_some_and(|s| at >= s) {
            not_started.push(f.id);
            continue;
        }
        if let Ok(wait) = at.duration_since(SystemTime::now()) {
            std::thread::sleep(wait);
        }
        let out = Arc::clone(&out);
        let running = Arc::clone(&running);
        threads.push(std::thread::spawn(move || {
            let started = SystemTime::now();
            let start_s = since_t0(started);
            if let Ok(mut r) = running.lock() {
                r.flows.insert(f.id, (start_s, None));
            }
            let Some((outcome, info)) = transfer(&f, port, protocol, &running) else {
                return; // the stop has reported it
            };
            let r = FlowResult {
                id: f.id,
                start_s,
                fct_s: outcome.as_ref().ok().map(|d| d.0.as_secs_f64()),
                connect_s: outcome.as_ref().ok().map(|d| d.1.as_secs_f64()),
                bytes: match &outcome {
                    Ok(_) => f.size_bytes,
                    Err(_) => info.map_or(0, |i| i.bytes_acked),
                },
                error: outcome.err().map(|e| e.to_string()),
                tcp_info: info,
            };
            write_line(&out, &r);
        }));
    }
    let Some(stop) = stop else {
        for t in threads {
            let _ = t.join();
        }
        return;
    };
    while !threads.iter().all(|t| t.is_finished()) && SystemTime::now() < stop {
        std::thread::sleep(Duration::from_millis(5));
    }
    let Ok(mut r) = running.lock() else { return };
    r.ended = true;
    for (&id, &(start_s, fd)) in &r.flows {
        let info = fd.and_then(tcp_info);
        let res = FlowResult {
            id,
            start_s,
            fct_s: None,
            connect_s: None,
            bytes: info.map_or(0, |i| i.bytes_acked),
            error: Some(
                if fd.is_some() {
                    "not finished by the end of the run"
                } else {
                    "not connected by the end of the run"
                }
                .into(),
            ),
            tcp_info: info,
        };
        write_line(&out, &res);
    }
    for id in not_started {
        let res = FlowResult {
            id,
            start_s: since_t0(stop),
            fct_s: None,
            connect_s: None,
            bytes: 0,
            error: Some("not started by the end of the run".into()),
            tcp_info: None,
        };
        write_line(&out, &res);
    }
}

/// A transfer's whole time and its handshake's.
type Times = (Duration, Duration);

/// One flow: connect, set its congestion control, send, half-close, wait for the answer.
/// Returns the whole time and the handshake's, and the connection's `TCP_INFO` at its end;
/// None when the stop came first (it has been reported).
fn transfer(
    f: &ScheduledFlow,
    port: u16,
    protocol: Protocol,
    running: &Mutex<Running>,
) -> Option<(io::Result<Times>, Option<TcpInfo>)> {
    let started = std::time::Instant::now();
    let addr = SocketAddrV4::new(f.dst, port);
    let connected = if f.maxseg > 0 || protocol == Protocol::Mptcp {
        // TCP_MAXSEG must be set before the handshake, and MPTCP is chosen at socket(2): both
        // on a socket of our own.
        connect_own(addr, f.maxseg, protocol)
    } else {
        TcpStream::connect_timeout(&addr.into(), CONNECT_TIMEOUT)
    };
    let leave = |s: Option<TcpStream>| -> bool {
        let Ok(mut r) = running.lock() else { return false };
        r.flows.remove(&f.id);
        drop(s); // closed while locked: see `Running`
        !r.ended
    };
    let mut s = match connected {
        Ok(s) => s,
        Err(e) => return leave(None).then_some((Err(e), None)),
    };
    let connect_time = started.elapsed();
    match running.lock() {
        Ok(mut r) if !r.ended => {
            if let Some(e) = r.flows.get_mut(&f.id) {
                e.1 = Some(s.as_raw_fd());
            }
        }
        _ => return None,
    }
    let result = (|| -> io::Result<Times> {
        set_congestion_control(&s, &f.cc)?;
        s.set_nodelay(f.nodelay)?;
        let chunk = vec![0u8; 64 * 1024];
        let mut left = f.size_bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            s.write_all(&chunk[..n])?;
            left -= n as u64;
        }
        s.shutdown(std::net::Shutdown::Write)?;
        let mut answer = [0u8; 1];
        s.read_exact(&mut answer)?;
        Ok((started.elapsed(), connect_time))
    })();
    let info = tcp_info(s.as_raw_fd());
    leave(Some(s)).then_some((result, info))
}

/// A blocking connection of `protocol` whose segments are clamped to `maxseg` bytes when it is
/// not 0 (`TCP_MAXSEG`, as iperf3's `-M`).
fn connect_own(addr: SocketAddrV4, maxseg: u32, protocol: Protocol) -> io::Result<TcpStream> {
    let fd = protocol.socket()?;
    if maxseg > 0 {
        set_int(&fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, maxseg as libc::c_int)?;
    }
    let sa = sockaddr(addr);
    // SAFETY: a valid descriptor; a pointer to a live sockaddr_in of the size given.
    check(unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })?;
    Ok(TcpStream::from(fd))
}

/// `setsockopt(TCP_CONGESTION)`: the flow's controller, as iperf3's `-C` sets it.
fn set_congestion_control(s: &TcpStream, cc: &str) -> io::Result<()> {
    let name = cc.as_bytes();
    // SAFETY: a valid socket descriptor, a pointer to `name.len()` readable bytes.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Read a schedule from `input` (a client's standard input).
pub fn read_schedule(mut input: impl Read) -> Result<Vec<ScheduledFlow>, String> {
    let mut text = String::new();
    input
        .read_to_string(&mut text)
        .map_err(|e| format!("reading the schedule: {e}"))?;
    parse_schedule(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_round_trip_and_bad_lines_are_named() {
        let flows = vec![ScheduledFlow {
            id: 7,
            dst: Ipv4Addr::new(10, 0, 0, 2),
            size_bytes: 1_500_000,
            start_ns: 25_000_000,
            cc: "cubic".into(),
            nodelay: false,
            maxseg: 1460,
        }];
        assert_eq!(parse_schedule(&format_schedule(&flows)).unwrap(), flows);
        let e = parse_schedule("1 10.0.0.2 100 5 cubic\n").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
        assert!(parse_schedule("1 10.0.0.300 100 5 cubic 0 0").is_err());
    }

    /// Server and client over loopback: every flow completes and is reported once.
    #[test]
    fn flows_complete_over_loopback() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        std::thread::spawn(move || serve(Ipv4Addr::LOCALHOST, port, Protocol::Tcp));
        std::thread::sleep(Duration::from_millis(100));
        let flows: Vec<ScheduledFlow> = (0..5)
            .map(|i| ScheduledFlow {
                id: i,
                dst: Ipv4Addr::LOCALHOST,
                size_bytes: 10_000 * (i as u64 + 1),
                start_ns: 1_000_000 * i as u64,
                cc: "reno".into(),
                nodelay: i % 2 == 0,
                maxseg: if i == 1 { 1000 } else { 0 },
            })
            .collect();
        let out = SharedBuf::default();
        run_client(flows, SystemTime::now(), None, port, Protocol::Tcp, out.clone());
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let mut results: Vec<FlowResult> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        results.sort_by_key(|r| r.id);
        assert_eq!(results.len(), 5);
        for (i, r) in results.iter().enumerate() {
            assert_eq!(r.error, None);
            assert_eq!(r.bytes, 10_000 * (i as u64 + 1));
            assert!(r.fct_s.unwrap() > 0.0 && r.start_s >= i as f64 * 1e-3 - 1e-4, "{r:?}");
            // The kernel's own figures of the connection, measured, not zeros made up.
            let ti = r.tcp_info.expect("TCP_INFO of a finished transfer");
            assert!(
                ti.bytes_acked >= r.bytes && ti.cwnd_kib > 0.0 && ti.srtt_ms > 0.0,
                "{r:?}"
            );
        }
        let bad = ScheduledFlow {
            id: 9,
            dst: Ipv4Addr::LOCALHOST,
            size_bytes: 1,
            start_ns: 0,
            cc: "no-such-controller".into(),
            nodelay: false,
            maxseg: 0,
        };
        let out = SharedBuf::default();
        run_client(vec![bad], SystemTime::now(), None, port, Protocol::Tcp, out.clone());
        let r: FlowResult = serde_json::from_slice(out.0.lock().unwrap().trim_ascii_end()).unwrap();
        assert!(r.fct_s.is_none() && r.error.is_some(), "{r:?}");
    }

    /// Issue 27 item 12: a transfer still running at the client's stop time is reported then,
    /// as not finished, with the bytes its receiver had acknowledged and its TCP_INFO (it was
    /// killed and reported nothing, so the kernel showed 0 bytes and made-up zeros); one whose
    /// start comes after the stop is reported as not started.
    #[test]
    fn transfers_running_at_the_stop_are_reported_with_what_was_delivered() {
        // A server that accepts and never reads: the transfer stalls once the buffers fill.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for c in l.incoming() {
                held.push(c);
            }
        });
        let flow = |id: usize, start_ns: u64| ScheduledFlow {
            id,
            dst: Ipv4Addr::LOCALHOST,
            size_bytes: 200_000_000,
            start_ns,
            cc: "cubic".into(),
            nodelay: false,
            maxseg: 0,
        };
        let t0 = SystemTime::now();
        let out = SharedBuf::default();
        let stop = t0 + Duration::from_millis(300);
        run_client(
            vec![flow(1, 0), flow(2, 5_000_000_000)],
            t0,
            Some(stop),
            port,
            Protocol::Tcp,
            out.clone(),
        );
        assert!(
            SystemTime::now() < stop + Duration::from_millis(200),
            "the stop is kept"
        );
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let mut results: Vec<FlowResult> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        results.sort_by_key(|r| r.id);
        assert_eq!(results.len(), 2, "{text}");
        let (running, later) = (&results[0], &results[1]);
        assert_eq!(running.fct_s, None);
        assert_eq!(running.error.as_deref(), Some("not finished by the end of the run"));
        let ti = running.tcp_info.expect("TCP_INFO of the running transfer");
        assert!(
            running.bytes > 0 && running.bytes == ti.bytes_acked && running.bytes < 200_000_000,
            "{running:?}"
        );
        assert_eq!(later.error.as_deref(), Some("not started by the end of the run"));
        assert_eq!((later.bytes, later.tcp_info), (0, None));
    }

    /// The kernel's count of MP_CAPABLE SYNs received in this namespace (`MPTcpExt` of
    /// `/proc/net/netstat`), None without MPTCP.
    fn mp_capable_syns_received() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/net/netstat").ok()?;
        let mut lines = text.lines().filter(|l| l.starts_with("MPTcpExt:"));
        let (names, values) = (lines.next()?, lines.next()?);
        let i = names.split_whitespace().position(|n| n == "MPCapableSYNRX")?;
        values.split_whitespace().nth(i)?.parse().ok()
    }

    /// With `Protocol::Mptcp` both ends open MPTCP sockets: the transfers complete, and the
    /// kernel counts an MP_CAPABLE SYN received for each (loopback, one subflow each).
    #[test]
    fn flows_complete_over_loopback_with_mptcp() {
        let Some(before) = mp_capable_syns_received() else {
            skip(
                "flows_complete_over_loopback_with_mptcp",
                "this kernel has no MPTCP (no MPTcpExt counters in /proc/net/netstat)",
                std::env::var("CI").ok().as_deref(),
            );
            return;
        };
        let listener = listen_on(Protocol::Mptcp, SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        std::thread::spawn(move || serve(Ipv4Addr::LOCALHOST, port, Protocol::Mptcp));
        std::thread::sleep(Duration::from_millis(100));
        let flows: Vec<ScheduledFlow> = (0..3)
            .map(|i| ScheduledFlow {
                id: i,
                dst: Ipv4Addr::LOCALHOST,
                size_bytes: 200_000,
                start_ns: 0,
                cc: "cubic".into(),
                nodelay: false,
                maxseg: 0,
            })
            .collect();
        let out = SharedBuf::default();
        run_client(flows, SystemTime::now(), None, port, Protocol::Mptcp, out.clone());
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let results: Vec<FlowResult> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(results.len(), 3);
        assert!(
            results.iter().all(|r| r.error.is_none() && r.bytes == 200_000),
            "{text}"
        );
        // The kernel answers TCP_INFO on an MPTCP socket with its first subflow's figures.
        assert!(results.iter().all(|r| r.tcp_info.is_some()), "{text}");
        let after = mp_capable_syns_received().unwrap();
        assert!(after >= before + 3, "MP_CAPABLE SYNs received: {before} -> {after}");
    }

    /// A test that cannot run here says so where it shows (the harness captures `eprintln!`,
    /// not writes to the stderr handle) and counts as passed, the standard harness having no
    /// run-time skip; under `CI=true` it fails instead, as the root tests' harness does.
    fn skip(test: &str, why: &str, ci: Option<&str>) {
        match skip_line(test, why, ci) {
            Ok(line) => {
                let _ = writeln!(io::stderr(), "{line}");
            }
            Err(e) => panic!("{e}"),
        }
    }

    /// What [`skip`] says, or why it must fail.
    fn skip_line(test: &str, why: &str, ci: Option<&str>) -> Result<String, String> {
        if ci == Some("true") {
            return Err(format!("CI=true: {test} must run, not skip: {why}"));
        }
        Ok(format!("SKIPPED {test}: {why}"))
    }

    /// Issue 27 item 15: a skip is said, and is a failure under CI=true (it used to be silent,
    /// and failed under any CI value but passed where CI was unset).
    #[test]
    fn a_skipped_test_says_so_and_fails_under_ci() {
        assert_eq!(skip_line("t", "no tool", None).unwrap(), "SKIPPED t: no tool");
        assert!(skip_line("t", "no tool", Some("false")).is_ok());
        let e = skip_line("t", "no tool", Some("true")).unwrap_err();
        assert!(e.contains("CI=true") && e.contains("no tool"), "{e}");
    }

    #[derive(Clone, Default)]
    struct SharedBuf(Arc<Mutex<Vec<u8>>>);

    impl Write for SharedBuf {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}
