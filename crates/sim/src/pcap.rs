//! Writing an interface's packets to a pcap file that tcpdump, tshark and Wireshark open.
//!
//! Frames are rebuilt from the simulated headers as real Ethernet / IPv4 / UDP with checksums
//! and the ECN bits as they are on the wire at that point; the UDP payload starts with an
//! iperf-style header (seconds, microseconds, sequence number) and is zero-filled. Frames are
//! truncated to the snap length, as `tcpdump -s` does, with the original length recorded.
//! Custom headers a packet carries are written as shims between Ethernet and IPv4
//! ([`mpsched_core::headers`]; EtherType 0x88B5, which Wireshark shows as data).

use crate::event::TimePs;
use crate::packet::{Handshake, Packet, TcpPart};
use mpsched_core::feedback::feedback_payload;
use mpsched_core::headers::HeaderStack;
use mpsched_core::mptcp::MptcpOption;
use mpsched_core::wire::{emit_tcp_frame, emit_udp_frame, insert_shims, mac_for, TcpFields};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, TsResolution};
use std::fs::File;
use std::io::BufWriter;
use std::time::Duration;

/// Default snap length: headers plus the iperf header and some payload.
pub const DEFAULT_SNAPLEN: u32 = 128;

/// A capture on one interface of one node.
pub struct Capture {
    /// Node index.
    pub node: u32,
    /// Port index.
    pub port: u16,
    /// Peer node index (for the MAC addresses).
    pub peer: u32,
    /// Peer port.
    pub peer_port: u16,
    writer: PcapWriter<BufWriter<File>>,
    snaplen: u32,
    frame: Vec<u8>,
    payload: Vec<u8>,
    ip_id: u16,
    /// Frames written.
    pub frames: u64,
}

impl Capture {
    /// Create `path` and write the pcap header (nanosecond timestamps, Ethernet).
    pub fn create(
        path: &std::path::Path,
        node: u32,
        port: u16,
        peer: u32,
        peer_port: u16,
        snaplen: u32,
    ) -> std::io::Result<Capture> {
        let file = BufWriter::new(File::create(path)?);
        let header = PcapHeader {
            snaplen,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            ..PcapHeader::default()
        };
        let writer = PcapWriter::with_header(file, header).map_err(std::io::Error::other)?;
        Ok(Capture {
            node,
            port,
            peer,
            peer_port,
            writer,
            snaplen,
            frame: Vec::new(),
            payload: Vec::new(),
            ip_id: 0,
            frames: 0,
        })
    }

    /// Record `pkt` at `now`; `outgoing` tells the direction (for the MAC addresses).
    /// `tcp` is the packet's TCP part, for a TCP packet.
    /// `option` is its MPTCP option, if it has one; `headers` its custom headers, if any.
    pub fn record(
        &mut self,
        pkt: &Packet,
        tcp: Option<&TcpPart>,
        option: Option<&MptcpOption>,
        headers: Option<&HeaderStack>,
        now: TimePs,
        outgoing: bool,
    ) -> std::io::Result<()> {
        let (src, dst) = if outgoing {
            (mac_for(self.node, self.port), mac_for(self.peer, self.peer_port))
        } else {
            (mac_for(self.peer, self.peer_port), mac_for(self.node, self.port))
        };
        if let Some(t) = tcp {
            // Data segments carry seq (ack 1, the peer sends nothing); ACKs the reverse. A
            // connection that opened with a handshake (an MPTCP subflow: its segments carry an
            // option) numbers from ISN 0, so its first byte is 1.
            let isn = u64::from(option.is_some());
            let (seq, ack) = match (t.handshake, t.is_ack) {
                (Some(Handshake::Syn), _) => (0, 0),
                (Some(Handshake::SynAck), _) => (0, 1),
                (Some(Handshake::Ack), _) => (1, 1),
                (None, true) => (1, (t.seg.ack + isn) as u32),
                (None, false) => ((t.seg.seq + isn) as u32, 1),
            };
            let fields = TcpFields {
                seq,
                ack,
                flags: t.flags(),
                // Window scale 7, as Linux negotiates for a 3 MiB buffer. Data segments advertise
                // the sender's own (unmodelled, idle) receive buffer; ACKs the receiver's window.
                window: if t.is_ack {
                    (t.seg.window_bytes >> 7).min(0xffff) as u16
                } else {
                    ((3u64 << 20) >> 7) as u16
                },
                tsval: (now / 1_000_000_000) as u32,
                tsecr: 0,
                mptcp: option.copied(),
            };
            self.ip_id = self.ip_id.wrapping_add(1);
            emit_tcp_frame(
                &pkt.meta,
                src,
                dst,
                self.ip_id,
                &fields,
                t.seg.len as usize,
                &mut self.frame,
            );
        } else {
            self.udp_frame(pkt, src, dst);
        }
        if let Some(h) = headers {
            insert_shims(&mut self.frame, h);
        }
        let orig_len = self.frame.len() as u32;
        let keep = (self.snaplen as usize).min(self.frame.len());
        let ts = Duration::from_nanos(now / 1_000);
        self.writer
            .write_packet(&PcapPacket::new(ts, orig_len, &self.frame[..keep]))
            .map_err(std::io::Error::other)?;
        self.frames += 1;
        Ok(())
    }

    fn udp_frame(&mut self, pkt: &Packet, src: [u8; 6], dst: [u8; 6]) {
        self.payload.clear();
        if let Some(fb) = pkt.meta.feedback() {
            self.payload.extend_from_slice(&feedback_payload(fb.group, fb.path));
            self.payload.resize(18, 0); // pad to Ethernet's 60-byte minimum
        } else {
            let secs = (pkt.sent_ps / 1_000_000_000_000) as u32;
            let usecs = ((pkt.sent_ps / 1_000_000) % 1_000_000) as u32;
            self.payload.extend_from_slice(&secs.to_be_bytes());
            self.payload.extend_from_slice(&usecs.to_be_bytes());
            self.payload.extend_from_slice(&(pkt.seq as u32).to_be_bytes());
            self.payload.resize(pkt.payload_bytes as usize, 0);
        }
        self.ip_id = self.ip_id.wrapping_add(1);
        emit_udp_frame(&pkt.meta, src, dst, self.ip_id, &self.payload, &mut self.frame);
    }
}
