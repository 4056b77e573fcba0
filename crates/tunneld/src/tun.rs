//! The TUN device: inner packets in and out, as raw IP (no packet-information prefix).
//!
//! The device is not persistent: it exists while the daemon holds its file descriptor, so the
//! kernel removes it, with its address and routes, however the daemon ends (a signal, a crash
//! or SIGKILL included). Address, MTU and routes are set with `ip`, as an administrator would.

use crate::config::DeviceSpec;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;

/// `TUNSETIFF` (`_IOW('T', 202, int)`).
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// `struct ifreq` as far as `TUNSETIFF` reads it.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// An open, configured TUN device.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    name: String,
}

impl Tun {
    /// Create the device `spec.name` (it must not exist), bring it up with its address, MTU and
    /// routes. Non-blocking.
    pub fn create(spec: &DeviceSpec) -> io::Result<Tun> {
        if std::path::Path::new("/sys/class/net").join(&spec.name).exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("an interface called `{}` exists already", spec.name),
            ));
        }
        // SAFETY: a plain open(2) of a constant path; the result is checked.
        let raw = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(with_context(io::Error::last_os_error(), "open /dev/net/tun"));
        }
        // SAFETY: `raw` is a descriptor we just opened and own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TUN | IFF_NO_PI,
            _pad: [0; 22],
        };
        req.name[..spec.name.len()].copy_from_slice(spec.name.as_bytes());
        // SAFETY: TUNSETIFF reads and writes an ifreq, which `req` is laid out as.
        if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) } < 0 {
            return Err(with_context(io::Error::last_os_error(), "TUNSETIFF"));
        }
        let tun = Tun {
            fd,
            name: spec.name.clone(),
        };
        tun.configure(spec)?;
        Ok(tun)
    }

    fn configure(&self, spec: &DeviceSpec) -> io::Result<()> {
        let (addr, len) = spec.address;
        let mtu = spec.mtu.to_string();
        ip(&["addr", "add", &format!("{addr}/{len}"), "dev", &self.name])?;
        ip(&["link", "set", "dev", &self.name, "mtu", &mtu, "up"])?;
        for (p, l) in &spec.routes {
            ip(&["route", "add", &format!("{p}/{l}"), "dev", &self.name])?;
        }
        Ok(())
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Read one packet into `buf`; `WouldBlock` when none waits.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for writes of its length.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Write one packet.
    pub fn send(&self, pkt: &[u8]) -> io::Result<usize> {
        // SAFETY: `pkt` is valid for reads of its length.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), pkt.as_ptr().cast(), pkt.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn with_context(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Run `ip ARGS`; its error output in the error.
fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output()?;
    if out.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}
