//! `mpsched tunnel`: the multipath tunnel as a Linux daemon.
//!
//! A TUN device takes the packets routed into the tunnel; each is handed to a registered
//! tunnel scheduler (`rr`, `afmt`, ...) that sees every path's state from the tunnel's own
//! acknowledgements (RTT, minimum RTT, in-flight, loss, liveness) and picks a path; it leaves
//! in one authenticated UDP datagram on that path's socket. At the far end datagrams are
//! opened (forged, replayed, truncated and oversized ones counted and dropped), acknowledged,
//! put back in tunnel order by a bounded reordering buffer and written to its TUN device.
//! The protocol is `mpsched-tunnel`'s state machines, the same the simulator drives.
//!
//! - [`config`]: the configuration file, checked before anything is created.
//! - [`tun`]: the TUN device (removed by the kernel however the daemon ends).
//! - [`daemon`]: the event loop.
//! - [`stream`]: TCP paths (messages as records on one connection per path), and
//!   [`admission`]: the connections a responder holds until they prove the key.
//! - [`inner`]: flows of inner packets, and [`mss`]: TCP MSS clamping of those that cross.
//! - [`reload`]: what a SIGHUP may change while the session runs.
//! - [`metrics`], [`report`]: counters in Prometheus' text format, and [`status`]: what
//!   `mpsched tunnel status` makes of them.

pub mod admission;
pub mod config;
pub mod daemon;
mod fields;
pub mod inner;
pub mod metrics;
pub mod mss;
pub mod reload;
pub mod report;
pub mod status;
pub mod stream;
pub mod tun;

pub use config::{Config, ConfigError};
pub use daemon::Daemon;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Run the daemon of `cfg`, read from `file`, until SIGINT, SIGTERM or SIGQUIT; on SIGHUP
/// re-read `file` and apply what changed without ending the session ([`reload`]). Print its
/// counters when it ends.
pub fn run(cfg: Config, file: &std::path::Path) -> std::io::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGQUIT,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let reload = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&reload))?;
    let mut d = Daemon::start(cfg)?;
    let paths: Vec<String> = d.paths.iter().map(|p| p.spec.name.clone()).collect();
    eprintln!(
        "mpsched tunnel: {} up, scheduler {}, paths {}",
        d.device(),
        d.cfg.scheduler,
        paths.join(", ")
    );
    let r = d.run(&stop, Some((&reload, file)));
    // The counters on stdout; a closed stdout must not turn a clean exit into a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), report::exposition(&d).as_bytes());
    eprintln!("mpsched tunnel: {} removed", d.device());
    r
}
