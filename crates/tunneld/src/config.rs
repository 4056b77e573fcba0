//! The daemon's configuration file (TOML), in the scenarios' units, checked before anything is
//! created.
//!
//! ```toml
//! role = "initiator"                 # this end: "initiator" or "responder"
//! key_file = "/etc/mpsched/tunnel.key"   # the pre-shared key (`mpsched tunnel --genkey`)
//! seal = "chacha20-poly1305"         # or "none": datagrams in clear, no key (optional)
//! scheduler = "bond"                 # a registered tunnel scheduler (`bond`, the default; `rr`, `afmt`, ...)
//! metrics = "127.0.0.1:9120"         # Prometheus text on this address (optional)
//!
//! [device]
//! name = "mpt0"
//! address = "10.99.0.1/30"           # the TUN device's address
//! mtu = "1400B"
//! routes = ["10.2.0.0/16"]           # prefixes reached through the tunnel
//!
//! [timing]                           # every field optional
//! ack_every = 2
//! ack_delay = "5ms"
//! keepalive = "200ms"
//! dead_after = "600ms"
//! reorder_timeout = "100ms"
//! reorder_capacity = 1024           # packets; 0: none (deliver as they arrive)
//!
//! transport = "udp"                # or "tcp": one TCP connection per path (optional)
//! [tcp]                              # with transport = "tcp"; every field optional
//! congestion = "cubic"
//! send_buffer = "128KiB"
//! receive_buffer = "128KiB"
//! nodelay = true
//!
//! [[path]]
//! name = "wifi"
//! local = "192.168.1.10:4789"        # source address and port
//! interface = "wlan0"                # optional: bind to this interface
//! remote = "203.0.113.5:4789"        # optional on the responder: learned from the initiator
//! ```

use mpsched_core::MAX_PATHS;
use mpsched_programs::params::{ParamKind, Params};
use mpsched_programs::tunnel::{tunnel_scheduler, tunnel_scheduler_names};
use mpsched_scenario::files::read_bounded;
use mpsched_scenario::units::{parse_rate_bps, parse_size_bytes, parse_time_ps};
use mpsched_tunnel::path::PathConfig;
use mpsched_tunnel::seal;
use mpsched_tunnel::wire::DataHeader;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// A configuration that cannot be used, with the field at fault.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {}{message}", field_prefix(.field))]
pub struct ConfigError {
    /// The file.
    pub file: String,
    /// The field (dotted: `path[1].remote`; `line 3` for TOML that does not parse there), or
    /// empty when the file as a whole cannot be read.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// `field: `, or nothing for an error of the file as a whole.
fn field_prefix(field: &str) -> String {
    match field.is_empty() {
        true => String::new(),
        false => format!("{field}: "),
    }
}

/// Which end of the tunnel this is (it picks the direction of each key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The end that is told every path's remote address, and keeps it.
    Initiator,
    /// The end that may be told none: it follows the newest authentic packet of each path (so
    /// an initiator behind NAT, or one that moves, is found).
    Responder,
}

/// How the tunnel's datagrams are protected (`seal`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SealMode {
    /// Encrypted and authenticated with the pre-shared key (ChaCha20-Poly1305).
    #[default]
    Chacha20Poly1305,
    /// In clear, without a key: the datagram a data plane without cryptography reads and
    /// writes (the eBPF UPF of ATSSS), for a network the operator trusts (`seal.rs`, "In
    /// clear").
    None,
}

/// The pre-shared key; its `Debug` shows none of it.
#[derive(Clone, PartialEq, Eq)]
pub struct Psk(pub Vec<u8>);

impl std::fmt::Debug for Psk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Psk({} bytes)", self.0.len())
    }
}

/// One path: a UDP socket and where it sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSpec {
    /// Name in counters and logs.
    pub name: String,
    /// The path's number on the wire (every datagram names it), and for the scheduler: `id`
    /// if given, else its place among the `[[path]]` tables. Both ends must agree; a reload
    /// keeps each remaining path's number.
    pub id: u8,
    /// Address and port the socket binds.
    pub local: SocketAddr,
    /// Interface the socket is bound to (`SO_BINDTODEVICE`), if any.
    pub interface: Option<String>,
    /// The far end's address and port; None until learned (responder only).
    pub remote: Option<SocketAddr>,
    /// A backup path (`role = "backup"`): it carries data only while every other path is
    /// down; acknowledgements and keepalives keep its state known meanwhile.
    pub backup: bool,
    /// Its share of packets against the other paths offered (`weight`, 1 to
    /// [`MAX_PATH_WEIGHT`]), for the `rr` scheduler.
    pub weight: u32,
}

/// Largest `[[path]] weight`.
pub const MAX_PATH_WEIGHT: u32 = 1000;

/// What carries a path's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// One UDP datagram per message.
    #[default]
    Udp,
    /// One TCP connection per path, messages as length-prefixed records
    /// ([`crate::stream`]).
    Tcp,
}

