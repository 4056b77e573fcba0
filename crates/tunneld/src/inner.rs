//! What the scheduler needs of an inner packet read from the TUN device: its flow.

use mpsched_core::tunnel::FlowKey;

/// The 5-tuple of an IPv4 or IPv6 packet (ports for TCP, UDP and SCTP first fragments; IPv6
/// addresses folded to 32 bits, which only the flow table's hashing sees). None for bytes that
/// are no IP packet.
pub fn flow_of(pkt: &[u8]) -> Option<FlowKey> {
    match pkt.first()? >> 4 {
        4 => flow_v4(pkt),
        6 => flow_v6(pkt),
        _ => None,
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn ports(proto: u8, l4: Option<&[u8]>) -> (u16, u16) {
    match (proto, l4) {
        (6 | 17 | 132, Some(l4)) if l4.len() >= 4 => {
            (u16::from_be_bytes([l4[0], l4[1]]), u16::from_be_bytes([l4[2], l4[3]]))
        }
        _ => (0, 0),
    }
}

fn flow_v4(pkt: &[u8]) -> Option<FlowKey> {
    let ihl = usize::from(pkt[0] & 0x0f) * 4;
    if pkt.len() < 20 || ihl < 20 {
        return None;
    }
    let proto = pkt[9];
    // Only a first fragment (offset 0) carries the ports.
    let first_fragment = u16::from_be_bytes([pkt[6], pkt[7]]) & 0x1fff == 0;
    let (src_port, dst_port) = ports(proto, pkt.get(ihl..).filter(|_| first_fragment));
    Some(FlowKey {
        src_ip: be32(&pkt[12..16]),
        dst_ip: be32(&pkt[16..20]),
        src_port,
        dst_port,
        proto,
    })
}

fn flow_v6(pkt: &[u8]) -> Option<FlowKey> {
    if pkt.len() < 40 {
        return None;
    }
    let fold = |a: &[u8]| be32(&a[0..4]) ^ be32(&a[4..8]) ^ be32(&a[8..12]) ^ be32(&a[12..16]);
    // Extension headers are not walked: a packet with them is keyed by its addresses.
    let proto = pkt[6];
    let (src_port, dst_port) = ports(proto, pkt.get(40..));
    Some(FlowKey {
        src_ip: fold(&pkt[8..24]),
        dst_ip: fold(&pkt[24..40]),
        src_port,
        dst_port,
        proto,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v4_tcp(frag: u16) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[6..8].copy_from_slice(&frag.to_be_bytes());
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p[20..22].copy_from_slice(&5001u16.to_be_bytes());
        p[22..24].copy_from_slice(&80u16.to_be_bytes());
        p
    }

    #[test]
    fn ipv4_flows_have_ports_only_in_first_fragments() {
        let f = flow_of(&v4_tcp(0)).unwrap();
        assert_eq!(
            (f.src_ip, f.dst_ip, f.src_port, f.dst_port, f.proto),
            (0x0a00_0001, 0x0a00_0002, 5001, 80, 6)
        );
        let later = flow_of(&v4_tcp(3)).unwrap();
        assert_eq!((later.src_port, later.dst_port), (0, 0));
        assert_eq!(flow_of(&v4_tcp(0)[..19]), None);
        assert_eq!(flow_of(&[0x60; 39]), None);
        assert_eq!(flow_of(&[]), None);
    }

    proptest! {
        #[test]
        fn any_bytes_give_a_flow_or_none_without_panicking(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = flow_of(&b);
        }
    }
}
