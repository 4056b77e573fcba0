use super::*;
use crate::atsss::vector_sets::{downlink, path_addr, ue, ue_ip, upf_config, UPF};
use mpsched_core::rng::RawDraws;
use mpsched_core::table::Route;

fn upf(ues: Vec<mpsched_core::upf::UeEntry>) -> Upf {
    Upf::new(
        &upf_config(ues),
        &UpfParams::default(),
        Box::new(RawDraws::new(vec![0])),
    )
    .unwrap()
}

#[test]
fn the_table_kinds_are_numbered_as_the_registers_kinds() {
    for (k, r) in SteeringKind::ALL.iter().zip(Kind::ALL) {
        assert_eq!(kind_of(*k), r);
        assert_eq!(*k as u8, r as u8);
    }
    assert_eq!(mpsched_core::upf::MAX_UE_PATHS, MAX_PATHS);
    assert_eq!(mpsched_core::upf::RTTMON_MAX_WEIGHT, registers::RTTMON_MAX_WEIGHT);
}

#[test]
fn ack_applies_says_what_on_ack_does() {
    let cfg = UpfParams::default().config();
    for sent in 0..6u32 {
        for acked_before in 0..=sent {
            for acked in [0, 1, 2, 3, 4, 5, 6, u32::MAX, 1 << 31] {
                let mut u = registers::new_ue(&cfg, Kind::Wrr, 2, 0);
                u.paths[0].seq_sent = sent;
                u.paths[0].seq_acked = acked_before;
                let before = u;
                registers::on_ack(&mut u, &cfg, 0, &AckRegs { acked, lost: 0, rtt: 7 }, 99);
                assert_eq!(
                    ack_applies(&before.paths[0], acked),
                    u != before,
                    "sent {sent} acked {acked_before} -> {acked}"
                );
            }
        }
    }
}

#[test]
fn tables_the_upf_cannot_route_by_are_refused() {
    let mut c = upf_config(vec![ue(0, SteeringKind::Wrr, 1, 2)]);
    c.routes.push(Route {
        prefix: 0x0b00_0000,
        len: 8,
        port: ECMP_GROUP,
    });
    let e = Upf::new(&c, &UpfParams::default(), Box::new(SeededRandom::new(1)))
        .err()
        .unwrap();
    assert!(e.contains("one shortest path"), "{e}");
    let mut c = upf_config(vec![ue(0, SteeringKind::Wrr, 1, 2)]);
    c.upf.ues[0].paths[1].egress_port = 16;
    let e = Upf::new(&c, &UpfParams::default(), Box::new(SeededRandom::new(1)))
        .err()
        .unwrap();
    assert!(e.contains("egress port 16"), "{e}");
    let mut c = upf_config(vec![]);
    c.classify.push(mpsched_core::classify::ClassRule {
        src: 0,
        src_len: 0,
        dst: 0,
        dst_len: 0,
        dscp: None,
        queue: 1,
    });
    let input = BuildInput {
        node: "upf",
        tables: &c,
        params: &Params::defaults(PARAMS),
        seed: 1,
    };
    assert!(ATSSS.build(&input).err().unwrap().0.contains("classifier"));
}