/// Settings of TCP paths; None leaves the system's default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpSpec {
    /// Congestion control (`TCP_CONGESTION`), e.g. `reno`, `cubic`, `bbr`.
    pub congestion: Option<String>,
    /// `SO_SNDBUF`, bytes (the kernel doubles it for its bookkeeping).
    pub send_buffer_bytes: Option<u32>,
    /// `SO_RCVBUF`, bytes (likewise doubled).
    pub receive_buffer_bytes: Option<u32>,
    /// `TCP_NODELAY`: send each record at once (default true: a tunnel must not add Nagle's
    /// delay to what it carries).
    pub nodelay: bool,
}

impl Default for TcpSpec {
    fn default() -> Self {
        TcpSpec {
            congestion: None,
            send_buffer_bytes: None,
            receive_buffer_bytes: None,
            nodelay: true,
        }
    }
}

/// The TUN device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSpec {
    /// Interface name (at most 15 bytes).
    pub name: String,
    /// Address and prefix length.
    pub address: (Ipv4Addr, u8),
    /// MTU, bytes.
    pub mtu: u32,
    /// Prefixes routed into the tunnel.
    pub routes: Vec<(Ipv4Addr, u8)>,
    /// Lower the MSS of TCP SYNs crossing the tunnel to what `mtu` carries ([`crate::mss`]).
    pub clamp_mss: bool,
}

/// A checked configuration.
#[derive(Debug)]
pub struct Config {
    /// This end's role.
    pub role: Role,
    /// The pre-shared key; None with `seal = "none"`.
    pub psk: Option<Psk>,
    /// The scheduler's registered name.
    pub scheduler: String,
    /// Its parameters.
    pub scheduler_params: Params,
    /// Where counters are served.
    pub metrics: Option<SocketAddr>,
    /// The TUN device.
    pub device: DeviceSpec,
    /// Acknowledgement, keepalive and liveness timing.
    pub path_timing: PathConfig,
    /// Reordering buffer, packets; 0: none, packets are delivered as they arrive (the AFMT
    /// paper's tunnel: reordering is measured, not repaired).
    pub reorder_capacity: usize,
    /// Longest a packet waits in the reordering buffer, ns.
    pub reorder_timeout_ns: u64,
    /// What carries the paths' messages.
    pub transport: Transport,
    /// TCP settings (TCP transport).
    pub tcp: TcpSpec,
    /// The paths, in the order their indices go on the wire.
    pub paths: Vec<PathSpec>,
}

/// Bytes a tunnel datagram adds to an inner packet besides IP and UDP: the authenticated
/// header and tag, and the data header.
pub const TUNNEL_OVERHEAD_BYTES: u32 = (seal::OVERHEAD_BYTES + DataHeader::BYTES) as u32;
/// Most packets the reordering buffer may be sized for.
pub const MAX_REORDER_CAPACITY: usize = 1 << 16;
/// Largest configuration file read: eight paths and every option take under 2 KiB.
pub const MAX_CONFIG_FILE_BYTES: u64 = 1 << 20;
/// Largest key file read: a key is 64 hex digits or 44 base64 characters and a newline.
pub const MAX_KEY_FILE_BYTES: u64 = 4 << 10;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    role: Role,
    key_file: Option<PathBuf>,
    key: Option<String>,
    #[serde(default)]
    seal: SealMode,
    #[serde(default = "default_scheduler")]
    scheduler: String,
    #[serde(default)]
    scheduler_params: toml::Table,
    metrics: Option<String>,
    device: RawDevice,
    #[serde(default)]
    timing: RawTiming,
    #[serde(default)]
    transport: Transport,
    tcp: Option<RawTcp>,
    #[serde(default)]
    path: Vec<RawPath>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTcp {
    congestion: Option<String>,
    send_buffer: Option<String>,
    receive_buffer: Option<String>,
    nodelay: Option<bool>,
}

fn default_scheduler() -> String {
    "bond".into()
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    name: String,
    address: String,
    mtu: Option<String>,
    #[serde(default)]
    routes: Vec<String>,
    clamp_mss: Option<bool>,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTiming {
    ack_every: Option<u32>,
    ack_delay: Option<String>,
    keepalive: Option<String>,
    dead_after: Option<String>,
    reorder_timeout: Option<String>,
    reorder_capacity: Option<usize>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPath {
    name: String,
    local: String,
    interface: Option<String>,
    remote: Option<String>,
    role: Option<String>,
    id: Option<u8>,
    weight: Option<u32>,
}

/// Errors of one file.
struct Ctx<'a>(&'a str);

impl Ctx<'_> {
    fn err(&self, field: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.0.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }

    fn time_ns(&self, field: &str, text: &Option<String>, default_ns: u64) -> Result<u64, ConfigError> {
        match text {
            None => Ok(default_ns),
            Some(t) => parse_time_ps(t).map(|ps| ps / 1_000).map_err(|e| self.err(field, e)),
        }
    }
}

