//! Rate-controlled UDP flows on the kernel (`[flow.rate_control]`): a paced sender and its
//! receiver, run as `mpsched trafficgen paced-send` / `paced-recv` inside the host namespaces
//! (iperf3 has no rate controller to drive).
//!
//! The sender owns one UDP socket bound to the flow's source port. It builds its controller
//! with [`RateControl::sender`], as the simulator does, and sends a datagram of the flow's
//! payload size whenever [`mpsched_transport::rate::RateSender`] has one due, with the flow's
//! DSCP and ECN codepoint (`IP_TOS`), each carrying its number and its send time
//! ([`mpsched_core::rate_wire`]). It waits for the next datagram in `ppoll` on that socket until
//! [`SPIN_NS`] before it is due, then spins (timer slack set to 1 ns): a notification wakes it
//! at once. It never banks credit: that is the `RateSender`'s rule. What arrives on the socket
//! goes to the controller: a CNP from the receiver's address and port (DCQCN), a switch's rate
//! feedback from anywhere (PMQECN).
//!
//! The receiver binds the flow's destination address and port (shared with other flows'
//! receivers there, each connected to its own sender), reads each datagram's TOS byte
//! (`IP_RECVTOS`), counts packets and bytes per sample interval, loss from gaps in the numbers,
//! reordering, and one-way delay (both ends read `CLOCK_MONOTONIC`, which every namespace of a
//! machine shares), and is DCQCN's notification point: a CNP back to the datagram's source for
//! a CE-marked datagram, at most one per `cnp_interval`
//! ([`mpsched_transport::rate::NotificationPoint`], the simulator's).
//!
//! Both read a JSON configuration ([`SenderConfig`], [`ReceiverConfig`]) on standard input and
//! write [`Report`]s, one JSON line each, on standard output.

use mpsched_core::headers::FeedbackHeader;
use mpsched_core::rate_wire::{self, DataHeader, RateMessage, DATA_HEADER_BYTES};
use mpsched_scenario::RateControl;
use mpsched_transport::rate::{NotificationPoint, RateSender};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, SystemTime};

/// The sender spins, rather than sleeps, this close to a datagram's due time.
pub const SPIN_NS: u64 = 20_000;
/// The longest wait in `ppoll` before the loop looks at the clock again.
const MAX_SLEEP_NS: u64 = 10_000_000;
/// Socket buffers asked for (with `SO_*BUFFORCE` as root, else up to the system's maximum):
/// packets queued at a remote bottleneck count against the sender's send buffer on one kernel.
const SOCKET_BUFFER_BYTES: libc::c_int = 16 << 20;

/// What a paced sender is told.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SenderConfig {
    /// The flow's name (in error messages).
    pub flow: String,
    /// The receiver's address and port.
    pub dst: SocketAddrV4,
    /// The address to send from (0.0.0.0: the kernel's choice).
    pub bind: Ipv4Addr,
    /// The flow's source port.
    pub src_port: u16,
    /// UDP payload bytes per datagram (what the rate counts), at least [`DATA_HEADER_BYTES`].
    pub payload_bytes: u32,
    /// The TOS byte: DSCP << 2 | ECN.
    pub tos: u8,
    /// The controller, as the scenario gives it.
    pub rate_control: RateControl,
    /// The run's time zero, ns since the Unix epoch.
    pub t0_unix_ns: u64,
    /// The flow's start and stop, ns after time zero.
    pub start_ns: u64,
    /// See `start_ns`.
    pub stop_ns: u64,
    /// Report the rate every this many ns after time zero.
    pub interval_ns: u64,
}

/// What a paced flow's receiver is told.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReceiverConfig {
    /// The flow's name (in error messages).
    pub flow: String,
    /// The address and port to receive on.
    pub bind: SocketAddrV4,
    /// The run's time zero, ns since the Unix epoch.
    pub t0_unix_ns: u64,
    /// Stop this many ns after time zero (the run's end and its drain).
    pub stop_ns: u64,
    /// Report every this many ns after time zero.
    pub interval_ns: u64,
    /// DCQCN: at most one CNP per this many ns (None: send none).
    pub cnp_interval_ns: Option<u64>,
    /// The sender's address and port, when known: the socket then shares its port with other
    /// flows' receivers (`SO_REUSEPORT`) and is connected to the sender, so the kernel hands it
    /// this flow's datagrams only (None: any sender's, the port its own).
    #[serde(default)]
    pub peer: Option<SocketAddrV4>,
}

