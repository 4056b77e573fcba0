//! Quantities as people write them: `4Mbps`, `1470B`, `6560ns`, `20s`.
//!
//! Decimals are parsed exactly (no floating point): `1.5Gbps` is 1 500 000 000 bit/s, `0.25s`
//! is 250 000 000 000 ps. A value finer than the base unit is refused, not rounded.

/// Parse `text` as a number followed by one of `units` (name, multiplier to the base unit).
/// Unit names are matched case-sensitively first, then case-insensitively; white space between
/// number and unit is allowed.
pub fn parse_quantity(text: &str, units: &[(&str, u64)]) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = (t[..split].replace('_', ""), t[split..].trim());
    if num.is_empty() {
        return Err("no number".into());
    }
    let mult = units
        .iter()
        .find(|(u, _)| *u == unit)
        .or_else(|| units.iter().find(|(u, _)| u.eq_ignore_ascii_case(unit)))
        .map(|&(_, m)| m)
        .ok_or_else(|| {
            let names: Vec<&str> = units.iter().map(|(u, _)| *u).filter(|u| !u.is_empty()).collect();
            format!("unknown unit `{unit}` (expected one of {})", names.join(", "))
        })?;
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num.as_str(), ""),
    };
    if frac.contains('.') {
        return Err("malformed number".into());
    }
    let int: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| "malformed number".to_string())?
    };
    let mut value = int.checked_mul(mult).ok_or("value too large")?;
    if !frac.is_empty() {
        let digits = frac.trim_end_matches('0');
        if digits.len() > 18 {
            return Err("too many decimal places".into());
        }
        let scale = 10u128.pow(digits.len() as u32);
        let f: u128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| "malformed number".to_string())?
        };
        let scaled = f * u128::from(mult);
        if scaled % scale != 0 {
            return Err("finer than the smallest unit".into());
        }
        value = value.checked_add((scaled / scale) as u64).ok_or("value too large")?;
    }
    Ok(value)
}

/// Rate units, to bit/s.
pub const RATE_UNITS: &[(&str, u64)] = &[
    ("bps", 1),
    ("bit/s", 1),
    ("bit", 1),
    ("kbps", 1_000),
    ("Kbps", 1_000),
    ("kbit/s", 1_000),
    ("kbit", 1_000),
    ("Mbps", 1_000_000),
    ("Mbit/s", 1_000_000),
    ("Mbit", 1_000_000),
    ("Gbps", 1_000_000_000),
    ("Gbit/s", 1_000_000_000),
    ("Gbit", 1_000_000_000),
    ("Tbps", 1_000_000_000_000),
    ("Tbit/s", 1_000_000_000_000),
    ("Tbit", 1_000_000_000_000),
];

/// Size units, to bytes.
pub const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KB", 1_000),
    ("KiB", 1_024),
    ("MB", 1_000_000),
    ("MiB", 1_048_576),
    ("GB", 1_000_000_000),
    ("GiB", 1 << 30),
    ("TB", 1_000_000_000_000),
    ("TiB", 1 << 40),
];

/// Time units, to picoseconds.
pub const TIME_UNITS: &[(&str, u64)] = &[
    ("ps", 1),
    ("ns", 1_000),
    ("us", 1_000_000),
    ("µs", 1_000_000),
    ("ms", 1_000_000_000),
    ("s", 1_000_000_000_000),
    ("min", 60_000_000_000_000),
];

/// Parse a rate (`4Mbps`) to bit/s.
pub fn parse_rate_bps(text: &str) -> Result<u64, String> {
    parse_quantity(text, RATE_UNITS)
}

/// Parse a size (`1470B`) to bytes.
pub fn parse_size_bytes(text: &str) -> Result<u64, String> {
    parse_quantity(text, SIZE_UNITS)
}

/// Parse a time (`6560ns`, `20s`) to picoseconds.
pub fn parse_time_ps(text: &str) -> Result<u64, String> {
    parse_quantity(text, TIME_UNITS)
}

