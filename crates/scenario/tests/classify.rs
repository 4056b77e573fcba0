//! `[[classify]]`: classifier rules become each switch's ordered rules (a host of several
//! addresses one rule per address), and what no data plane can hold is refused at its field.

use mpsched_core::classify::ClassRule;
use mpsched_scenario::Scenario;

fn table1(classify: &str) -> Result<Scenario, String> {
    let (path, text) = mpsched_scenario::builtin::find("pmqecn2024/table1-sp-vs-vq-wrr").unwrap();
    // The file's own rules out, the test's in.
    let head = text.split("[[classify]]").next().unwrap();
    let tail = &text[text.find("[[variant]]").unwrap()..];
    Scenario::from_toml(&format!("{head}{classify}\n{tail}"), path).map_err(|e| e.to_string())
}

fn rules_at(sc: &Scenario, node: &str) -> Vec<ClassRule> {
    let w = sc.wiring().unwrap();
    w.switches[sc.node_index(node).unwrap()]
        .as_ref()
        .unwrap()
        .classify
        .clone()
}

#[test]
fn rules_reach_their_switch_in_file_order_with_addresses_and_prefixes() {
    let sc = table1(
        r#"
[[classify]]
at = "S1"
src = "H1"
dscp = 0
queue = 5
[[classify]]
at = "S1"
src = "10.9.0.77/16"
dst = "H5"
queue = 3
[[classify]]
at = "S2"
queue = 1
"#,
    )
    .unwrap();
    let ip = |n: &str| sc.nodes[sc.node_index(n).unwrap()].ip;
    let s1 = rules_at(&sc, "S1");
    assert_eq!(s1.len(), 2);
    assert_eq!(
        (s1[0].src, s1[0].src_len, s1[0].dst_len, s1[0].dscp, s1[0].queue),
        (ip("H1"), 32, 0, Some(0), 5)
    );
    assert_eq!((s1[1].src, s1[1].src_len), (0x0a09_0000, 16), "host bits cleared");
    assert_eq!((s1[1].dst, s1[1].dst_len, s1[1].queue), (ip("H5"), 32, 3));
    let s2 = rules_at(&sc, "S2");
    assert_eq!((s2.len(), s2[0].src_len, s2[0].dst_len, s2[0].dscp), (1, 0, 0, None));
    // Every variant keeps them: both programs classify.
    for v in sc.variant_names() {
        assert_eq!(rules_at(&sc.with_variant(&v).unwrap(), "S1").len(), 2);
    }
}

#[test]
fn what_no_data_plane_holds_is_refused_at_its_field() {
    let cases = [
        ("at = \"H1\"\nqueue = 1", "classify[0].at", "switches classify"),
        ("at = \"S9\"\nqueue = 1", "classify[0].at", "no node named"),
        ("at = \"S1\"\nqueue = 8", "classify[0].queue", "expected 0 to 7"),
        ("at = \"S1\"\ndscp = 64\nqueue = 1", "classify[0].dscp", "0 to 63"),
        (
            "at = \"S1\"\nsrc = \"10.0.0.0/33\"\nqueue = 1",
            "classify[0].src",
            "prefix length",
        ),
        (
            "at = \"S1\"\nsrc = \"H9\"\nqueue = 1",
            "classify[0].src",
            "no node named",
        ),
        (
            "at = \"S1\"\ndst = \"10.0.0/8\"\nqueue = 1",
            "classify[0].dst",
            "IPv4 prefix",
        ),
        ("at = \"S1\"\nqueue = 1\ncolour = 3", "", "unknown field"),
    ];
    for (rule, field, why) in cases {
        let e = table1(&format!("[[classify]]\n{rule}")).unwrap_err();
        assert!(e.contains(field) && e.contains(why), "{rule}: {e}");
    }
    let seventeen = "[[classify]]\nat = \"S1\"\nqueue = 1\n".repeat(17);
    let e = table1(&seventeen).unwrap_err();
    assert!(e.contains("more than 16"), "{e}");
}

#[test]
fn a_switch_whose_program_has_no_classifier_is_refused() {
    // Each variant is checked as the file loads: the one that runs LetFlow at S1 is refused.
    let (path, text) = mpsched_scenario::builtin::find("pmqecn2024/table1-sp-vs-vq-wrr").unwrap();
    let letflow = text.replace("program = \"vq-wrr\"", "program = \"letflow\"");
    let e = Scenario::from_toml(&letflow, path).unwrap_err().to_string();
    assert!(
        e.contains("variant[1].program") && e.contains("has no classifier") && e.contains("letflow"),
        "{e}"
    );
}
