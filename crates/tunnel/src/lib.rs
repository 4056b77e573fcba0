//! Multipath tunnel endpoints, as state machines without I/O.
//!
//! A multipath tunnel joins two nodes by several subtunnels (one per path, over UDP or TCP). At
//! its **entry** a packet bound for a host behind the far end is classified, handed to a
//! [`TunnelScheduler`](mpsched_core::tunnel::TunnelScheduler) that picks a subtunnel, stamped with
//! its entry order and encapsulated; at the **exit** it is decapsulated (ECN after RFC 6040) and
//! its order compared with what its flow delivered before.
//!
//! Nothing here sends, receives or reads a clock: the simulator (`mpsched-sim`) drives these
//! types with simulated time and its own links and TCP connections, and the tunnel daemon
//! (`mpsched-tunneld`, `mpsched tunnel`) drives them with sockets and the system clock.
//!
//! - [`entry::TunnelEntry`]: which packets enter, which subtunnel carries each, counters.
//! - [`exit::TunnelExit`]: decapsulation and the reordering measure, with bounded flow state.
//! - [`framing`]: the outer headers' sizes, the UDP encapsulation, and the TCP subtunnels'
//!   stream framing (a length-prefixed record per packet).
//! - [`wire`]: the messages between the two ends of a real tunnel (data with per-path and
//!   tunnel sequence numbers and a send time, acknowledgements echoing it, keepalives).
//! - [`path`]: each path's sender (RTT, minimum RTT, in-flight, loss, liveness) and receiver
//!   (when to acknowledge what).
//! - [`reorder`]: the receiver's bounded reordering buffer with a timeout.
//! - [`equalize`]: the receiver's delay equalizer, so bonded paths of unequal delay look like one.
//! - [`seal`]: the daemon's datagrams sealed (ChaCha20-Poly1305, pre-shared key), replays refused.

pub mod entry;
pub mod equalize;
pub mod exit;
pub mod framing;
pub mod path;
pub mod reorder;
pub mod seal;
pub mod wire;

pub use entry::{EntryStats, Scheduled, TunnelEntry};
pub use exit::{DecapError, ExitStats, TunnelExit};
pub use framing::{RecordQueue, TCP_FRAMING_BYTES, TUNNEL_UDP_PORT, UDP_ENCAP_BYTES};
