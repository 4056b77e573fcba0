//! The built-in scenarios' comments describe the network they build: a comment that says
//! "pathN is A-B-C" names that path's nodes in order (the diamond's comments once said
//! "A4Mbps-A4Mbps-AP4" for AP1-AP2-AP4).

use mpsched_scenario::builtin::BUILTIN;
use mpsched_scenario::Scenario;

#[test]
fn comments_name_each_paths_nodes_as_declared() {
    let mut checked = 0;
    for &(name, path, text) in BUILTIN {
        let sc = Scenario::from_toml(text, path).unwrap();
        let comments: String = text
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix('#'))
            .collect::<Vec<_>>()
            .join(" ");
        for p in &sc.paths {
            let needle = format!("{} is ", p.name);
            for (at, _) in comments.match_indices(&needle) {
                let said: String = comments[at + needle.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                let nodes: Vec<&str> = p.nodes.iter().map(|&n| sc.nodes[n].name.as_str()).collect();
                assert_eq!(
                    said.to_lowercase(),
                    nodes.join("-").to_lowercase(),
                    "{name}: a comment says {} is {said}",
                    p.name
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 8,
        "the four diamond scenarios describe both paths: {checked} found"
    );
}