impl Config {
    /// Read and check the configuration in `path`; a relative `key_file` is taken from the
    /// configuration's folder. Only a regular file of at most [`MAX_CONFIG_FILE_BYTES`] is
    /// read (a FIFO or a device is refused, not waited on or read for ever).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let name = path.display().to_string();
        let text =
            read_bounded(path, MAX_CONFIG_FILE_BYTES).map_err(|e| Ctx(&name).err("", format!("cannot read: {e}")))?;
        Config::parse(&text, &name, path.parent().unwrap_or(Path::new(".")))
    }

    /// Only the `metrics` address of the configuration in `path` (what `mpsched tunnel
    /// status` needs): the rest is not checked and the key file is not opened, so a user who
    /// may read the configuration but not the key can ask a running end.
    pub fn metrics_address(path: &Path) -> Result<Option<SocketAddr>, ConfigError> {
        #[derive(serde::Deserialize)]
        struct OnlyMetrics {
            metrics: Option<String>,
        }
        let name = path.display().to_string();
        let ctx = Ctx(&name);
        let text = read_bounded(path, MAX_CONFIG_FILE_BYTES).map_err(|e| ctx.err("", format!("cannot read: {e}")))?;
        let raw: OnlyMetrics = toml::from_str(&text).map_err(|e| {
            let (field, message) = crate::fields::describe(&e, &text);
            ctx.err(field, message)
        })?;
        raw.metrics
            .map(|m| {
                m.parse()
                    .map_err(|_| ctx.err("metrics", format!("`{m}` is not an address:port")))
            })
            .transpose()
    }

    /// Check the configuration `text` (from `file`, for messages; files it names are taken
    /// from `dir` when relative).
    pub fn parse(text: &str, file: &str, dir: &Path) -> Result<Config, ConfigError> {
        let ctx = Ctx(file);
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let (field, message) = crate::fields::describe(&e, text);
            ctx.err(field, message)
        })?;
        let psk = read_key(&ctx, &raw, dir)?;
        let (scheduler, scheduler_params) = scheduler_of(&ctx, &raw)?;
        let metrics = match &raw.metrics {
            None => None,
            Some(m) => Some(
                m.parse()
                    .map_err(|_| ctx.err("metrics", format!("`{m}` is not an address:port")))?,
            ),
        };
        let device = device_of(&ctx, &raw.device)?;
        let (path_timing, reorder_capacity, reorder_timeout_ns) = timing_of(&ctx, &raw.timing)?;
        let paths = paths_of(&ctx, raw.role, &raw.path)?;
        check_weights(&ctx, &scheduler, &paths)?;
        let tcp = tcp_of(&ctx, raw.transport, raw.tcp.as_ref())?;
        Ok(Config {
            transport: raw.transport,
            tcp,
            role: raw.role,
            psk: psk.map(Psk),
            scheduler,
            scheduler_params,
            metrics,
            device,
            path_timing,
            reorder_capacity,
            reorder_timeout_ns,
            paths,
        })
    }

    /// The largest datagram a path carries: the MTU and the tunnel's overhead (the sealed
    /// one, 16 bytes more than in clear: a clear datagram is never longer).
    pub fn max_datagram_bytes(&self) -> usize {
        (self.device.mtu + TUNNEL_OVERHEAD_BYTES) as usize
    }
}

fn read_key(ctx: &Ctx<'_>, raw: &RawConfig, dir: &Path) -> Result<Option<Vec<u8>>, ConfigError> {
    if raw.seal == SealMode::None {
        return match (&raw.key, &raw.key_file) {
            (None, None) => Ok(None),
            (Some(_), _) => Err(ctx.err("key", "`seal = \"none\"` uses no key: remove it")),
            (None, Some(_)) => Err(ctx.err("key_file", "`seal = \"none\"` uses no key: remove it")),
        };
    }
    let (field, text) = match (&raw.key, &raw.key_file) {
        (Some(k), None) => ("key", k.clone()),
        (None, Some(f)) => {
            let p = dir.join(f);
            let t = read_bounded(&p, MAX_KEY_FILE_BYTES)
                .map_err(|e| ctx.err("key_file", format!("{}: cannot read: {e}", p.display())))?;
            warn_if_readable_by_others(&p);
            ("key_file", t)
        }
        _ => return Err(ctx.err("key_file", "give exactly one of `key_file` and `key`")),
    };
    seal::parse_psk(&text)
        .map(Some)
        .map_err(|e| ctx.err(field, e.to_string()))
}

/// Say so when the key file can be read by others than its owner (it is the tunnel's only
/// secret).
fn warn_if_readable_by_others(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = std::fs::metadata(p) {
        if m.permissions().mode() & 0o077 != 0 {
            eprintln!(
                "mpsched tunnel: warning: {} can be read by others than its owner (chmod 600 it)",
                p.display()
            );
        }
    }
}

fn scheduler_of(ctx: &Ctx<'_>, raw: &RawConfig) -> Result<(String, Params), ConfigError> {
    let prog = tunnel_scheduler(&raw.scheduler).ok_or_else(|| {
        ctx.err(
            "scheduler",
            format!(
                "unknown scheduler `{}` (expected one of {})",
                raw.scheduler,
                tunnel_scheduler_names()
            ),
        )
    })?;
    let declared = prog.params();
    let mut params = Params::defaults(declared);
    for (k, v) in &raw.scheduler_params {
        let field = format!("scheduler_params.{k}");
        let kind = declared.iter().find(|p| p.name == k).map(|p| p.kind);
        // An integer is in base units (ps, bit/s, bytes); a string in the parameter's units.
        let n = match (v, kind) {
            (toml::Value::String(text), Some(ParamKind::Time)) => parse_time_ps(text),
            (toml::Value::String(text), Some(ParamKind::Rate)) => parse_rate_bps(text),
            (toml::Value::String(text), Some(ParamKind::Bytes)) => parse_size_bytes(text),
            _ => v
                .as_integer()
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| "expected a count of at least 0, or a time, rate or size with its unit".to_string()),
        }
        .map_err(|e| ctx.err(&field, e))?;
        params.set(declared, k, n).map_err(|e| ctx.err(&field, e))?;
    }
    Ok((prog.name().to_string(), params))
}