/// One line of a paced sender's or receiver's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Report {
    /// The sender at the end of sample interval `k`.
    SenderInterval {
        /// The interval, from 0 at time zero.
        k: u64,
        /// The controller's rate then, bit/s.
        rate_bps: u64,
        /// Datagrams sent in the interval.
        sent_pkts: u64,
    },
    /// A switch's rate feedback reached the sender.
    Feedback {
        /// When, s after time zero.
        t_s: f64,
        /// What it carried.
        queue: u8,
        /// See [`FeedbackHeader`].
        qlen_pkts: u16,
        /// See [`FeedbackHeader`].
        measured_kbps: u32,
        /// See [`FeedbackHeader`].
        target_kbps: u32,
        /// The controller's rate before and after it, bit/s.
        rate_before_bps: u64,
        /// See `rate_before_bps`.
        rate_after_bps: u64,
    },
    /// The sender's totals.
    SenderEnd(SenderTotals),
    /// What arrived in receiver sample interval `k`.
    ReceiverInterval {
        /// The interval, from 0 at time zero.
        k: u64,
        /// Payload bytes and datagrams received.
        bytes: u64,
        /// See `bytes`.
        pkts: u64,
        /// Datagrams missing by the numbers (gaps opened, less late datagrams that filled one).
        lost_pkts: i64,
        /// CE-marked datagrams.
        ce_pkts: u64,
        /// CNPs sent.
        cnps: u64,
        /// Mean one-way delay, ms (None without datagrams).
        owd_mean_ms: Option<f64>,
    },
    /// The receiver's totals.
    ReceiverEnd(ReceiverTotals),
    /// What went wrong.
    Error {
        /// The message.
        message: String,
    },
}

/// A paced sender's totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SenderTotals {
    /// Datagrams and payload bytes sent.
    pub sent_pkts: u64,
    /// See `sent_pkts`.
    pub sent_bytes: u64,
    /// Datagrams the controller had due that the socket refused (a full send buffer): not
    /// sent, not numbered.
    pub send_refused: u64,
    /// CNPs and rate feedback taken by the controller.
    pub cnps: u64,
    /// See `cnps`.
    pub feedback: u64,
    /// Datagrams that arrived and were neither (another sender's, or malformed).
    pub ignored: u64,
    /// The controller's rate at the end, bit/s.
    pub rate_bps: u64,
    /// The controller's mean rate over the flow's time (what was asked), and the rate the
    /// datagrams went at from start to stop (what was achieved), Mbit/s.
    pub asked_mbps: f64,
    /// See `asked_mbps`.
    pub achieved_mbps: f64,
    /// How late datagrams left after their due time, mean and maximum, µs.
    pub late_mean_us: f64,
    /// See `late_mean_us`.
    pub late_max_us: f64,
    /// The sending thread's CPU time (user, system) and the wall time from start to stop, s.
    pub cpu_user_s: f64,
    /// See `cpu_user_s`.
    pub cpu_sys_s: f64,
    /// See `cpu_user_s`.
    pub wall_s: f64,
}

/// A paced flow receiver's totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceiverTotals {
    /// Data datagrams and their payload bytes received.
    pub pkts: u64,
    /// See `pkts`.
    pub bytes: u64,
    /// The highest number seen, plus one: what the sender had sent at least.
    pub expected_pkts: u64,
    /// Datagrams that arrived after a higher-numbered one.
    pub reordered_pkts: u64,
    /// CE-marked datagrams, and CNPs sent.
    pub ce_pkts: u64,
    /// See `ce_pkts`.
    pub cnps: u64,
    /// One-way delay, mean and maximum, ms (None without datagrams).
    pub owd_mean_ms: Option<f64>,
    /// See `owd_mean_ms`.
    pub owd_max_ms: Option<f64>,
    /// Datagrams that were not a data datagram.
    pub ignored: u64,
}

/// `CLOCK_MONOTONIC`, ns.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a pointer to a live timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

