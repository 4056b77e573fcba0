//! Probe origination on the kernel: one thread in the mpsched process writes a trigger frame
//! every probe period into a veth pair of each ToR's namespace (`hula0` -> `hula1`); the
//! program, attached at `hula1`'s ingress, turns each trigger into the ToR's probes (one copy
//! per up port).
//!
//! Why this way: a BPF timer runs without a packet and no helper lets it send one; a live-frame
//! `BPF_PROG_RUN` exists for XDP only; cloning data packets sends no probes when there is no
//! traffic, which is when HULA most needs them (to learn the paths before a flow starts). A
//! frame written into a veth costs one `send(2)` per period and reaches the program through the
//! ordinary receive path, in softirq context, as any packet does.
//!
//! One thread per CPU serves the ToRs of the process, spread over the threads as they come: a
//! wakeup costs more than a send, so a thread for each ToR would wake a k = 4 fat tree's
//! process 40 000 times a second at the default period; one thread for all would do the whole
//! fabric's probe work on one CPU (a send runs the softirq on the sender's CPU: the program,
//! its clones, and the neighbours' programs the clones reach). Each thread sleeps to its
//! earliest absolute deadline (`clock_nanosleep(TIMER_ABSTIME)` on the
//! monotonic clock), so a period does not drift with the time the sends take; a deadline it
//! missed (the machine was busy) is skipped, not caught up in a burst. A ToR added while it
//! sleeps is served from its next wakeup. A [`Prober`] removes its ToR when dropped (its socket
//! closes; the veth goes with the namespace), and the thread ends at its next wakeup once it
//! serves no ToR.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The interface the prober writes into (its peer is [`TRIGGER_IF`]).
pub const SENDER_IF: &str = "hula0";
/// The interface whose ingress the program treats as "originate now".
pub const TRIGGER_IF: &str = "hula1";

/// What the prober did for one ToR, shared with its plane.
#[derive(Debug, Default)]
pub struct ProberStats {
    /// Trigger frames written.
    pub triggers: AtomicU64,
    /// Periods skipped because the thread woke after the next deadline.
    pub missed: AtomicU64,
    /// The CPU time of the thread serving it, ns (updated every 1 000 wakeups).
    pub cpu_ns: AtomicU64,
    /// ToRs that thread served at its last wakeup.
    pub tors: AtomicU64,
}

/// One ToR's trigger.
struct Entry {
    id: u64,
    sock: OwnedFd,
    frame: Vec<u8>,
    period_ns: u64,
    next_ns: u64,
    stats: Arc<ProberStats>,
}

/// The ToRs the thread serves, and whether it runs.
struct Shared {
    entries: Vec<Entry>,
    running: bool,
    next_id: u64,
}

/// Most prober threads (one per CPU up to this).
const MAX_THREADS: usize = 8;

static SHARDS: [Mutex<Shared>; MAX_THREADS] = [const {
    Mutex::new(Shared {
        entries: Vec::new(),
        running: false,
        next_id: 0,
    })
}; MAX_THREADS];

/// ToRs handed out so far: the next goes to shard `count % threads`.
static HANDED: AtomicU64 = AtomicU64::new(0);

fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS)
}

fn shard(i: usize) -> std::sync::MutexGuard<'static, Shared> {
    // A panic in a thread cannot leave the list half-changed: take it as it is.
    SHARDS[i].lock().unwrap_or_else(|e| e.into_inner())
}

/// One ToR served by the prober thread.
pub struct Prober {
    shard: usize,
    id: u64,
    /// Its counters.
    pub stats: Arc<ProberStats>,
}

impl Prober {
    /// Write `frame` every `period_us` into the socket `sock` (a packet socket bound to
    /// [`SENDER_IF`], opened in the ToR's namespace), starting the thread if it is not running.
    pub fn start(sock: OwnedFd, frame: Vec<u8>, period_us: u64) -> Result<Prober, String> {
        let stats = Arc::new(ProberStats::default());
        let period_ns = period_us.max(1) * 1000;
        let i = (HANDED.fetch_add(1, Ordering::Relaxed) % threads() as u64) as usize;
        let mut g = shard(i);
        let id = g.next_id;
        g.next_id += 1;
        g.entries.push(Entry {
            id,
            sock,
            frame,
            period_ns,
            next_ns: monotonic_ns() + period_ns,
            stats: stats.clone(),
        });
        if !g.running {
            std::thread::Builder::new()
                .name("hula-prober".into())
                .spawn(move || run(i))
                .map_err(|e| format!("start the prober thread: {e}"))?;
            g.running = true;
        }
        Ok(Prober { shard: i, id, stats })
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        shard(self.shard).entries.retain(|e| e.id != self.id);
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

/// Thread `i`: sleep to the earliest deadline of its ToRs, send every trigger due, until none
/// is left.
fn run(i: usize) {
    let mut wakeups: u64 = 0;
    loop {
        let deadline = {
            let mut g = shard(i);
            match g.entries.iter().map(|e| e.next_ns).min() {
                Some(d) => d,
                None => {
                    g.running = false;
                    return;
                }
            }
        };
        sleep_until(deadline);
        wakeups += 1;
        let mut g = shard(i);
        let now = monotonic_ns();
        let cpu = (wakeups % 1000 == 0).then(|| clock_ns(libc::CLOCK_THREAD_CPUTIME_ID));
        let tors = g.entries.len() as u64;
        for e in g.entries.iter_mut() {
            if e.next_ns <= now {
                send_due(e, now);
            }
            e.stats.tors.store(tors, Ordering::Relaxed);
            if let Some(c) = cpu {
                e.stats.cpu_ns.store(c, Ordering::Relaxed);
            }
        }
    }
}

/// Send one ToR's trigger and move its deadline past `now`.
fn send_due(e: &mut Entry, now: u64) {
    // SAFETY: the frame is readable for its length; the socket is bound to one interface.
    let n = unsafe { libc::send(e.sock.as_raw_fd(), e.frame.as_ptr().cast(), e.frame.len(), 0) };
    if n == e.frame.len() as isize {
        e.stats.triggers.fetch_add(1, Ordering::Relaxed);
    }
    e.next_ns += e.period_ns;
    if now >= e.next_ns {
        let behind = (now - e.next_ns) / e.period_ns + 1;
        e.stats.missed.fetch_add(behind, Ordering::Relaxed);
        e.next_ns += behind * e.period_ns;
    }
}
