//! `[flow.rate_control]`: UDP flows paced by DCQCN's or PMQECN's reaction point, their
//! parameters in the scenario's units, and the errors at their fields.

use mpsched_scenario::{RateControl, Scenario};

fn with_flow(flow_extra: &str) -> String {
    format!(
        r#"
[scenario]
name = "rc"
duration = "1s"
[[node]]
name = "a"
kind = "host"
[[node]]
name = "s"
kind = "switch"
[[node]]
name = "b"
kind = "host"
[[link]]
a = "a"
b = "s"
rate = "10Mbps"
[[link]]
a = "s"
b = "b"
rate = "10Mbps"
[[flow]]
name = "f"
src = "a"
dst = "b"
{flow_extra}
"#
    )
}

fn refused(text: &str, field: &str, says: &str) {
    let e = Scenario::from_toml(text, "t.toml").unwrap_err();
    assert_eq!(e.field, field, "{e}");
    assert!(e.message.contains(says), "{e}");
}

#[test]
fn pmqecn_takes_the_papers_values_and_its_own_keys_in_units() {
    let sc = Scenario::from_toml(
        &with_flow(
            "rate = \"10Mbps\"\n[flow.rate_control]\ncc = \"pmqecn\"\ncycle = \"5ms\"\nactive_increase = \"2Mbps\"",
        ),
        "t.toml",
    )
    .unwrap();
    let Some(RateControl::Pmqecn(p)) = sc.flows[0].rate_control else {
        panic!("{:?}", sc.flows[0].rate_control)
    };
    assert_eq!(
        (p.initial_rate_bps, p.line_rate_bps, p.fast_recovery_cycles),
        (1_000_000, 10_000_000, 5)
    );
    assert_eq!((p.cycle_ns, p.active_increase_bps), (5_000_000, 2_000_000));
}

#[test]
fn dcqcn_defaults_scale_with_the_line_rate_and_the_cnp_interval_is_50us() {
    let sc = Scenario::from_toml(
        &with_flow("rate = \"10Mbps\"\n[flow.rate_control]\ncc = \"dcqcn\""),
        "t.toml",
    )
    .unwrap();
    let Some(RateControl::Dcqcn {
        params,
        cnp_interval_ps,
    }) = sc.flows[0].rate_control
    else {
        panic!()
    };
    assert_eq!(
        (params.line_rate_bps, params.g_shift, cnp_interval_ps),
        (10_000_000, 8, 50_000_000)
    );
}

#[test]
fn wrong_keys_and_values_are_refused_at_their_field() {
    refused(
        &with_flow("protocol = \"tcp\"\n[flow.rate_control]\ncc = \"dcqcn\""),
        "flow[0].rate_control",
        "UDP flows only",
    );
    refused(
        &with_flow("rate = \"10Mbps\"\n[flow.rate_control]\ncc = \"bbr\""),
        "flow[0].rate_control.cc",
        "expected `dcqcn` or `pmqecn`",
    );
    refused(
        &with_flow("rate = \"10Mbps\"\n[flow.rate_control]\ncc = \"pmqecn\"\ng_shift = 4"),
        "flow[0].rate_control.g_shift",
        "does not apply to `pmqecn`",
    );
    refused(
        &with_flow("rate = \"10Mbps\"\n[flow.rate_control]\ncc = \"pmqecn\"\ninitial_rate = \"20Mbps\""),
        "flow[0].rate_control.initial_rate",
        "to the flow's `rate`",
    );
    refused(
        &with_flow("rate = \"10Mbps\"\n[flow.rate_control]\ncc = \"dcqcn\"\nincrease_period = \"0s\""),
        "flow[0].rate_control.increase_period",
        "above 0",
    );
    refused(
        &with_flow("rate = \"10Mbps\"\n[flow.rate_control]\ncc = \"dcqcn\"\ng_shift = 0"),
        "flow[0].rate_control.g_shift",
        "1 to 20",
    );
}

#[test]
fn virtual_queue_programs_refuse_ports_that_could_drop_what_they_count() {
    let text = with_flow("rate = \"1Mbps\"").replace("duration = \"1s\"", "duration = \"1s\"\nprogram = \"vq-wrr\"");
    refused(&text, "programs.vq-wrr.vq_capacity", "8 x vq_capacity = 512");
    let ok = text.replace("program = \"vq-wrr\"", "program = \"vq-wrr\"\nqueue_pkts = 512");
    Scenario::from_toml(&ok, "t.toml").unwrap();
    let wrr = ok.replace(
        "[[link]]\na = \"s\"",
        "[[link]]\nqueues = 2\ndiscipline = \"wrr\"\nqueue_weights = [1, 1]\na = \"s\"",
    );
    refused(&wrr, "programs.vq-wrr.levels", "not served by strict priority");
}

#[test]
fn two_rate_controlled_flows_from_one_host_and_port_are_refused_at_the_second() {
    let rc = "rate = \"10Mbps\"\n[flow.rate_control]\ncc = \"dcqcn\"";
    let two = |port_of_second: &str| {
        format!(
            "{}\n[[flow]]\nname = \"g\"\nsrc = \"a\"\ndst = \"b\"\nsrc_port = {port_of_second}\n{rc}",
            with_flow(&format!("src_port = 7000\n{rc}"))
        )
    };
    refused(&two("7000"), "flow[1].src_port", "same host and port (7000) as `f`");
    assert!(Scenario::from_toml(&two("7001"), "t.toml").is_ok());
}