/// The monotonic clock's reading at Unix time `t0_unix_ns` (the two clocks read back to back).
fn monotonic_at_unix(t0_unix_ns: u64) -> i128 {
    let mono = i128::from(monotonic_ns());
    let real = i128::from(crate::trafficgen::unix_ns(SystemTime::now()));
    mono - (real - i128::from(t0_unix_ns))
}

/// Nanoseconds after a time zero, on the monotonic clock.
#[derive(Clone, Copy, Debug)]
struct Clock {
    zero: i128,
}

impl Clock {
    fn at_unix(t0_unix_ns: u64) -> Clock {
        Clock {
            zero: monotonic_at_unix(t0_unix_ns),
        }
    }

    /// ns after time zero (0 before it).
    fn now(&self) -> u64 {
        self.rel(monotonic_ns())
    }

    /// A monotonic reading as ns after time zero (0 before it).
    fn rel(&self, mono_ns: u64) -> u64 {
        u64::try_from(i128::from(mono_ns) - self.zero).unwrap_or(0)
    }
}

/// How to wait from `now` until `due` (ns): sleep this long and look again, or (None) spin
/// the last [`SPIN_NS`] or go at once.
pub fn sleep_before(now: u64, due: u64) -> Option<u64> {
    let left = due.saturating_sub(now);
    (left > SPIN_NS).then(|| (left - SPIN_NS).min(MAX_SLEEP_NS))
}

/// Wait until `due` (ns after `clock`'s zero) or until `sock` is readable: whether it is.
fn wait_until(sock: &UdpSocket, clock: &Clock, due: u64) -> io::Result<bool> {
    loop {
        let now = clock.now();
        if now >= due {
            return Ok(false);
        }
        let Some(sleep) = sleep_before(now, due) else {
            while clock.now() < due {
                std::hint::spin_loop();
            }
            return Ok(false);
        };
        if readable_within(sock, sleep)? {
            return Ok(true);
        }
    }
}