fn prefix(ctx: &Ctx<'_>, field: &str, text: &str) -> Result<(Ipv4Addr, u8), ConfigError> {
    let bad = || ctx.err(field, format!("`{text}` is not an IPv4 prefix like 10.2.0.0/16"));
    let (a, l) = text.split_once('/').ok_or_else(bad)?;
    let len: u8 = l.parse().map_err(|_| bad())?;
    if len > 32 {
        return Err(bad());
    }
    Ok((a.parse().map_err(|_| bad())?, len))
}

fn device_of(ctx: &Ctx<'_>, d: &RawDevice) -> Result<DeviceSpec, ConfigError> {
    if d.name.is_empty()
        || d.name.len() > 15
        || !d
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    {
        return Err(ctx.err(
            "device.name",
            "an interface name of 1 to 15 letters, digits, `-`, `_` or `.`",
        ));
    }
    let mtu = match &d.mtu {
        None => 1400,
        Some(t) => parse_size_bytes(t).map_err(|e| ctx.err("device.mtu", e))?,
    };
    let max = 65_507 - u64::from(TUNNEL_OVERHEAD_BYTES);
    if !(576..=max).contains(&mtu) {
        return Err(ctx.err("device.mtu", format!("{mtu} B: expected 576 B to {max} B (a UDP datagram's largest payload less the tunnel's {TUNNEL_OVERHEAD_BYTES} B)")));
    }
    let routes = d
        .routes
        .iter()
        .enumerate()
        .map(|(i, r)| prefix(ctx, &format!("device.routes[{i}]"), r))
        .collect::<Result<_, _>>()?;
    Ok(DeviceSpec {
        name: d.name.clone(),
        address: prefix(ctx, "device.address", &d.address)?,
        mtu: mtu as u32,
        routes,
        clamp_mss: d.clamp_mss.unwrap_or(true),
    })
}

fn timing_of(ctx: &Ctx<'_>, t: &RawTiming) -> Result<(PathConfig, usize, u64), ConfigError> {
    let d = PathConfig::default();
    let cfg = PathConfig {
        ack_every: t.ack_every.unwrap_or(d.ack_every),
        ack_delay_max_ns: ctx.time_ns("timing.ack_delay", &t.ack_delay, d.ack_delay_max_ns)?,
        keepalive_ns: ctx.time_ns("timing.keepalive", &t.keepalive, d.keepalive_ns)?,
        dead_after_ns: ctx.time_ns("timing.dead_after", &t.dead_after, d.dead_after_ns)?,
    };
    if !(1..=64).contains(&cfg.ack_every) {
        return Err(ctx.err("timing.ack_every", "expected 1 to 64 messages"));
    }
    if cfg.keepalive_ns < 1_000_000 || cfg.dead_after_ns <= cfg.keepalive_ns {
        return Err(ctx.err(
            "timing.dead_after",
            "keepalive must be at least 1ms and dead_after longer than keepalive (a path is judged by its keepalives)",
        ));
    }
    let cap = t.reorder_capacity.unwrap_or(1024);
    if cap > MAX_REORDER_CAPACITY {
        return Err(ctx.err(
            "timing.reorder_capacity",
            format!("expected 0 (no reordering buffer) to {MAX_REORDER_CAPACITY} packets"),
        ));
    }
    let timeout = ctx.time_ns("timing.reorder_timeout", &t.reorder_timeout, 100_000_000)?;
    if timeout > 10_000_000_000 {
        return Err(ctx.err("timing.reorder_timeout", "at most 10s"));
    }
    Ok((cfg, cap, timeout))
}

fn tcp_of(ctx: &Ctx<'_>, transport: Transport, raw: Option<&RawTcp>) -> Result<TcpSpec, ConfigError> {
    let Some(raw) = raw else { return Ok(TcpSpec::default()) };
    if transport != Transport::Tcp {
        return Err(ctx.err("tcp", "TCP settings need transport = \"tcp\""));
    }
    let buffer = |field: &str, text: &Option<String>| -> Result<Option<u32>, ConfigError> {
        let Some(t) = text else { return Ok(None) };
        let b = parse_size_bytes(t).map_err(|e| ctx.err(field, e))?;
        if !(4096..=1 << 30).contains(&b) {
            return Err(ctx.err(field, format!("{b} B: expected 4KiB to 1GiB")));
        }
        Ok(Some(b as u32))
    };
    if let Some(cc) = &raw.congestion {
        if cc.is_empty() || cc.len() > 15 || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(ctx.err("tcp.congestion", format!("`{cc}` is not a congestion control's name")));
        }
    }
    Ok(TcpSpec {
        congestion: raw.congestion.clone(),
        send_buffer_bytes: buffer("tcp.send_buffer", &raw.send_buffer)?,
        receive_buffer_bytes: buffer("tcp.receive_buffer", &raw.receive_buffer)?,
        nodelay: raw.nodelay.unwrap_or(true),
    })
}

