//! A packet socket on one interface: frames sent into it, frames that arrived read from it.
//! The conformance runners use one on each port's veth peer, where the next hop would be.

/// A packet socket bound to one interface (of the namespace it was opened in): what the
/// interface receives, as the next hop would see it; frames sent go out of it.
pub struct Tap(std::os::fd::OwnedFd);

impl Tap {
    /// Open a socket on interface `ifindex` of the calling thread's namespace.
    pub fn open(ifindex: u32) -> Result<Tap, String> {
        use std::os::fd::FromRawFd;
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket(2); the descriptor is owned from here on.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                i32::from(proto),
            )
        };
        if fd < 0 {
            return Err(format!("packet socket: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: fd is a fresh descriptor nothing else owns.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value to fill in.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = proto;
        addr.sll_ifindex = ifindex as i32;
        let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        use std::os::fd::AsRawFd;
        // SAFETY: addr is a valid sockaddr_ll of `len` bytes.
        let rc = unsafe { libc::bind(fd.as_raw_fd(), std::ptr::addr_of!(addr).cast(), len) };
        if rc != 0 {
            return Err(format!("bind packet socket: {}", std::io::Error::last_os_error()));
        }
        Ok(Tap(fd))
    }

    /// The next frame that arrived, waiting up to `timeout_ms` for it.
    pub fn next(&self, timeout_ms: i32) -> Option<Vec<u8>> {
        use std::os::fd::AsRawFd;
        let mut pfd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, timeout_ms) } <= 0 {
            return None;
        }
        let mut buf = vec![0u8; 4096];
        // SAFETY: buf is writable for its length.
        let n = unsafe { libc::recv(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        (n > 0).then(|| {
            buf.truncate(n as usize);
            buf
        })
    }

    /// Send `frame` out of the port this socket is bound to (it arrives at the veth's peer).
    pub fn send(&self, frame: &[u8]) -> Result<(), String> {
        use std::os::fd::AsRawFd;
        // SAFETY: frame is readable for its length; the socket is bound to one interface.
        let n = unsafe { libc::send(self.0.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if n != frame.len() as isize {
            return Err(format!("send on the wire: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Discard whatever has arrived.
    pub fn drain(&self) {
        while self.next(0).is_some() {}
    }
}