/// `ppoll` on `sock` for at most `ns`: whether it is readable.
fn readable_within(sock: &UdpSocket, ns: u64) -> io::Result<bool> {
    let mut fds = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: one live pollfd, a live timespec, no signal mask.
    let rc = unsafe { libc::ppoll(&mut fds, 1, &ts, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(rc > 0 && fds.revents & libc::POLLIN != 0)
}

/// `setsockopt` of an integer option.
fn set_int(sock: &UdpSocket, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: a valid descriptor; a pointer to a live c_int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A socket buffer of [`SOCKET_BUFFER_BYTES`]: forced as root, else as large as allowed.
fn large_buffer(sock: &UdpSocket, force: libc::c_int, plain: libc::c_int) {
    if set_int(sock, libc::SOL_SOCKET, force, SOCKET_BUFFER_BYTES).is_err() {
        let _ = set_int(sock, libc::SOL_SOCKET, plain, SOCKET_BUFFER_BYTES);
    }
}

/// Timer slack of 1 ns for this thread, so that `ppoll` wakes when asked (the default slack
/// is 50 µs).
fn fine_timer_slack() {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// This thread's CPU time (user, system), s.
fn thread_cpu_s() -> (f64, f64) {
    // SAFETY: rusage is plain old data; all zeroes is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a pointer to a live rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// One report line on `out`; a write error ends the run (the reader is gone).
fn emit(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let line = serde_json::to_string(r).map_err(io::Error::other)?;
    writeln!(out, "{line}")?;
    out.flush()
}

/// The sender's state between its steps.
struct Sender {
    cfg: SenderConfig,
    sock: UdpSocket,
    clock: Clock,
    rs: RateSender,
    datagram: Vec<u8>,
    seq: u64,
    totals: SenderTotals,
    late_sum_ns: u128,
    /// The controller's rate integrated over time, bit/s x ns, and when last added to.
    rate_ns: u128,
    rate_at: u64,
    /// The next interval to report and datagrams sent in the current one.
    next_k: u64,
    sent_in_k: u64,
    /// When the socket was last read, ns after time zero.
    drained_at: u64,
}

/// The most losses one datagram's number may stand for (a gap of 2^32 is more than any run
/// sends; a larger jump is a stray or forged number).
const MAX_SEQ_JUMP: u64 = 1 << 32;

/// How long a sender still reads its socket after its stop time, ns: longer than any round
/// trip the receiver's last notifications take, well within the receiver's drain.
pub const NOTIFY_GRACE_NS: u64 = 200_000_000;

/// Run a paced sender until its stop time, then read notifications for [`NOTIFY_GRACE_NS`],
/// writing [`Report`]s to `out`.
pub fn run_sender(cfg: SenderConfig, out: &mut impl Write) -> io::Result<()> {
    let mut s = Sender::new(cfg)?;
    fine_timer_slack();
    let (cpu0, start) = (thread_cpu_s(), s.cfg.start_ns);
    wait_until(&s.sock, &s.clock, start)?;
    s.drain(out)?;
    while s.clock.now() < s.cfg.stop_ns {
        s.step(out)?;
    }
    s.report_intervals(out, s.cfg.stop_ns)?;
    // The receiver answers what it got until its own stop: a CNP for a datagram sent in the
    // last round trip is still in flight. Listen (sending nothing) so that it is counted.
    let listen_until = s.cfg.stop_ns.saturating_add(NOTIFY_GRACE_NS);
    loop {
        let now = s.clock.now();
        if now >= listen_until {
            break;
        }
        if readable_within(&s.sock, listen_until - now)? {
            s.drain(out)?;
        }
    }
    let cpu1 = thread_cpu_s();
    let totals = s.totals(cpu1.0 - cpu0.0, cpu1.1 - cpu0.1);
    emit(out, &Report::SenderEnd(totals))
}

impl Sender {
    fn new(cfg: SenderConfig) -> io::Result<Sender> {
        let bad = |m: String| io::Error::new(io::ErrorKind::InvalidInput, format!("flow `{}`: {m}", cfg.flow));
        if (cfg.payload_bytes as usize) < DATA_HEADER_BYTES {
            return Err(bad(format!(
                "payload of {} bytes; a paced datagram needs at least {DATA_HEADER_BYTES}",
                cfg.payload_bytes
            )));
        }
        if cfg.interval_ns == 0 {
            return Err(bad("a report interval of 0 ns".into()));
        }
        let rs = cfg.rate_control.sender(cfg.payload_bytes, cfg.start_ns).map_err(bad)?;
        let sock = UdpSocket::bind(SocketAddrV4::new(cfg.bind, cfg.src_port))
            .map_err(|e| bad(format!("cannot bind {}:{}: {e}", cfg.bind, cfg.src_port)))?;
        set_int(&sock, libc::IPPROTO_IP, libc::IP_TOS, libc::c_int::from(cfg.tos))?;
        large_buffer(&sock, libc::SO_SNDBUFFORCE, libc::SO_SNDBUF);
        sock.set_nonblocking(true)?;
        let clock = Clock::at_unix(cfg.t0_unix_ns);
        let next_k = cfg.start_ns / cfg.interval_ns;
        Ok(Sender {
            datagram: vec![0u8; cfg.payload_bytes as usize],
            rate_at: cfg.start_ns,
            cfg,
            sock,
            clock,
            rs,
            seq: 0,
            totals: SenderTotals::default(),
            late_sum_ns: 0,
            rate_ns: 0,
            next_k,
            sent_in_k: 0,
            drained_at: 0,
        })
    }

    fn rate_bps(&self) -> u64 {
        self.rs.controller().pacing_rate_bps().unwrap_or(0)
    }

    /// Add the rate since the last call to the integral (before anything changes it).
    fn integrate(&mut self, now: u64) {
        let dt = now
            .saturating_sub(self.rate_at)
            .min(self.cfg.stop_ns.saturating_sub(self.rate_at));
        self.rate_ns += u128::from(self.rate_bps()) * u128::from(dt);
        self.rate_at = self.rate_at.max(now);
    }

    /// One step: send what is due, report intervals that ended, wait for the next event, take
    /// what arrived.
    fn step(&mut self, out: &mut impl Write) -> io::Result<()> {
        let now = self.clock.now();
        self.integrate(now);
        let due = self.rs.next_send_ns();
        if self.rs.poll_transmit(now).is_some() {
            self.send(now, due)?;
        }
        self.report_intervals(out, now)?;
        let next = self
            .rs
            .next_timer()
            .min(self.cfg.stop_ns)
            .min((self.next_k + 1).saturating_mul(self.cfg.interval_ns));
        let woken = next > self.clock.now() && wait_until(&self.sock, &self.clock, next)?;
        // Datagrams closer together than the spin window never sleep in `ppoll`: look at the
        // socket at least once per window all the same.
        let now = self.clock.now();
        if woken || now.saturating_sub(self.drained_at) >= SPIN_NS {
            self.drained_at = now;
            self.drain(out)?;
        }
        Ok(())
    }

    /// Send datagram `seq`, due at `due` (ns after time zero).
    fn send(&mut self, now: u64, due: u64) -> io::Result<()> {
        let sent_ns = monotonic_ns();
        DataHeader { seq: self.seq, sent_ns }.write(&mut self.datagram);
        match self.sock.send_to(&self.datagram, self.cfg.dst) {
            Ok(_) => {
                self.seq += 1;
                self.sent_in_k += 1;
                self.totals.sent_pkts += 1;
                self.totals.sent_bytes += u64::from(self.cfg.payload_bytes);
                let late = now.saturating_sub(due);
                self.late_sum_ns += u128::from(late);
                self.totals.late_max_us = self.totals.late_max_us.max(late as f64 / 1e3);
                Ok(())
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::ENOBUFS)) => {
                self.totals.send_refused += 1;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// A line for every sample interval that ended by `now`.
    fn report_intervals(&mut self, out: &mut impl Write, now: u64) -> io::Result<()> {
        while (self.next_k + 1).saturating_mul(self.cfg.interval_ns) <= now {
            let r = Report::SenderInterval {
                k: self.next_k,
                rate_bps: self.rate_bps(),
                sent_pkts: std::mem::take(&mut self.sent_in_k),
            };
            emit(out, &r)?;
            self.next_k += 1;
        }
        Ok(())
    }

    /// Take every datagram waiting on the socket.
    fn drain(&mut self, out: &mut impl Write) -> io::Result<()> {
        let mut buf = [0u8; 2048];
        loop {
            let (n, from) = match self.sock.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // An ICMP error queued on the socket (the receiver not there yet): not ours.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e),
            };
            let now = self.clock.now();
            self.integrate(now);
            match RateMessage::parse(&buf[..n]) {
                Ok(RateMessage::Cnp { .. }) if from == std::net::SocketAddr::V4(self.cfg.dst) => {
                    self.totals.cnps += 1;
                    self.rs.on_notification(now);
                }
                Ok(RateMessage::Feedback(f)) => self.feedback(out, now, &f)?,
                _ => self.totals.ignored += 1,
            }
        }
    }

    /// A switch's rate feedback: hand it to the controller, report it.
    fn feedback(&mut self, out: &mut impl Write, now: u64, f: &FeedbackHeader) -> io::Result<()> {
        let before = self.rate_bps();
        self.totals.feedback += 1;
        self.rs
            .on_rate_feedback(now, u64::from(f.measured_kbps) * 1000, u64::from(f.target_kbps) * 1000);
        let r = Report::Feedback {
            t_s: now as f64 / 1e9,
            queue: f.queue,
            qlen_pkts: f.qlen_pkts,
            measured_kbps: f.measured_kbps,
            target_kbps: f.target_kbps,
            rate_before_bps: before,
            rate_after_bps: self.rate_bps(),
        };
        emit(out, &r)
    }

    fn totals(&mut self, cpu_user_s: f64, cpu_sys_s: f64) -> SenderTotals {
        self.integrate(self.cfg.stop_ns);
        let span_ns = self.cfg.stop_ns.saturating_sub(self.cfg.start_ns).max(1);
        let mut t = self.totals.clone();
        t.rate_bps = self.rate_bps();
        t.asked_mbps = self.rate_ns as f64 / span_ns as f64 / 1e6;
        t.achieved_mbps = t.sent_bytes as f64 * 8.0 / span_ns as f64 * 1e3;
        t.late_mean_us = self.late_sum_ns as f64 / t.sent_pkts.max(1) as f64 / 1e3;
        t.cpu_user_s = cpu_user_s;
        t.cpu_sys_s = cpu_sys_s;
        t.wall_s = span_ns as f64 / 1e9;
        t
    }
}

/// What a receiver counts: per sample interval and in total, from the datagrams' numbers,
/// arrival times and ECN bits. No I/O: the receiver loop hands each datagram in.
#[derive(Clone, Debug, Default)]
pub struct Arrivals {
    interval_ns: u64,
    /// The highest number seen plus one.
    expected: u64,
    owd_sum_ns: u128,
    owd_max_ns: u64,
    totals: ReceiverTotals,
    /// The interval being counted and its figures.
    k: u64,
    cur: IntervalCount,
}

/// One interval's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct IntervalCount {
    bytes: u64,
    pkts: u64,
    lost: i64,
    ce: u64,
    cnps: u64,
    owd_sum_ns: u128,
}

impl Arrivals {
    /// Counts over intervals of `interval_ns` (at least 1) from time zero.
    pub fn new(interval_ns: u64) -> Arrivals {
        Arrivals {
            interval_ns: interval_ns.max(1),
            ..Arrivals::default()
        }
    }

    /// Reports for every interval that ended by `now` (ns after time zero).
    pub fn close_until(&mut self, now: u64) -> Vec<Report> {
        let mut out = Vec::new();
        while (self.k + 1).saturating_mul(self.interval_ns) <= now {
            let c = std::mem::take(&mut self.cur);
            out.push(Report::ReceiverInterval {
                k: self.k,
                bytes: c.bytes,
                pkts: c.pkts,
                lost_pkts: c.lost,
                ce_pkts: c.ce,
                cnps: c.cnps,
                owd_mean_ms: (c.pkts > 0).then(|| c.owd_sum_ns as f64 / c.pkts as f64 / 1e6),
            });
            self.k += 1;
        }
        out
    }

    /// A data datagram of `bytes` payload arrived at `now` (ns after time zero), `owd_ns` after
    /// it was sent, CE-marked or not; `cnp`: a CNP was sent for it. Call [`Arrivals::close_until`]
    /// with `now` first.
    pub fn on_data(&mut self, h: DataHeader, bytes: u64, owd_ns: u64, ce: bool, cnp: bool) {
        let c = &mut self.cur;
        c.bytes += bytes;
        c.pkts += 1;
        c.owd_sum_ns += u128::from(owd_ns);
        c.ce += u64::from(ce);
        c.cnps += u64::from(cnp);
        if h.seq >= self.expected {
            // A number from anywhere on the network: a jump past what any run sends is not
            // taken as that many losses, and the last number never overflows.
            let gap = (h.seq - self.expected).min(MAX_SEQ_JUMP);
            c.lost += gap as i64;
            self.expected = h.seq.saturating_add(1);
        } else {
            // Late: it fills a gap counted as lost when a higher number came.
            c.lost -= 1;
            self.totals.reordered_pkts += 1;
        }
        let t = &mut self.totals;
        t.pkts += 1;
        t.bytes += bytes;
        t.ce_pkts += u64::from(ce);
        t.cnps += u64::from(cnp);
        self.owd_sum_ns += u128::from(owd_ns);
        self.owd_max_ns = self.owd_max_ns.max(owd_ns);
    }

    /// A datagram that was not a data datagram arrived.
    pub fn on_other(&mut self) {
        self.totals.ignored += 1;
    }

    /// The totals so far.
    pub fn totals(&self) -> ReceiverTotals {
        let mut t = self.totals.clone();
        t.expected_pkts = self.expected;
        t.owd_mean_ms = (t.pkts > 0).then(|| self.owd_sum_ns as f64 / t.pkts as f64 / 1e6);
        t.owd_max_ms = (t.pkts > 0).then(|| self.owd_max_ns as f64 / 1e6);
        t
    }
}

/// One datagram read with its TOS byte.
struct Received {
    len: usize,
    from: SocketAddrV4,
    tos: Option<u8>,
}

/// `recvmsg` without blocking, with the TOS byte from its `IP_TOS` control message: None when
/// nothing is waiting.
fn recv_with_tos(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<Received>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: sockaddr_in is plain old data.
    let mut from: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain old data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_in).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: a valid descriptor and a msghdr whose buffers are live and sized as stated.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            // A CNP sent after the sender had gone came back as ICMP port unreachable: the
            // error is taken off the socket by this call; nothing to read.
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted | io::ErrorKind::ConnectionRefused => Ok(None),
            _ => Err(e),
        };
    }
    let mut tos = None;
    // SAFETY: the kernel filled `msg.msg_control` up to `msg_controllen`; CMSG_* walk it
    // within those bounds.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_TOS {
                tos = Some(*libc::CMSG_DATA(c));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let from = SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)),
        u16::from_be(from.sin_port),
    );
    Ok(Some(Received {
        len: n as usize,
        from,
        tos,
    }))
}