fn paths_of(ctx: &Ctx<'_>, role: Role, raw: &[RawPath]) -> Result<Vec<PathSpec>, ConfigError> {
    if raw.is_empty() || raw.len() > MAX_PATHS {
        return Err(ctx.err(
            "path",
            format!("expected 1 to {MAX_PATHS} [[path]] tables, got {}", raw.len()),
        ));
    }
    let mut out: Vec<PathSpec> = Vec::new();
    for (i, p) in raw.iter().enumerate() {
        let f = |k: &str| format!("path[{i}].{k}");
        let addr = |k: &str, t: &str| -> Result<SocketAddr, ConfigError> {
            t.parse()
                .map_err(|_| ctx.err(f(k), format!("`{t}` is not an address:port")))
        };
        let local = addr("local", &p.local)?;
        let remote = p.remote.as_deref().map(|r| addr("remote", r)).transpose()?;
        if remote.is_none() && role == Role::Initiator {
            return Err(ctx.err(f("remote"), "the initiator must know where each path goes"));
        }
        if let Some(r) = remote {
            check_remote(r).map_err(|e| ctx.err(f("remote"), e))?;
            if let Some(o) = out.iter().find(|o| o.remote == Some(r)) {
                return Err(ctx.err(
                    f("remote"),
                    format!("path `{}` goes to {r} too: each path needs its own far end", o.name),
                ));
            }
        }
        if out.iter().any(|o| o.name == p.name) {
            return Err(ctx.err(f("name"), format!("two paths called `{}`", p.name)));
        }
        if out.iter().any(|o| o.local == local && local.port() != 0) {
            return Err(ctx.err(f("local"), format!("two paths bind {local}")));
        }
        if p.interface.as_ref().is_some_and(|n| n.is_empty() || n.len() > 15) {
            return Err(ctx.err(f("interface"), "an interface name of 1 to 15 bytes"));
        }
        let backup = match p.role.as_deref() {
            None | Some("active") => false,
            Some("backup") => true,
            Some(r) => return Err(ctx.err(f("role"), format!("`{r}`: expected active or backup"))),
        };
        let weight = p.weight.unwrap_or(1);
        if !(1..=MAX_PATH_WEIGHT).contains(&weight) {
            return Err(ctx.err(f("weight"), format!("{weight}: expected 1 to {MAX_PATH_WEIGHT}")));
        }
        out.push(PathSpec {
            weight,
            id: path_id(ctx, raw, i)?,
            name: p.name.clone(),
            local,
            interface: p.interface.clone(),
            remote,
            backup,
        });
    }
    if out.iter().all(|p| p.backup) {
        return Err(ctx.err("path", "every path is a backup: at least one must be active"));
    }
    Ok(out)
}

/// Weights other than 1 only where the scheduler splits by them: another would ignore them
/// silently.
fn check_weights(ctx: &Ctx<'_>, scheduler: &str, paths: &[PathSpec]) -> Result<(), ConfigError> {
    match paths.iter().position(|p| p.weight != 1) {
        Some(i) if scheduler != "rr" => Err(ctx.err(
            format!("path[{i}].weight"),
            format!("scheduler `{scheduler}` splits by what it measures, not by weights: only `rr` uses them"),
        )),
        _ => Ok(()),
    }
}

/// The wire number of `raw[i]`: its `id`, or its place when no path gives one. Numbers are
/// below [`MAX_PATHS`] and distinct, and either every path gives one or none does (a mix
/// would number one path twice, or the reader could not tell which).
fn path_id(ctx: &Ctx<'_>, raw: &[RawPath], i: usize) -> Result<u8, ConfigError> {
    let field = format!("path[{i}].id");
    let given = raw.iter().filter(|p| p.id.is_some()).count();
    let Some(id) = raw[i].id else {
        return match given {
            0 => Ok(i as u8),
            _ => Err(ctx.err(
                field,
                "some paths give an `id` and this one does not: give every path one, or none",
            )),
        };
    };
    if usize::from(id) >= MAX_PATHS {
        return Err(ctx.err(field, format!("{id}: expected 0 to {}", MAX_PATHS - 1)));
    }
    if given < raw.len() {
        return Err(ctx.err(field, "some paths give no `id`: give every path one, or none"));
    }
    if let Some(o) = raw[..i].iter().find(|o| o.id == Some(id)) {
        return Err(ctx.err(field, format!("path `{}` has id {id} too", o.name)));
    }
    Ok(id)
}