/// `value` (in a base unit) in the largest of `units` (name, multiplier; largest last) it
/// reaches, with up to three decimals and no trailing zeros: what a person would have written.
fn format_quantity(value: u64, units: &[(&str, u64)]) -> String {
    let (name, mult) = units
        .iter()
        .rev()
        .find(|&&(_, m)| value >= m)
        .copied()
        .unwrap_or(units[0]);
    let whole = value / mult;
    let thousandths = ((value % mult) as u128 * 1000 / mult as u128) as u64;
    if thousandths == 0 {
        return format!("{whole}{name}");
    }
    let frac = format!("{thousandths:03}");
    format!("{whole}.{}{name}", frac.trim_end_matches('0'))
}

/// A time in picoseconds as a person writes it: `1ms`, `2.5s`, `6.56us`.
pub fn format_time_ps(ps: u64) -> String {
    format_quantity(
        ps,
        &[
            ("ps", 1),
            ("ns", 1_000),
            ("us", 1_000_000),
            ("ms", 1_000_000_000),
            ("s", 1_000_000_000_000),
        ],
    )
}

/// A rate in bit/s as a person writes it: `54Mbps`, `1.5Gbps`.
pub fn format_rate_bps(bps: u64) -> String {
    format_quantity(
        bps,
        &[
            ("bps", 1),
            ("kbps", 1_000),
            ("Mbps", 1_000_000),
            ("Gbps", 1_000_000_000),
            ("Tbps", 1_000_000_000_000),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatted_quantities_parse_back_to_themselves_where_exact() {
        assert_eq!(format_time_ps(1_000_000_000), "1ms");
        assert_eq!(format_time_ps(2_500_000_000_000), "2.5s");
        assert_eq!(format_time_ps(6_560_000), "6.56us");
        assert_eq!(format_time_ps(0), "0ps");
        assert_eq!(format_rate_bps(54_000_000), "54Mbps");
        assert_eq!(format_rate_bps(100_000_000_000_000), "100Tbps");
        for ps in [1, 999, 1_000, 123_000_000, 7_000_000_000_000] {
            assert_eq!(parse_time_ps(&format_time_ps(ps)), Ok(ps));
        }
    }

    #[test]
    fn units_as_people_write_them() {
        assert_eq!(parse_rate_bps("4Mbps"), Ok(4_000_000));
        assert_eq!(parse_rate_bps("1.5 Gbps"), Ok(1_500_000_000));
        assert_eq!(parse_rate_bps("50Mbit/s"), Ok(50_000_000));
        assert_eq!(parse_rate_bps("10gbps"), Ok(10_000_000_000));
        assert_eq!(parse_size_bytes("1470B"), Ok(1470));
        assert_eq!(parse_size_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_time_ps("6560ns"), Ok(6_560_000));
        assert_eq!(parse_time_ps("20s"), Ok(20_000_000_000_000));
        assert_eq!(parse_time_ps("0.25s"), Ok(250_000_000_000));
        assert_eq!(parse_time_ps("5.12ns"), Ok(5_120));
    }

    #[test]
    fn binary_sizes_and_bit_rates_of_every_prefix() {
        assert_eq!(parse_size_bytes("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size_bytes("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size_bytes("1TiB"), Ok(1 << 40));
        assert_eq!(parse_size_bytes("3TB"), Ok(3_000_000_000_000));
        assert_eq!(parse_rate_bps("10Gbit"), Ok(10_000_000_000));
        assert_eq!(parse_rate_bps("100 Mbit"), Ok(100_000_000));
        assert_eq!(parse_rate_bps("64kbit"), Ok(64_000));
        assert_eq!(parse_rate_bps("1Tbit/s"), Ok(1_000_000_000_000));
        assert_eq!(parse_rate_bps("9600bit"), Ok(9_600));
        // A size is not a rate, nor the other way round.
        assert!(parse_rate_bps("1GiB").is_err());
        assert!(parse_size_bytes("1Gbit").is_err());
    }

    #[test]
    fn bad_quantities_say_why() {
        assert!(parse_rate_bps("4").unwrap_err().contains("unknown unit"));
        assert!(parse_rate_bps("Mbps").unwrap_err().contains("no number"));
        assert!(parse_time_ps("1.5ps").unwrap_err().contains("finer"));
        assert!(parse_rate_bps("1.2.3Mbps").is_err());
        assert!(parse_time_ps("99999999999999999999s").is_err());
    }
}
