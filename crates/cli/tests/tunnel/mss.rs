//! TCP MSS clamping on a running pair of ends.

use crate::net::{Net, Paths, B_TUN};

/// a's route into the tunnel advertises an MSS of 1460 (as a LAN host behind the end would,
/// from its own 1500-byte link): a's daemon lowers the SYNs of iperf3's two connections to
/// the device's 1360 with a checksum b's kernel accepts (the connections are made and carry
/// data); b's SYN-ACKs already ask for 1360 and are left alone.
pub fn a_syn_asking_more_than_the_device_carries_is_clamped_with_a_valid_checksum() {
    let _g = crate::serial();
    let mut net = Net::build(
        "mss",
        &Paths {
            rate: None,
            delay_ms: vec![0, 0],
        },
    );
    net.start_both("rr", "");
    let route = ["route", "add", &format!("{B_TUN}/32"), "dev", "mpt0", "advmss", "1460"];
    let o = net.a.ip(&route).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bps = net.iperf(1);
    assert!(bps > 1e6, "iperf3 through the tunnel: {bps} bit/s");
    let clamped = |e| net.counter(e, "mpsched_tunnel_mss_clamped_total");
    assert_eq!(clamped('a'), 2.0, "iperf3's control and data SYNs: {}", net.log('a'));
    assert_eq!(clamped('b'), 0.0, "b's SYN-ACKs ask for the device's MSS already");
}