/// Why `r` cannot be sent to, if it cannot: no host has the unspecified address, and no
/// socket port 0.
fn check_remote(r: SocketAddr) -> Result<(), String> {
    if r.ip().is_unspecified() {
        return Err(format!("{r}: {} is no host's address; give the far end's", r.ip()));
    }
    if r.port() == 0 {
        return Err(format!("{r}: port 0 is no socket's; give the far end's port"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    fn good() -> String {
        format!(
            r#"
role = "initiator"
key = "{KEY}"
scheduler = "rr"
metrics = "127.0.0.1:9120"
[device]
name = "mpt0"
address = "10.99.0.1/30"
routes = ["10.2.0.0/16"]
[timing]
reorder_timeout = "50ms"
[[path]]
name = "a"
local = "10.0.1.1:4789"
remote = "10.0.1.2:4789"
[[path]]
name = "b"
local = "10.0.2.1:4789"
interface = "veth1"
remote = "10.0.2.2:4789"
"#
        )
    }

    fn parse(t: &str) -> Result<Config, ConfigError> {
        Config::parse(t, "t.toml", Path::new("."))
    }

    #[test]
    fn a_full_configuration_is_read_in_the_scenarios_units() {
        let c = parse(&good()).unwrap();
        assert_eq!(c.role, Role::Initiator);
        let psk = c.psk.as_ref().unwrap();
        assert_eq!(psk.0.len(), 32);
        assert_eq!(format!("{psk:?}"), "Psk(32 bytes)", "no key in logs");
        assert_eq!(c.device.mtu, 1400);
        assert_eq!(c.device.routes, [("10.2.0.0".parse().unwrap(), 16)]);
        assert_eq!(c.reorder_timeout_ns, 50_000_000);
        assert_eq!(c.paths.len(), 2);
        assert_eq!(c.paths[1].interface.as_deref(), Some("veth1"));
        assert_eq!(c.max_datagram_bytes(), 1400 + 48);
    }

    #[test]
    fn paths_are_numbered_by_place_or_by_id_and_ids_are_distinct() {
        let c = parse(&good()).unwrap();
        assert_eq!(c.paths.iter().map(|p| p.id).collect::<Vec<_>>(), [0, 1]);
        let ids = good().replacen("name = \"a\"", "name = \"a\"\nid = 5", 1).replacen(
            "name = \"b\"",
            "name = \"b\"\nid = 2",
            1,
        );
        let c = parse(&ids).unwrap();
        assert_eq!(c.paths.iter().map(|p| p.id).collect::<Vec<_>>(), [5, 2]);
        let twice = ids.replacen("id = 2", "id = 5", 1);
        let e = parse(&twice).unwrap_err();
        assert_eq!(e.field, "path[1].id", "{e}");
        assert!(e.message.contains("path `a` has id 5 too"), "{e}");
    }

    #[test]
    fn weights_are_for_round_robin_only() {
        let weighted = good().replacen("interface = \"veth1\"", "weight = 3", 1);
        assert_eq!(parse(&weighted).unwrap().paths[1].weight, 3);
        assert_eq!(parse(&good()).unwrap().paths[0].weight, 1);
        let e = parse(&weighted.replacen("scheduler = \"rr\"", "scheduler = \"bond\"", 1)).unwrap_err();
        assert_eq!(e.field, "path[1].weight", "{e}");
        assert!(e.message.contains("only `rr` uses them"), "{e}");
    }

    #[test]
    fn each_mistake_names_its_field() {
        let cases = [
            ("scheduler = \"rr\"", "scheduler = \"fastest\"", "scheduler"),
            (
                "routes = [\"10.2.0.0/16\"]",
                "routes = [\"10.2.0.0/33\"]",
                "device.routes[0]",
            ),
            (
                "reorder_timeout = \"50ms\"",
                "reorder_timeout = \"50 parsecs\"",
                "timing.reorder_timeout",
            ),
            (
                "reorder_timeout = \"50ms\"",
                "reorder_capacity = 65537",
                "timing.reorder_capacity",
            ),
            ("remote = \"10.0.1.2:4789\"", "", "path[0].remote"),
            ("name = \"b\"", "name = \"a\"", "path[1].name"),
            ("name = \"mpt0\"", "name = \"a-name-far-too-long\"", "device.name"),
            (&format!("key = \"{KEY}\""), "key = \"00\"", "key"),
            ("metrics = \"127.0.0.1:9120\"", "metrics = \"localhost\"", "metrics"),
            ("[timing]", "[timing]\nack_every = 0", "timing.ack_every"),
            ("[timing]", "[timing]\nwhat = 1", "timing.what"),
            ("[timing]", "[tcp]\ncongestion = \"reno\"\n[timing]", "tcp"),
            ("scheduler = \"rr\"", "seal = \"rot13\"", "seal"),
            ("scheduler = \"rr\"", "seal = \"none\"", "key"),
            ("interface = \"veth1\"", "role = \"spare\"", "path[1].role"),
            ("interface = \"veth1\"", "id = 1", "path[0].id"),
            ("name = \"a\"", "name = \"a\"\nid = 8", "path[0].id"),
            ("interface = \"veth1\"", "weight = 0", "path[1].weight"),
            ("interface = \"veth1\"", "weight = 1001", "path[1].weight"),
        ];
        for (from, to, field) in cases {
            let t = good().replacen(from, to, 1);
            let e = parse(&t).expect_err(to);
            assert_eq!(e.field, field, "{to}: {e}");
        }
    }

    /// What serde and the TOML parser refuse (a value of the wrong type or kind, a missing or
    /// unknown key, TOML that does not parse) is named by its field too, never `-`.
    #[test]
    fn what_the_toml_reader_refuses_names_its_field() {
        let cases = [
            ("role = \"initiator\"", "role = \"boss\"", "role"),
            ("role = \"initiator\"", "", "role"),
            (
                "role = \"initiator\"",
                "role = \"initiator\"\ntransport = \"quic\"",
                "transport",
            ),
            ("role = \"initiator\"", "role = \"initiator\"\nwhat = 1", "what"),
            ("routes = [\"10.2.0.0/16\"]", "mtu = 1400", "device.mtu"),
            (
                "routes = [\"10.2.0.0/16\"]",
                "routes = [\"10.2.0.0/16\", 7]",
                "device.routes[1]",
            ),
            ("address = \"10.99.0.1/30\"", "", "device.address"),
            ("reorder_timeout = \"50ms\"", "ack_every = \"2\"", "timing.ack_every"),
            ("reorder_timeout = \"50ms\"", "ack_every = -1", "timing.ack_every"),
            ("local = \"10.0.2.1:4789\"", "", "path[1].local"),
            ("interface = \"veth1\"", "interface = 3", "path[1].interface"),
            ("interface = \"veth1\"", "mtu = \"1400B\"", "path[1].mtu"),
            ("[timing]", "[timing]\nkeepalive = ", "timing.keepalive"),
            ("[timing]", "[timing]\nack_every = 1\nack_every = 2", "timing.ack_every"),
            ("[timing]", "[timing]\n@@@", "timing"),
            ("role = \"initiator\"", "@@@\nrole = \"initiator\"", "line 2"),
        ];
        for (from, to, field) in cases {
            let t = good().replacen(from, to, 1);
            assert_ne!(t, good(), "{from}");
            let e = parse(&t).expect_err(to);
            assert_eq!(e.field, field, "{to}: {e}");
            assert!(e.to_string().contains(" (line "), "{e}");
        }
        let t = format!("transport = \"tcp\"\n{}", good()).replace("[timing]", "[tcp]\nnodelay = \"yes\"\n[timing]");
        assert_eq!(parse(&t).unwrap_err().field, "tcp.nodelay");
    }

    /// `status` reads only the metrics address: a key it may not read is no obstacle.
    #[test]
    fn the_metrics_address_is_read_without_the_key() {
        let dir = scratch("metrics-only");
        let f = dir.join("a.toml");
        std::fs::write(
            &f,
            "role = \"initiator\"\nkey_file = \"/nonexistent/key\"\nmetrics = \"127.0.0.1:9120\"\n",
        )
        .unwrap();
        assert_eq!(
            Config::metrics_address(&f).unwrap(),
            Some("127.0.0.1:9120".parse().unwrap())
        );
        assert!(Config::load(&f).is_err(), "the whole configuration is not valid");
        std::fs::write(&f, "role = \"initiator\"\n").unwrap();
        assert_eq!(Config::metrics_address(&f).unwrap(), None);
        std::fs::write(&f, "metrics = \"localhost\"\n").unwrap();
        assert_eq!(Config::metrics_address(&f).unwrap_err().field, "metrics");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A path may be a backup; not every path.
    #[test]
    fn a_backup_path_is_marked_and_a_tunnel_of_backups_refused() {
        let t = good().replacen("interface = \"veth1\"", "interface = \"veth1\"\nrole = \"backup\"", 1);
        let c = parse(&t).unwrap();
        assert_eq!((c.paths[0].backup, c.paths[1].backup), (false, true));
        let t = t.replacen(
            "remote = \"10.0.1.2:4789\"",
            "remote = \"10.0.1.2:4789\"\nrole = \"backup\"",
            1,
        );
        let e = parse(&t).unwrap_err();
        assert_eq!(e.field, "path", "{e}");
        assert!(e.message.contains("at least one must be active"), "{e}");
    }

    /// A remote no packet can reach is refused before anything is made: the unspecified
    /// address (of either family), port 0, or the far end of another path.
    #[test]
    fn a_remote_that_no_packet_can_reach_is_refused() {
        for bad in ["0.0.0.0:4789", "[::]:4789", "10.0.1.2:0", "10.0.1.2:4789"] {
            let t = good().replace("remote = \"10.0.2.2:4789\"", &format!("remote = \"{bad}\""));
            let e = parse(&t).expect_err(bad);
            assert_eq!(e.field, "path[1].remote", "{bad}: {e}");
        }
        let e = parse(&good().replace("remote = \"10.0.2.2:4789\"", "remote = \"10.0.1.2:4789\"")).unwrap_err();
        assert!(e.message.contains("path `a`"), "names the other path: {e}");
        let t = good()
            .replace("role = \"initiator\"", "role = \"responder\"")
            .replace("remote = \"10.0.1.2:4789\"", "remote = \"0.0.0.0:4789\"");
        assert_eq!(parse(&t).unwrap_err().field, "path[0].remote", "the responder's too");
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mpsched-tunneld-config-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `f()` on another thread, or a failure after `secs` (what used to hang must fail, not
    /// stall the test run).
    fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(secs))
            .expect("still reading after the deadline: it would hang")
    }

    /// The configuration and the key are read as scenarios are: regular files only (a FIFO is
    /// refused at once, `/dev/zero` is not read), of bounded size, checked on the open file.
    #[test]
    fn config_and_key_files_are_regular_and_bounded() {
        let dir = scratch("files");
        let fifo = dir.join("key.fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let with_key =
            |k: &Path| good().replace(&format!("key = \"{KEY}\""), &format!("key_file = \"{}\"", k.display()));
        for key in [fifo.clone(), PathBuf::from("/dev/zero"), dir.clone()] {
            let (t, d) = (with_key(&key), dir.clone());
            let e = within(10, move || Config::parse(&t, "t.toml", &d)).unwrap_err();
            assert_eq!(e.field, "key_file", "{e}");
            assert!(
                e.message.contains("a directory") || e.message.contains("not a regular file"),
                "{e}"
            );
        }
        let big = dir.join("big.key");
        std::fs::write(&big, format!("{KEY}\n").repeat(100)).unwrap();
        let e = parse(&with_key(&big)).unwrap_err();
        assert!(e.message.contains("at most 4096"), "{e}");
        for cfg in [fifo.clone(), PathBuf::from("/dev/zero")] {
            let e = within(10, move || Config::load(&cfg)).unwrap_err();
            assert_eq!(e.field, "", "the file as a whole: {e}");
            assert!(e.to_string().ends_with(": cannot read: not a regular file"), "{e}");
        }
        let huge = dir.join("huge.toml");
        let padding = "# padding\n".repeat((MAX_CONFIG_FILE_BYTES / 10 + 1) as usize);
        std::fs::write(&huge, good() + &padding).unwrap();
        let e = Config::load(&huge).unwrap_err();
        assert!(e.message.contains("at most 1048576"), "{e}");
        let fine = dir.join("fine.toml");
        std::fs::write(&fine, good()).unwrap();
        assert_eq!(Config::load(&fine).unwrap().paths.len(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn in_clear_there_is_no_key() {
        let t = good().replace(&format!("key = \"{KEY}\""), "seal = \"none\"");
        let c = parse(&t).unwrap();
        assert!(c.psk.is_none());
        let t = good().replace(&format!("key = \"{KEY}\""), "key_file = \"k\"\nseal = \"none\"");
        assert_eq!(parse(&t).unwrap_err().field, "key_file");
        let t = good().replace(&format!("key = \"{KEY}\""), "");
        assert_eq!(
            parse(&t).unwrap_err().field,
            "key_file",
            "sealed by default: a key is needed"
        );
    }

    #[test]
    fn the_example_configurations_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tunnel");
        let key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        for (f, role) in [("a.toml", Role::Initiator), ("b.toml", Role::Responder)] {
            let text = std::fs::read_to_string(dir.join(f)).unwrap();
            // The key file is the user's to make: the example's key stands in for it.
            let text = text.replace("key_file = \"tunnel.key\"", &format!("key = \"{key}\""));
            let c = Config::parse(&text, f, &dir).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((c.role, c.paths.len()), (role, 2), "{f}");
        }
    }

    #[test]
    fn scheduler_parameters_take_units_or_base_units() {
        let with = |params: &str| {
            let t = good().replace("scheduler = \"rr\"", "scheduler = \"cmon\"")
                + &format!("\n[scheduler_params]\n{params}\n");
            parse(&t)
        };
        let c = with("outage_floor = \"50ms\"\ninitial_cwnd = 20").unwrap();
        assert_eq!(c.scheduler_params.get("outage_floor"), 50_000_000_000);
        assert_eq!(c.scheduler_params.get("initial_cwnd"), 20);
        let c = with("outage_floor = 30000000000").unwrap();
        assert_eq!(
            c.scheduler_params.get("outage_floor"),
            30_000_000_000,
            "an integer is picoseconds"
        );
        let e = with("outage_floor = \"soon\"").unwrap_err();
        assert_eq!(e.field, "scheduler_params.outage_floor");
        let e = with("initial_cwnd = \"ten\"").unwrap_err();
        assert_eq!(e.field, "scheduler_params.initial_cwnd");
    }

    #[test]
    fn tcp_paths_take_their_settings_in_the_scenarios_units() {
        let t = good().replace(
            "[timing]",
            "transport = \"tcp\"\n[tcp]\ncongestion = \"reno\"\nsend_buffer = \"128KiB\"\nnodelay = false\n[timing]",
        );
        // `transport` must come before the first table.
        let t = t.replace("transport = \"tcp\"\n", "");
        let t = format!("transport = \"tcp\"\n{t}");
        let c = parse(&t).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.transport, Transport::Tcp);
        assert_eq!(c.tcp.congestion.as_deref(), Some("reno"));
        assert_eq!(c.tcp.send_buffer_bytes, Some(131_072));
        assert_eq!(c.tcp.receive_buffer_bytes, None);
        assert!(!c.tcp.nodelay);
        let bad = t.replace("send_buffer = \"128KiB\"", "send_buffer = \"1B\"");
        assert_eq!(parse(&bad).unwrap_err().field, "tcp.send_buffer");
        let bad = t.replace("\"reno\"", "\"re no\"");
        assert_eq!(parse(&bad).unwrap_err().field, "tcp.congestion");
    }

    #[test]
    fn the_responder_may_learn_remote_addresses() {
        let t = good()
            .replace("role = \"initiator\"", "role = \"responder\"")
            .replace("remote = \"10.0.1.2:4789\"", "");
        assert_eq!(parse(&t).unwrap().paths[0].remote, None);
    }
}
