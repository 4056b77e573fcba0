//! Probe origination on the kernel: a thread per ToR that writes one trigger frame every probe
//! period into a veth pair of the ToR's namespace (`hula0` -> `hula1`); the program, attached
//! at `hula1`'s ingress, turns each trigger into the ToR's probes (one copy per up port).
//!
//! Why this way: a BPF timer runs without a packet and no helper lets it send one; a live-frame
//! `BPF_PROG_RUN` exists for XDP only; cloning data packets sends no probes when there is no
//! traffic, which is when HULA most needs them (to learn the paths before a flow starts). A
//! frame written into a veth costs one `send(2)` per period and reaches the program through the
//! ordinary receive path, in softirq context, as any packet does.
//!
//! The thread sleeps to absolute deadlines (`clock_nanosleep(TIMER_ABSTIME)` on the monotonic
//! clock), so the period does not drift with the time each send takes; a deadline it missed
//! (the machine was busy) is skipped, not caught up in a burst. It stops when its
//! [`Prober`] is dropped; its socket and the veth go with the namespace.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The interface the prober writes into (its peer is [`TRIGGER_IF`]).
pub const SENDER_IF: &str = "hula0";
/// The interface whose ingress the program treats as "originate now".
pub const TRIGGER_IF: &str = "hula1";

/// What a prober did, shared with its plane.
#[derive(Debug, Default)]
pub struct ProberStats {
    /// Trigger frames written.
    pub triggers: AtomicU64,
    /// Periods skipped because the thread woke after the next deadline.
    pub missed: AtomicU64,
    /// The thread's CPU time, ns (updated every 1 000 periods and when it stops).
    pub cpu_ns: AtomicU64,
}

/// A running prober thread.
pub struct Prober {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Its counters.
    pub stats: Arc<ProberStats>,
}

impl Prober {
    /// Start writing `frame` every `period_us` into the socket `sock` (a packet socket bound
    /// to [`SENDER_IF`], opened in the ToR's namespace).
    pub fn start(sock: OwnedFd, frame: Vec<u8>, period_us: u64) -> Result<Prober, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(ProberStats::default());
        let (s, st) = (stop.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name("hula-prober".into())
            .spawn(move || run(&sock, &frame, period_us, &s, &st))
            .map_err(|e| format!("start the prober thread: {e}"))?;
        Ok(Prober {
            stop,
            thread: Some(thread),
            stats,
        })
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A packet socket on interface `ifindex` of the calling thread's namespace that only sends
/// (protocol 0: nothing is queued for it to read).
pub fn open_sender(ifindex: u32) -> Result<OwnedFd, String> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket(2); the descriptor is owned from here on.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(format!("packet socket: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: fd is a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value to fill in.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_ifindex = ifindex as i32;
    let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: addr is a valid sockaddr_ll of `len` bytes.
    let rc = unsafe { libc::bind(fd.as_raw_fd(), std::ptr::addr_of!(addr).cast(), len) };
    if rc != 0 {
        return Err(format!("bind packet socket: {}", std::io::Error::last_os_error()));
    }
    Ok(fd)
}

fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_until(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid absolute deadline; an interrupted sleep just returns early.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
}

fn run(sock: &OwnedFd, frame: &[u8], period_us: u64, stop: &AtomicBool, st: &ProberStats) {
    let period = period_us.max(1) * 1000;
    let mut next = monotonic_ns() + period;
    while !stop.load(Ordering::Relaxed) {
        sleep_until(next);
        // SAFETY: frame is readable for its length; the socket is bound to one interface.
        let n = unsafe { libc::send(sock.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if n == frame.len() as isize {
            st.triggers.fetch_add(1, Ordering::Relaxed);
        }
        next += period;
        let now = monotonic_ns();
        if now >= next {
            let behind = (now - next) / period + 1;
            st.missed.fetch_add(behind, Ordering::Relaxed);
            next += behind * period;
        }
        if st.triggers.load(Ordering::Relaxed) % 1000 == 0 {
            st.cpu_ns
                .store(clock_ns(libc::CLOCK_THREAD_CPUTIME_ID), Ordering::Relaxed);
        }
    }
    st.cpu_ns
        .store(clock_ns(libc::CLOCK_THREAD_CPUTIME_ID), Ordering::Relaxed);
}
