//! Scenarios built into the binary: the files under `scenarios/`, embedded at compile time.

/// (name, file path relative to the repository, TOML text).
pub const BUILTIN: &[(&str, &str, &str)] = &[
    (
        "motohashi2022/s1-homogeneous",
        "scenarios/motohashi2022/s1-homogeneous.toml",
        include_str!("../../../scenarios/motohashi2022/s1-homogeneous.toml"),
    ),
    (
        "motohashi2022/s2-heterogeneous",
        "scenarios/motohashi2022/s2-heterogeneous.toml",
        include_str!("../../../scenarios/motohashi2022/s2-heterogeneous.toml"),
    ),
    (
        "motohashi2022/s3a-dwrr-input-rate",
        "scenarios/motohashi2022/s3a-dwrr-input-rate.toml",
        include_str!("../../../scenarios/motohashi2022/s3a-dwrr-input-rate.toml"),
    ),
    (
        "motohashi2022/s3b-dwrr-two-flows",
        "scenarios/motohashi2022/s3b-dwrr-two-flows.toml",
        include_str!("../../../scenarios/motohashi2022/s3b-dwrr-two-flows.toml"),
    ),
    (
        "tcp/single-flow",
        "scenarios/tcp/single-flow.toml",
        include_str!("../../../scenarios/tcp/single-flow.toml"),
    ),
    (
        "tcp/two-flows",
        "scenarios/tcp/two-flows.toml",
        include_str!("../../../scenarios/tcp/two-flows.toml"),
    ),
    (
        "tcp/ecn",
        "scenarios/tcp/ecn.toml",
        include_str!("../../../scenarios/tcp/ecn.toml"),
    ),
    (
        "afmt/three-subtunnels",
        "scenarios/afmt/three-subtunnels.toml",
        include_str!("../../../scenarios/afmt/three-subtunnels.toml"),
    ),
    (
        "afmt/two-subtunnels",
        "scenarios/afmt/two-subtunnels.toml",
        include_str!("../../../scenarios/afmt/two-subtunnels.toml"),
    ),
    (
        "afmt/single-path",
        "scenarios/afmt/single-path.toml",
        include_str!("../../../scenarios/afmt/single-path.toml"),
    ),
    (
        "dc/fat-tree-k4-permutation",
        "scenarios/dc/fat-tree-k4-permutation.toml",
        include_str!("../../../scenarios/dc/fat-tree-k4-permutation.toml"),
    ),
    (
        "dc/fat-tree-k8-permutation",
        "scenarios/dc/fat-tree-k8-permutation.toml",
        include_str!("../../../scenarios/dc/fat-tree-k8-permutation.toml"),
    ),
    (
        "mphula2018/fig5-websearch-tcp-ecmp",
        "scenarios/mphula2018/fig5-websearch-tcp-ecmp.toml",
        include_str!("../../../scenarios/mphula2018/fig5-websearch-tcp-ecmp.toml"),
    ),
    (
        "mphula2018/fig5-websearch-mptcp-coupled",
        "scenarios/mphula2018/fig5-websearch-mptcp-coupled.toml",
        include_str!("../../../scenarios/mphula2018/fig5-websearch-mptcp-coupled.toml"),
    ),
    (
        "mphula2018/fig7-websearch-mptcp-uncoupled",
        "scenarios/mphula2018/fig7-websearch-mptcp-uncoupled.toml",
        include_str!("../../../scenarios/mphula2018/fig7-websearch-mptcp-uncoupled.toml"),
    ),
    (
        "mphula2018/fig8-websearch-asymmetric",
        "scenarios/mphula2018/fig8-websearch-asymmetric.toml",
        include_str!("../../../scenarios/mphula2018/fig8-websearch-asymmetric.toml"),
    ),
    (
        "mphula2018/fig8-failover",
        "scenarios/mphula2018/fig8-failover.toml",
        include_str!("../../../scenarios/mphula2018/fig8-failover.toml"),
    ),
    (
        "mphula2018/fig10-datamining-mptcp-coupled",
        "scenarios/mphula2018/fig10-datamining-mptcp-coupled.toml",
        include_str!("../../../scenarios/mphula2018/fig10-datamining-mptcp-coupled.toml"),
    ),
    (
        "dc/websearch-k4-kernel",
        "scenarios/dc/websearch-k4-kernel.toml",
        include_str!("../../../scenarios/dc/websearch-k4-kernel.toml"),
    ),
    (
        "dc/websearch-k4-load",
        "scenarios/dc/websearch-k4-load.toml",
        include_str!("../../../scenarios/dc/websearch-k4-load.toml"),
    ),
    (
        "dc/fat-tree-k8-mptcp",
        "scenarios/dc/fat-tree-k8-mptcp.toml",
        include_str!("../../../scenarios/dc/fat-tree-k8-mptcp.toml"),
    ),
    (
        "dc/htsim-mptcp-k4",
        "scenarios/dc/htsim-mptcp-k4.toml",
        include_str!("../../../scenarios/dc/htsim-mptcp-k4.toml"),
    ),
    (
        "mptcp/two-paths",
        "scenarios/mptcp/two-paths.toml",
        include_str!("../../../scenarios/mptcp/two-paths.toml"),
    ),
    (
        "mptcp/shared-bottleneck",
        "scenarios/mptcp/shared-bottleneck.toml",
        include_str!("../../../scenarios/mptcp/shared-bottleneck.toml"),
    ),
];

/// The scenario `mpsched run` uses when given none: scenario 3b with DWRR.
pub const DEFAULT: &str = "motohashi2022/s3b-dwrr-two-flows";

/// The text of built-in scenario `name` (with or without a `.toml` ending), and its path.
pub fn find(name: &str) -> Option<(&'static str, &'static str)> {
    let name = name.trim_end_matches(".toml");
    BUILTIN
        .iter()
        .find(|(n, p, _)| *n == name || p.trim_end_matches(".toml") == name || n.rsplit('/').next() == Some(name))
        .map(|(_, p, t)| (*p, *t))
}
