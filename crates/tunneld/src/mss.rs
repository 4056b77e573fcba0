//! TCP MSS clamping of inner packets: a SYN's maximum segment size is lowered to what the
//! tunnel's device MTU carries, as `iptables -j TCPMSS --clamp-mss-to-pmtu` does on a router.
//!
//! A host that sends into the tunnel from behind the tunnel's end (a LAN the end routes for)
//! advertises the MSS of its own 1500-byte link; its peer then sends segments that do not fit
//! the tunnel's device, and with path MTU discovery blocked somewhere they are lost for good.
//! The end rewrites the MSS option of every SYN (and SYN-ACK) that crosses it, both ways, to at
//! most the device MTU less the IP and TCP headers, and fixes the TCP checksum incrementally
//! (RFC 1624), so the rest of the packet is never read.

/// IPv4 and TCP headers without options, bytes: the MSS is the MTU less these.
pub const V4_HEADERS_BYTES: u32 = 40;
/// IPv6 and TCP headers without options, bytes.
pub const V6_HEADERS_BYTES: u32 = 60;

/// The largest MSS an inner packet of `mtu` bytes carries, for IPv4 and for IPv6.
pub fn max_mss(mtu: u32) -> (u16, u16) {
    let clamp = |h: u32| mtu.saturating_sub(h).min(u32::from(u16::MAX)) as u16;
    (clamp(V4_HEADERS_BYTES), clamp(V6_HEADERS_BYTES))
}

/// Lower the MSS option of `pkt` to `max` (the pair of [`max_mss`]) if it is a TCP SYN that
/// asks for more; true if it was rewritten. Anything else, or bytes that are no such packet,
/// are left as they are.
pub fn clamp(pkt: &mut [u8], max: (u16, u16)) -> bool {
    let Some(&first) = pkt.first() else { return false };
    let (tcp_at, limit) = match first >> 4 {
        4 => {
            let ihl = usize::from(first & 0x0f) * 4;
            // TCP, the first fragment (a SYN is never a later one).
            let first_fragment = pkt.len() >= 20 && u16::from_be_bytes([pkt[6], pkt[7]]) & 0x1fff == 0;
            if ihl < 20 || !first_fragment || pkt[9] != 6 {
                return false;
            }
            (ihl, max.0)
        }
        // TCP right after the fixed header; a SYN behind extension headers is left alone.
        6 if pkt.len() >= 40 && pkt[6] == 6 => (40, max.1),
        _ => return false,
    };
    let Some(tcp) = pkt.get_mut(tcp_at..) else { return false };
    clamp_tcp(tcp, limit)
}

/// [`clamp`] on the TCP header and what follows.
fn clamp_tcp(tcp: &mut [u8], limit: u16) -> bool {
    const SYN: u8 = 0x02;
    if tcp.len() < 20 || tcp[13] & SYN == 0 {
        return false;
    }
    let header = usize::from(tcp[12] >> 4) * 4;
    let Some(options) = tcp.get(20..header.min(tcp.len())) else {
        return false;
    };
    let Some(at) = mss_option_at(options) else { return false };
    let at = 20 + at;
    let old = u16::from_be_bytes([tcp[at + 2], tcp[at + 3]]);
    if old <= limit {
        return false;
    }
    tcp[at + 2..at + 4].copy_from_slice(&limit.to_be_bytes());
    let sum = u16::from_be_bytes([tcp[16], tcp[17]]);
    tcp[16..18].copy_from_slice(&checksum_replace(sum, old, limit).to_be_bytes());
    true
}

/// Where in `options` the MSS option (kind 2, length 4) starts, if it is there whole.
fn mss_option_at(options: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < options.len() {
        match options[i] {
            0 => return None,
            1 => i += 1,
            kind => {
                let len = usize::from(*options.get(i + 1)?);
                if len < 2 || i + len > options.len() {
                    return None;
                }
                if kind == 2 && len == 4 {
                    return Some(i);
                }
                i += len;
            }
        }
    }
    None
}

