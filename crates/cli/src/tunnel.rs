//! `mpsched tunnel`: run one end of a multipath tunnel (`mpsched_tunneld`), check its
//! configuration, or make a key.

use crate::UsageError;
use std::io::Read;
use std::path::PathBuf;

/// Arguments of `mpsched tunnel`.
#[derive(clap::Args)]
#[command(after_long_help = "\
Between two Linux machines A and B with two paths (say 192.168.1.0/24 and 10.8.0.0/24):

  1. (umask 077; mpsched tunnel --genkey > tunnel.key)   (copy it to both machines, mode 600)
  2. On A (initiator), a.toml:
       role = \"initiator\"
       key_file = \"tunnel.key\"
       scheduler = \"afmt\"
       [device]
       name = \"mpt0\"
       address = \"10.99.0.1/30\"
       [[path]]
       name = \"wifi\"
       local = \"192.168.1.10:4789\"
       remote = \"192.168.1.20:4789\"
       [[path]]
       name = \"lte\"
       local = \"10.8.0.10:4789\"
       remote = \"10.8.0.20:4789\"
     On B (responder), the same with role = \"responder\", address = \"10.99.0.2/30\" and the
     local and remote addresses swapped (B may leave `remote` out: it learns it).
  3. On both, as root: mpsched tunnel a.toml   (b.toml on B)
  4. ping 10.99.0.2 from A; iperf3 through it. Counters: add metrics = \"127.0.0.1:9120\" and
     curl http://127.0.0.1:9120/metrics. SIGINT or SIGTERM ends it; the device goes with it.

Paths over TCP instead (one kernel connection per path, as the AFMT paper's subtunnels; AFMT
then weighs the kernel's queue, window and RTT): add transport = \"tcp\" at the top, and
optionally [tcp] with congestion, send_buffer, receive_buffer, nodelay.

docs/tunnel.md has every field, the wire format and the measurements.")]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
pub struct TunnelArgs {
    #[command(subcommand)]
    command: Option<TunnelCommand>,
    /// The configuration file of this end.
    #[arg(required_unless_present = "genkey")]
    config: Option<PathBuf>,
    /// Check the configuration and say what it holds; create nothing.
    #[arg(long)]
    check: bool,
    /// Print a new random pre-shared key (64 hex digits) for `key_file`.
    #[arg(long, conflicts_with_all = ["config", "check"])]
    genkey: bool,
}

/// What `mpsched tunnel` does besides running an end.
#[derive(clap::Subcommand)]
enum TunnelCommand {
    /// Show a running end: peer, session, each path's state, RTT, loss, rate, last
    /// acknowledgement and bytes (read from its metrics endpoint).
    Status {
        /// The end's configuration file (its `metrics` address is asked; nothing else is read).
        #[arg(required_unless_present = "metrics", value_name = "CONFIG|--metrics ADDRESS")]
        config: Option<PathBuf>,
        /// Ask this metrics address instead (`127.0.0.1:9120`).
        #[arg(long, conflicts_with = "config")]
        metrics: Option<String>,
    },
}

/// Run `mpsched tunnel`.
pub fn tunnel(a: TunnelArgs) -> anyhow::Result<()> {
    if let Some(TunnelCommand::Status { config, metrics }) = a.command {
        return status(config, metrics);
    }
    if a.genkey {
        let mut key = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        outln!("{hex}");
        return Ok(());
    }
    let Some(path) = a.config else {
        return Err(UsageError("give a configuration file (or --genkey)".into()).into());
    };
    let cfg = mpsched_tunneld::Config::load(&path).map_err(|e| UsageError(e.to_string()))?;
    if a.check {
        outln!(
            "{}: {:?}, scheduler {}, device {} {}/{} mtu {} B, {} route(s), reorder {} packets / {}",
            path.display(),
            cfg.role,
            cfg.scheduler,
            cfg.device.name,
            cfg.device.address.0,
            cfg.device.address.1,
            cfg.device.mtu,
            cfg.device.routes.len(),
            cfg.reorder_capacity,
            mpsched_scenario::units::format_time_ps(cfg.reorder_timeout_ns * 1_000)
        );
        for p in &cfg.paths {
            let remote = p.remote.map_or("learned".to_string(), |r| r.to_string());
            let dev = p.interface.as_deref().map(|d| format!(" on {d}")).unwrap_or_default();
            let role = if p.backup { " (backup)" } else { "" };
            let weight = if p.weight != 1 {
                format!(", weight {}", p.weight)
            } else {
                String::new()
            };
            outln!(
                "  path {} (#{}): {}{dev} -> {remote}{role}{weight}",
                p.name,
                p.id,
                p.local
            );
        }
        return Ok(());
    }
    if !mpsched_netns::ns::is_root() {
        return Err(
            UsageError("mpsched tunnel creates a TUN device: run it as root (or with CAP_NET_ADMIN)".into()).into(),
        );
    }
    mpsched_tunneld::run(cfg, &path)?;
    Ok(())
}

/// `mpsched tunnel status`: ask the end's metrics endpoint and lay out what it says.
fn status(config: Option<PathBuf>, metrics: Option<String>) -> anyhow::Result<()> {
    let addr = match (metrics, config) {
        (Some(m), _) => m,
        (None, Some(path)) => {
            let metrics = mpsched_tunneld::Config::metrics_address(&path).map_err(|e| UsageError(e.to_string()))?;
            metrics.map(|m| m.to_string()).ok_or_else(|| {
                UsageError(format!(
                    "{}: no `metrics` address, so the running end serves no status: add metrics = \"127.0.0.1:9120\" and restart it",
                    path.display()
                ))
            })?
        }
        (None, None) => return Err(UsageError("give the end's configuration file or --metrics ADDRESS".into()).into()),
    };
    let at: std::net::SocketAddr = addr.parse().map_err(|_| {
        UsageError(format!(
            "--metrics: `{addr}` is not an address and port (127.0.0.1:9120)"
        ))
    })?;
    let text = mpsched_tunneld::metrics::fetch(at, std::time::Duration::from_secs(2)).map_err(|e| {
        anyhow::anyhow!("no tunnel answers at {at} ({e}): is the end running, with this metrics address?")
    })?;
    let shown = mpsched_tunneld::status::render(&mpsched_tunneld::metrics::parse(&text), &addr)
        .map_err(|e| anyhow::anyhow!(e))?;
    outln!("{}", shown.trim_end());
    Ok(())
}