#[test]
fn registers_read_by_ue_name_and_by_index_and_only_the_weight_is_written() {
    let mut u = upf(vec![ue(0, SteeringKind::Wrr, 7, 2), ue(1, SteeringKind::RttMon, 9, 2)]);
    assert_eq!(u.read_register("atsss.ue1.weight", 0), Ok(9));
    assert_eq!(u.read_register("atsss.weight", 1), Ok(9));
    assert_eq!(u.read_register("atsss.ue0.path1.cwnd", 0), Ok(10));
    assert_eq!(u.read_register("atsss.path.cwnd", 5), Ok(10));
    assert_eq!(u.read_register("atsss.ue1.kind", 0), Ok(2));
    assert!(matches!(
        u.read_register("atsss.ue2.weight", 0),
        Err(ControlError::NoIndex { .. })
    ));
    assert!(matches!(
        u.read_register("atsss.ue0.path9.cwnd", 0),
        Err(ControlError::NoRegister(_))
    ));
    assert!(matches!(
        u.read_register("atsss.ue0.weight", 1),
        Err(ControlError::NoIndex { .. })
    ));
    u.write_register("atsss.ue0.weight", 0, 200).unwrap();
    u.write_register("atsss.weight", 1, 62).unwrap();
    assert_eq!(u.read_register("atsss.weight", 0), Ok(200));
    assert!(matches!(
        u.write_register("atsss.weight", 1, 63),
        Err(ControlError::BadEntry { .. })
    ));
    assert!(matches!(
        u.write_register("atsss.ue0.path0.cwnd", 0, 3),
        Err(ControlError::ReadOnly(_))
    ));
    assert!(matches!(
        u.write_register("atsss.path.cwnd", 0, 3),
        Err(ControlError::ReadOnly(_))
    ));
    let l = u.control_listing();
    assert!(l
        .registers
        .iter()
        .any(|r| r.name == "atsss.weight" && r.size == 2 && r.writable));
    assert!(l
        .registers
        .iter()
        .any(|r| r.name == "atsss.path.seq_sent" && r.size == 8 && !r.writable));
    for r in &l.registers {
        for i in 0..r.size {
            u.read_register(&r.name, i)
                .unwrap_or_else(|e| panic!("{} {i}: {e}", r.name));
        }
    }
}

#[test]
fn the_metadata_view_moves_the_same_registers_as_the_frame() {
    let mut a = upf(vec![ue(0, SteeringKind::Wrr, 255, 2)]);
    let mut b = upf(vec![ue(0, SteeringKind::Wrr, 255, 2)]);
    let f = downlink(0, 100, 0x0a);
    let meta = parse_frame(&f, 0).unwrap();
    let mut buf = f.clone();
    assert_eq!(a.frame(&meta, &mut buf, 5_000_000), FrameVerdict::Forward(1));
    let mut m = meta;
    let mut ctx = Ctx::new();
    ctx.reset(5_000_000_000);
    assert_eq!(b.ingress(&mut m, &mut ctx), Verdict::Forward(1));
    assert_eq!(a.ues(), b.ues());
    let out = parse_frame(&buf, 0).unwrap();
    assert_eq!(
        (
            m.src_ip,
            m.dst_ip,
            m.src_port,
            m.dst_port,
            m.ttl,
            m.dscp,
            m.ecn,
            m.wire_len_bytes
        ),
        (
            out.src_ip,
            out.dst_ip,
            out.src_port,
            out.dst_port,
            out.ttl,
            out.dscp,
            out.ecn,
            out.wire_len_bytes
        )
    );
    assert_eq!(m.dst_ip, path_addr(0, 0));
    // Tunnel frames to the UPF are the node's in the metadata view; a packet too big is
    // dropped as TooBig.
    let mut to_upf = PacketMeta::udp(path_addr(0, 0), UPF, 6000, UPF_PORT, 80);
    assert_eq!(b.ingress(&mut to_upf, &mut ctx), Verdict::Consume);
    let mut big = PacketMeta::udp(1, ue_ip(0), 1, 2, 14 + 1441);
    assert_eq!(b.ingress(&mut big, &mut ctx), Verdict::Drop(DropReason::TooBig));
}

#[test]
fn draws_are_taken_by_the_weighted_kinds_only() {
    for k in SteeringKind::ALL {
        let c = upf_config(vec![ue(0, k, 0, 2)]);
        let mut u = Upf::new(&c, &UpfParams::default(), Box::new(RawDraws::new(vec![7]))).unwrap();
        struct Count(std::sync::Arc<std::sync::atomic::AtomicU32>);
        impl RandomSource for Count {
            fn next_u32(&mut self) -> u32 {
                self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                0
            }
        }
        let n = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        u.rng = Box::new(Count(n.clone()));
        u.downlink(0, 100, 0, 1_000_000).unwrap();
        assert_eq!(
            n.load(std::sync::atomic::Ordering::Relaxed) == 1,
            uses_draw(kind_of(k)),
            "{k:?}"
        );
    }
}