/// The one's-complement checksum `sum` with the 16-bit word `old` replaced by `new`
/// (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')).
fn checksum_replace(sum: u16, old: u16, new: u16) -> u16 {
    let mut s = u32::from(!sum) + u32::from(!old) + u32::from(new);
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The TCP checksum of `tcp` over its pseudo-header (IPv4, `src`, `dst`).
    fn tcp_checksum_v4(src: [u8; 4], dst: [u8; 4], tcp: &[u8]) -> u16 {
        let mut words: Vec<u8> = Vec::new();
        words.extend_from_slice(&src);
        words.extend_from_slice(&dst);
        words.extend_from_slice(&[0, 6]);
        words.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
        words.extend_from_slice(tcp);
        if words.len() % 2 == 1 {
            words.push(0);
        }
        let mut s: u32 = words
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    /// An IPv4 TCP packet with flags `flags` and `options`, its TCP checksum right.
    fn v4(flags: u8, options: &[u8]) -> Vec<u8> {
        let (src, dst) = ([10, 0, 0, 1], [10, 2, 0, 9]);
        let mut tcp = vec![0u8; 20];
        tcp[0..2].copy_from_slice(&40000u16.to_be_bytes());
        tcp[2..4].copy_from_slice(&5201u16.to_be_bytes());
        tcp[12] = ((20 + options.len()) as u8 / 4) << 4;
        tcp[13] = flags;
        tcp.extend_from_slice(options);
        let sum = tcp_checksum_v4(src, dst, &tcp);
        tcp[16..18].copy_from_slice(&sum.to_be_bytes());
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0];
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(&tcp);
        p
    }

    const LINUX_SYN_OPTIONS: [u8; 20] = [2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7];

    fn mss_of(p: &[u8]) -> u16 {
        let tcp = &p[20..];
        let at = 20 + mss_option_at(&tcp[20..usize::from(tcp[12] >> 4) * 4]).unwrap();
        u16::from_be_bytes([tcp[at + 2], tcp[at + 3]])
    }

    #[test]
    fn a_syn_asking_1460_through_a_1400_byte_device_gets_1360_and_a_right_checksum() {
        let mut p = v4(0x02, &LINUX_SYN_OPTIONS);
        assert!(clamp(&mut p, max_mss(1400)));
        assert_eq!(mss_of(&p), 1360);
        let tcp = &p[20..];
        let mut zeroed = tcp.to_vec();
        zeroed[16..18].fill(0);
        let want = tcp_checksum_v4([10, 0, 0, 1], [10, 2, 0, 9], &zeroed);
        assert_eq!(u16::from_be_bytes([tcp[16], tcp[17]]), want);
        // Already small enough: untouched.
        let before = p.clone();
        assert!(!clamp(&mut p, max_mss(1400)));
        assert_eq!(p, before);
    }

    #[test]
    fn a_syn_ack_is_clamped_and_other_segments_and_protocols_are_not() {
        let mut synack = v4(0x12, &LINUX_SYN_OPTIONS);
        assert!(clamp(&mut synack, max_mss(1280)));
        assert_eq!(mss_of(&synack), 1240);
        for flags in [0x10, 0x18, 0x01] {
            let mut p = v4(flags, &LINUX_SYN_OPTIONS);
            assert!(!clamp(&mut p, max_mss(1280)), "flags {flags:#x}");
        }
        let mut udp = v4(0x02, &LINUX_SYN_OPTIONS);
        udp[9] = 17;
        assert!(!clamp(&mut udp, max_mss(1280)));
        let mut no_mss = v4(0x02, &[1, 1, 4, 2]);
        assert!(!clamp(&mut no_mss, max_mss(1280)));
    }

    #[test]
    fn ipv6_takes_its_longer_header_off() {
        let v4p = v4(0x02, &LINUX_SYN_OPTIONS);
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&((v4p.len() - 20) as u16).to_be_bytes());
        p.extend_from_slice(&[6, 64]);
        p.extend_from_slice(&[0xfd; 32]);
        p.extend_from_slice(&v4p[20..]);
        assert!(clamp(&mut p, max_mss(1400)));
        let at = 40 + 20 + mss_option_at(&p[60..80]).unwrap();
        assert_eq!(u16::from_be_bytes([p[at + 2], p[at + 3]]), 1340);
    }

    proptest! {
        /// Any bytes: no panic, and a rewrite changes only the MSS and the checksum.
        #[test]
        fn any_bytes_are_clamped_or_left_and_never_panic(
            b in proptest::collection::vec(any::<u8>(), 0..120), mtu in 0u32..70_000,
        ) {
            let mut p = b.clone();
            if clamp(&mut p, max_mss(mtu)) {
                let changed = p.iter().zip(&b).filter(|(x, y)| x != y).count();
                prop_assert!(changed <= 4);
            } else {
                prop_assert_eq!(p, b);
            }
        }

        /// The incremental checksum equals the one computed afresh, for any MSS asked.
        #[test]
        fn the_checksum_stays_right(mss in any::<u16>(), mtu in 576u32..9000) {
            let mut opts = LINUX_SYN_OPTIONS;
            opts[2..4].copy_from_slice(&mss.to_be_bytes());
            let mut p = v4(0x02, &opts);
            clamp(&mut p, max_mss(mtu));
            let mut zeroed = p[20..].to_vec();
            zeroed[16..18].fill(0);
            let want = tcp_checksum_v4([10, 0, 0, 1], [10, 2, 0, 9], &zeroed);
            prop_assert_eq!(u16::from_be_bytes([p[36], p[37]]), want);
        }
    }
}