/// A UDP socket bound to `addr`, sharing the port with other sockets of this user that ask
/// the same (`SO_REUSEADDR`, `SO_REUSEPORT`) when `shared`.
fn bind_udp(addr: SocketAddrV4, shared: bool) -> io::Result<UdpSocket> {
    use std::os::fd::FromRawFd;
    // SAFETY: socket(2) with constant arguments.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just returned by socket(2), owned by nobody else.
    let sock = UdpSocket::from(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
    if shared {
        set_int(&sock, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
        set_int(&sock, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    }
    let sa = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: a valid descriptor; a pointer to a live sockaddr_in of the size given.
    let rc = unsafe {
        libc::bind(
            sock.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sock)
}

/// A paced flow's receiver bound and ready: [`Receiver::run`] then receives until the stop.
pub struct Receiver {
    cfg: ReceiverConfig,
    sock: UdpSocket,
}

impl Receiver {
    /// Bind the flow's address and port, with `IP_RECVTOS` on; connected to the sender where
    /// the configuration names it.
    pub fn bind(cfg: ReceiverConfig) -> io::Result<Receiver> {
        let sock = bind_udp(cfg.bind, cfg.peer.is_some())
            .map_err(|e| io::Error::new(e.kind(), format!("flow `{}`: cannot bind {}: {e}", cfg.flow, cfg.bind)))?;
        if let Some(peer) = cfg.peer {
            sock.connect(peer)?;
        }
        set_int(&sock, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
        large_buffer(&sock, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF);
        sock.set_nonblocking(true)?;
        Ok(Receiver { cfg, sock })
    }

    /// The address it is bound to.
    pub fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.sock.local_addr()
    }

    /// Receive until the stop time, writing [`Report`]s to `out`.
    pub fn run(self, out: &mut impl Write) -> io::Result<()> {
        fine_timer_slack();
        let clock = Clock::at_unix(self.cfg.t0_unix_ns);
        let mut np = self.cfg.cnp_interval_ns.map(NotificationPoint::new);
        let mut a = Arrivals::new(self.cfg.interval_ns);
        let mut buf = vec![0u8; 65_536];
        loop {
            let now = clock.now();
            for r in a.close_until(now) {
                emit(out, &r)?;
            }
            if now >= self.cfg.stop_ns {
                break;
            }
            let Some(got) = recv_with_tos(&self.sock, &mut buf)? else {
                let step = self.cfg.interval_ns.max(1);
                let next = (now / step + 1).saturating_mul(step);
                readable_within(&self.sock, next.min(self.cfg.stop_ns).saturating_sub(now).max(1))?;
                continue;
            };
            let arrived = monotonic_ns();
            let Ok(RateMessage::Data(h)) = RateMessage::parse(&buf[..got.len]) else {
                a.on_other();
                continue;
            };
            let ce = got.tos.is_some_and(|t| t & 3 == 3);
            let cnp = np.as_mut().is_some_and(|np| np.on_packet(clock.rel(arrived), ce));
            if cnp {
                self.send_cnp(got.from, h.seq);
            }
            let owd = arrived.saturating_sub(h.sent_ns);
            a.on_data(h, got.len as u64, owd, ce, cnp);
        }
        emit(out, &Report::ReceiverEnd(a.totals()))
    }

    /// A CNP for datagram `seq` to `to`; one that cannot go is lost, as on a wire.
    fn send_cnp(&self, to: SocketAddrV4, seq: u64) {
        let _ = self.sock.send_to(&rate_wire::cnp(seq), to);
    }
}

/// Run a paced flow's receiver: bind, receive until the stop, report.
pub fn run_receiver(cfg: ReceiverConfig, out: &mut impl Write) -> io::Result<()> {
    Receiver::bind(cfg)?.run(out)
}

/// Read a JSON configuration from `input` (a paced tool's standard input).
pub fn read_config<T: serde::de::DeserializeOwned>(input: impl io::Read) -> Result<T, String> {
    serde_json::from_reader(input).map_err(|e| format!("reading the configuration (JSON): {e}"))
}

/// `d` in ns, saturating.
pub fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_sleeps_until_the_spin_window_then_spins() {
        assert_eq!(sleep_before(0, 1_000_000), Some(1_000_000 - SPIN_NS));
        assert_eq!(sleep_before(0, SPIN_NS), None, "within the window: spin");
        assert_eq!(sleep_before(5, 3), None, "past due: go");
        assert_eq!(sleep_before(0, u64::MAX), Some(MAX_SLEEP_NS), "look at the clock again");
    }

    fn data(seq: u64) -> DataHeader {
        DataHeader { seq, sent_ns: 0 }
    }

    /// Loss is counted from gaps in the numbers, a late datagram fills its gap and counts as
    /// reordered, and intervals split by arrival time.
    #[test]
    fn arrivals_count_gaps_reordering_and_delay_per_interval() {
        let mut a = Arrivals::new(100);
        assert!(a.close_until(50).is_empty());
        a.on_data(data(0), 1000, 2_000_000, false, false);
        a.on_data(data(3), 1000, 4_000_000, true, true);
        let r = a.close_until(100);
        assert_eq!(
            r,
            [Report::ReceiverInterval {
                k: 0,
                bytes: 2000,
                pkts: 2,
                lost_pkts: 2,
                ce_pkts: 1,
                cnps: 1,
                owd_mean_ms: Some(3.0)
            }]
        );
        a.on_data(data(1), 1000, 1_000_000, false, false);
        let r = a.close_until(300);
        assert_eq!(r.len(), 2, "interval 1, then the empty interval 2");
        assert!(
            matches!(
                r[0],
                Report::ReceiverInterval {
                    lost_pkts: -1,
                    pkts: 1,
                    ..
                }
            ),
            "{r:?}"
        );
        assert!(matches!(
            r[1],
            Report::ReceiverInterval {
                pkts: 0,
                owd_mean_ms: None,
                ..
            }
        ));
        let t = a.totals();
        assert_eq!((t.pkts, t.expected_pkts, t.reordered_pkts), (3, 4, 1));
        assert_eq!((t.ce_pkts, t.cnps), (1, 1));
        assert_eq!((t.owd_mean_ms, t.owd_max_ms), (Some(7.0 / 3.0), Some(4.0)));
    }

    #[test]
    fn reports_round_trip_as_json_lines() {
        let r = Report::SenderInterval {
            k: 3,
            rate_bps: 5,
            sent_pkts: 7,
        };
        let line = serde_json::to_string(&r).unwrap();
        assert!(line.starts_with("{\"kind\":\"sender_interval\""), "{line}");
        assert_eq!(serde_json::from_str::<Report>(&line).unwrap(), r);
        let end = Report::SenderEnd(SenderTotals::default());
        let line = serde_json::to_string(&end).unwrap();
        assert!(line.contains("\"kind\":\"sender_end\""), "{line}");
        assert_eq!(serde_json::from_str::<Report>(&line).unwrap(), end);
    }

    #[test]
    fn a_payload_below_the_header_and_a_zero_interval_are_refused() {
        let rc = RateControl::Pmqecn(mpsched_transport::cc::PmqecnRpParams::paper(10_000_000));
        let cfg = SenderConfig {
            flow: "f".into(),
            dst: SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9),
            bind: Ipv4Addr::LOCALHOST,
            src_port: 0,
            payload_bytes: 23,
            tos: 0,
            rate_control: rc,
            t0_unix_ns: 0,
            start_ns: 0,
            stop_ns: 0,
            interval_ns: 1,
        };
        let e = run_sender(cfg.clone(), &mut Vec::new()).unwrap_err().to_string();
        assert!(e.contains("flow `f`") && e.contains("at least 24"), "{e}");
        let e = run_sender(
            SenderConfig {
                payload_bytes: 24,
                interval_ns: 0,
                ..cfg
            },
            &mut Vec::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("interval"), "{e}");
    }
}
