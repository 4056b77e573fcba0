//! The daemon's configuration file (TOML), in the scenarios' units, checked before anything is
//! created.
//!
//! ```toml
//! role = "initiator"                 # this end: "initiator" or "responder"
//! key_file = "/etc/mpsched/tunnel.key"   # the pre-shared key (`mpsched tunnel --genkey`)
//! seal = "chacha20-poly1305"         # or "none": datagrams in clear, no key (optional)
//! scheduler = "afmt"                 # a registered tunnel scheduler (`rr`, `afmt`)
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
use mpsched_scenario::units::{parse_rate_bps, parse_size_bytes, parse_time_ps};
use mpsched_tunnel::path::PathConfig;
use mpsched_tunnel::seal;
use mpsched_tunnel::wire::DataHeader;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// A configuration that cannot be used, with the field at fault.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {field}: {message}")]
pub struct ConfigError {
    /// The file.
    pub file: String,
    /// The field (dotted), or `-` for the file as a whole.
    pub field: String,
    /// What is wrong.
    pub message: String,
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
    /// Address and port the socket binds.
    pub local: SocketAddr,
    /// Interface the socket is bound to (`SO_BINDTODEVICE`), if any.
    pub interface: Option<String>,
    /// The far end's address and port; None until learned (responder only).
    pub remote: Option<SocketAddr>,
}

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
    "afmt".into()
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    name: String,
    address: String,
    mtu: Option<String>,
    #[serde(default)]
    routes: Vec<String>,
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
    /// configuration's folder.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Ctx(&name).err("-", e.to_string()))?;
        Config::parse(&text, &name, path.parent().unwrap_or(Path::new(".")))
    }

    /// Check the configuration `text` (from `file`, for messages; files it names are taken
    /// from `dir` when relative).
    pub fn parse(text: &str, file: &str, dir: &Path) -> Result<Config, ConfigError> {
        let ctx = Ctx(file);
        let raw: RawConfig = toml::from_str(text).map_err(|e| ctx.err("-", e.message().to_string()))?;
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
            let t = std::fs::read_to_string(&p).map_err(|e| ctx.err("key_file", format!("{}: {e}", p.display())))?;
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
        if out.iter().any(|o| o.name == p.name) {
            return Err(ctx.err(f("name"), format!("two paths called `{}`", p.name)));
        }
        if out.iter().any(|o| o.local == local && local.port() != 0) {
            return Err(ctx.err(f("local"), format!("two paths bind {local}")));
        }
        if p.interface.as_ref().is_some_and(|n| n.is_empty() || n.len() > 15) {
            return Err(ctx.err(f("interface"), "an interface name of 1 to 15 bytes"));
        }
        out.push(PathSpec {
            name: p.name.clone(),
            local,
            interface: p.interface.clone(),
            remote,
        });
    }
    Ok(out)
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
            ("[timing]", "[timing]\nwhat = 1", "-"),
            ("[timing]", "[tcp]\ncongestion = \"reno\"\n[timing]", "tcp"),
            ("scheduler = \"rr\"", "seal = \"rot13\"", "-"),
            ("scheduler = \"rr\"", "seal = \"none\"", "key"),
        ];
        for (from, to, field) in cases {
            let t = good().replacen(from, to, 1);
            let e = parse(&t).expect_err(to);
            assert_eq!(e.field, field, "{to}: {e}");
        }
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
