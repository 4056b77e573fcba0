//! Build-time helper shared by `crates/netns/build.rs` and `crates/bmv2/build.rs` (included
//! with `#[path]`): the `MPS_*` constants of a C or P4 header as Rust constants (and another
//! prefix's: `ATSSS_*` of a program's own header).

/// The `MPS_*` constants of `text` ([`prefixed_constants`]).
#[allow(dead_code)]
pub fn mps_constants(text: &str) -> Vec<(String, u64)> {
    prefixed_constants(text, "MPS_")
}

/// The constants of `text` named with `prefix`: `#define PREFIX_X value` lines (decimal or
/// hex, a `u` suffix allowed; other defines are skipped) and the members of its enums
/// (`PREFIX_X = n,` or `PREFIX_X,`, counting up as C does), in the order they appear, without
/// the prefix.
pub fn prefixed_constants(text: &str, prefix: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut next_in_enum: Option<u64> = None;
    for line in text.lines() {
        let line = line.split("/*").next().unwrap_or("").trim();
        if line.starts_with("enum ") && line.ends_with('{') {
            next_in_enum = Some(0);
            continue;
        }
        if let Some(next) = next_in_enum {
            if line.starts_with('}') {
                next_in_enum = None;
            } else if let Some(member) = line.trim_end_matches(',').strip_prefix(prefix) {
                let (name, value) = match member.split_once('=') {
                    Some((n, v)) => (n.trim(), parse(v.trim()).expect("an enum value")),
                    None => (member.trim(), next),
                };
                out.push((name.to_string(), value));
                next_in_enum = Some(value + 1);
            }
            continue;
        }
        let mut w = line.split_whitespace();
        if let (Some("#define"), Some(name), Some(value)) = (w.next(), w.next(), w.next()) {
            if let (Some(rest), Some(v)) = (name.strip_prefix(prefix), parse(value)) {
                out.push((rest.to_string(), v));
            }
        }
    }
    out
}

/// A C integer literal: decimal or `0x` hex, with an optional `u` suffix.
fn parse(value: &str) -> Option<u64> {
    let value = value.trim_end_matches('u');
    match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => value.parse().ok(),
    }
}

/// Rust source for `MPS_*` constants ([`rust_source_prefixed`]).
#[allow(dead_code)]
pub fn rust_source(constants: &[(String, u64)], source: &str) -> String {
    rust_source_prefixed(constants, source, "MPS_")
}

/// Rust source for `constants` read with `prefix`: one documented `pub const` each (`source`
/// names the file in the docs), and `ALL`, every (name, value) in order.
pub fn rust_source_prefixed(constants: &[(String, u64)], source: &str, prefix: &str) -> String {
    let mut s = String::new();
    for (name, v) in constants {
        s.push_str(&format!(
            "/// `{prefix}{name}` from {source}.\npub const {name}: u64 = {v};\n"
        ));
    }
    s.push_str(&format!(
        "/// Every `{prefix}*` constant of {source}, without the prefix, in order.\n"
    ));
    s.push_str("pub const ALL: &[(&str, u64)] = &[\n");
    for (name, _) in constants {
        s.push_str(&format!("    (\"{name}\", {name}),\n"));
    }
    s.push_str("];\n");
    s
}
