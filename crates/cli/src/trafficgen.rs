//! `mpsched trafficgen`: the netns backend's generator of fixed-size transfers (see
//! `mpsched_netns::trafficgen`), run inside the host namespaces; usable alone between two
//! machines as well. `paced-send` and `paced-recv` are the two ends of a rate-controlled UDP
//! flow (`mpsched_netns::paced`).

use crate::UsageError;
use mpsched_netns::paced::{self, Report};
use mpsched_netns::trafficgen::{read_schedule, run_client, serve, Protocol, TG_PORT};
use std::io::Write;
use std::net::Ipv4Addr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Arguments of `mpsched trafficgen`.
#[derive(clap::Args)]
pub struct TrafficgenArgs {
    #[command(subcommand)]
    role: Role,
}

#[derive(clap::Subcommand)]
enum Role {
    /// Accept connections, read each to its end, answer one byte; until killed.
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "0.0.0.0")]
        bind: Ipv4Addr,
        /// Port.
        #[arg(long, default_value_t = TG_PORT)]
        port: u16,
        /// Accept Multipath TCP (an `IPPROTO_MPTCP` listener; plain TCP clients fall back).
        #[arg(long)]
        mptcp: bool,
    },
    /// Run the schedule on standard input (`id dst size start_ns cc` per line); one JSON line
    /// per flow on standard output.
    Client {
        /// Time zero, nanoseconds since the Unix epoch (default: now).
        #[arg(long)]
        t0_unix_ns: Option<u64>,
        /// Stop at this time, nanoseconds since the Unix epoch: report each flow still running
        /// as not finished, with what its receiver had acknowledged, and exit (default: when
        /// every flow has ended).
        #[arg(long)]
        stop_unix_ns: Option<u64>,
        /// The servers' port.
        #[arg(long, default_value_t = TG_PORT)]
        port: u16,
        /// Connect with Multipath TCP (`IPPROTO_MPTCP` sockets; the namespace's MPTCP
        /// endpoints and limits decide the subflows).
        #[arg(long)]
        mptcp: bool,
    },
    /// Send a rate-controlled UDP flow, paced by its controller (DCQCN, PMQECN), until its stop
    /// time; the configuration (`mpsched_netns::paced::SenderConfig`) as JSON on standard
    /// input, one JSON line per report on standard output.
    PacedSend,
    /// Receive a rate-controlled UDP flow until the stop time, answering CE-marked datagrams
    /// with CNPs (DCQCN); the configuration (`mpsched_netns::paced::ReceiverConfig`) as JSON on
    /// standard input, one JSON line per report on standard output.
    PacedRecv,
}

/// `mpsched trafficgen`.
pub fn trafficgen(a: TrafficgenArgs) -> anyhow::Result<()> {
    match a.role {
        Role::Serve { bind, port, mptcp } => {
            serve(bind, port, protocol(mptcp))
                .map_err(|e| UsageError(format!("cannot serve on {bind}:{port}: {e}")))?;
            Ok(())
        }
        Role::Client {
            t0_unix_ns,
            stop_unix_ns,
            port,
            mptcp,
        } => {
            let flows = read_schedule(std::io::stdin().lock()).map_err(UsageError)?;
            let t0 = t0_unix_ns.map_or_else(SystemTime::now, |ns| UNIX_EPOCH + Duration::from_nanos(ns));
            let stop = stop_unix_ns.map(|ns| UNIX_EPOCH + Duration::from_nanos(ns));
            run_client(flows, t0, stop, port, protocol(mptcp), std::io::stdout());
            Ok(())
        }
        Role::PacedSend => paced_role(|out| {
            let cfg = paced::read_config(std::io::stdin().lock()).map_err(std::io::Error::other)?;
            paced::run_sender(cfg, out)
        }),
        Role::PacedRecv => paced_role(|out| {
            let cfg = paced::read_config(std::io::stdin().lock()).map_err(std::io::Error::other)?;
            paced::run_receiver(cfg, out)
        }),
    }
}

/// Run a paced end on standard output; a failure is also reported there as an `error` line,
/// which is what the netns backend reads.
fn paced_role(run: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let Err(e) = run(&mut out) else {
        return Ok(());
    };
    let line = serde_json::to_string(&Report::Error { message: e.to_string() }).unwrap_or_default();
    let _ = writeln!(out, "{line}");
    // A run-time failure (a port taken, the network): not a usage error.
    Err(anyhow::Error::new(e))
}

fn protocol(mptcp: bool) -> Protocol {
    if mptcp {
        Protocol::Mptcp
    } else {
        Protocol::Tcp
    }
}
