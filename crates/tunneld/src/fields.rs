//! Which field of a TOML document an error points at (`path[1].remote`), from the spans of
//! the parsed document rather than from the text around the error, so that inline tables,
//! dotted keys and arrays of tables are named as they are.

use toml::de::{DeTable, DeValue};

/// The field `e` is about in `text`, and its message with the line and column.
///
/// A missing field is named inside the table that lacks it, an unknown one as written. TOML
/// that does not parse is named by the key at the error, else by the table it is in, else by
/// its line (`line 3`). An error without a place (none is known to come) names no field.
pub fn describe(e: &toml::de::Error, text: &str) -> (String, String) {
    let msg = e.message().trim().to_string();
    let Some(span) = e.span() else {
        return (String::new(), msg);
    };
    let at = span.start.min(text.len());
    // In bytes: a span need not fall on a character's boundary for this to hold.
    let before = &text.as_bytes()[..at];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = at - before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) + 1;
    let msg = format!("{msg} (line {line}, column {column})");
    // Best effort: TOML that does not parse still gives the entries before and around the error.
    let (doc, _) = DeTable::parse_recoverable(text);
    let mut all = Vec::new();
    walk("", doc.get_ref(), &mut all);
    let field = match missing_field(e.message()) {
        Some(name) => join(&table_at(&all, &span).unwrap_or_default(), name),
        None => key_at(&all, at)
            .or_else(|| written_key(text, &span).map(|k| join(&header_before(&all, text, at), k)))
            .or_else(|| Some(header_before(&all, text, at)).filter(|t| !t.is_empty()))
            .unwrap_or_else(|| format!("line {line}")),
    };
    (field, msg)
}

/// The name in serde's "missing field `name`".
fn missing_field(msg: &str) -> Option<&str> {
    msg.strip_prefix("missing field `")?.split('`').next()
}

fn join(table: &str, key: &str) -> String {
    match table.is_empty() {
        true => key.to_string(),
        false => format!("{table}.{key}"),
    }
}

type Span = std::ops::Range<usize>;

fn covers(span: &Span, at: usize) -> bool {
    span.contains(&at) || (span.is_empty() && span.start == at)
}

/// A value of the document: its dotted name, whether it is a table, and the spans of its key
/// (an array entry's: its own) and of itself (a table's: its header, or its braces).
struct Entry {
    name: String,
    is_table: bool,
    key: Span,
    value: Span,
}

/// Every value under `table`, parents before children.
fn walk(prefix: &str, table: &DeTable<'_>, out: &mut Vec<Entry>) {
    for (k, v) in table.iter() {
        let name = join(prefix, k.get_ref());
        out.push(Entry {
            name: name.clone(),
            is_table: v.get_ref().is_table(),
            key: k.span(),
            value: v.span(),
        });
        nested(&name, v.get_ref(), out);
    }
}

fn nested(name: &str, v: &DeValue<'_>, out: &mut Vec<Entry>) {
    match v {
        DeValue::Table(t) => walk(name, t, out),
        DeValue::Array(a) => {
            for (i, e) in a.iter().enumerate() {
                let name = format!("{name}[{i}]");
                out.push(Entry {
                    name: name.clone(),
                    is_table: e.get_ref().is_table(),
                    key: e.span(),
                    value: e.span(),
                });
                nested(&name, e.get_ref(), out);
            }
        }
        _ => {}
    }
}

/// The innermost field whose key, or value if it is no table, is at byte `at`.
fn key_at(all: &[Entry], at: usize) -> Option<String> {
    all.iter()
        .filter(|e| covers(&e.key, at) || (!e.is_table && covers(&e.value, at)))
        .map(|e| e.name.clone())
        .max_by_key(String::len)
}

/// The table whose span is `span` (its header, or an inline table's braces): where serde
/// reports a field it lacks. None: the document itself.
fn table_at(all: &[Entry], span: &Span) -> Option<String> {
    all.iter()
        .filter(|e| e.is_table && &e.value == span && !span.is_empty())
        .map(|e| e.name.clone())
        .max_by_key(String::len)
}

/// The table whose header (`[device]`, `[[path]]`) is the last before byte `at`; "" for the
/// top level.
fn header_before(all: &[Entry], text: &str, at: usize) -> String {
    all.iter()
        .filter(|e| e.is_table && e.value.end <= at)
        .filter(|e| text.get(e.value.clone()).is_some_and(|h| h.starts_with('[')))
        .max_by_key(|e| e.value.start)
        .map(|e| e.name.clone())
        .unwrap_or_default()
}

/// The bare key written at `span`, if the error points at one (a duplicate key).
fn written_key<'t>(text: &'t str, span: &Span) -> Option<&'t str> {
    let k = text.get(span.clone())?.trim();
    let bare = !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    bare.then_some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        role: String,
        device: Device,
        #[serde(default)]
        path: Vec<Path>,
    }

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Device {
        name: String,
        mtu: Option<String>,
        #[serde(default)]
        routes: Vec<String>,
    }

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Path {
        name: String,
        local: String,
    }

    fn field(text: &str) -> String {
        let e = toml::from_str::<Doc>(text).err().expect(text);
        describe(&e, text).0
    }

    #[test]
    fn every_kind_of_mistake_is_named_by_its_field() {
        let dev = "role = \"r\"\n[device]\nname = \"x\"\n";
        let path = |second: &str| format!("{dev}[[path]]\nname = \"a\"\nlocal = \"l\"\n[[path]]\n{second}");
        let cases = [
            ("[device]\nname = \"x\"\n".to_string(), "role"),
            ("role = \"r\"\n[device]\nmtu = \"1\"\n".into(), "device.name"),
            (format!("{dev}what = 1\n"), "device.what"),
            (format!("{dev}[what]\nx = 1\n"), "what"),
            (format!("{dev}mtu = 1400\n"), "device.mtu"),
            (format!("{dev}routes = [\"a\", 3]\n"), "device.routes[1]"),
            (path("name = \"b\"\n"), "path[1].local"),
            (path("name = \"b\"\nlocal = 3\n"), "path[1].local"),
            (
                "role = \"r\"\ndevice = { name = \"x\", mtu = 3 }\n".into(),
                "device.mtu",
            ),
            ("role = \"r\"\ndevice = { mtu = \"3\" }\n".into(), "device.name"),
            (
                "role = \"r\"\ndevice.name = \"x\"\ndevice.mtu = 5\n".into(),
                "device.mtu",
            ),
            (format!("{dev}mtu = \n"), "device.mtu"),
            (format!("{dev}mtu = \"1\"\nmtu = \"2\"\n"), "device.mtu"),
            (format!("{dev}@@@\n"), "device"),
            ("role = 1\n[device]\nname = \"x\"\n".into(), "role"),
            ("@@@\n".into(), "line 1"),
        ];
        for (text, want) in cases {
            assert_eq!(field(&text), want, "{text}");
        }
    }

    #[test]
    fn the_message_gives_line_and_column() {
        let text = "role = \"r\"\n[device]\nname = 3\n";
        let e = toml::from_str::<Doc>(text).err().unwrap();
        let (f, m) = describe(&e, text);
        assert_eq!(f, "device.name");
        assert!(m.ends_with("(line 3, column 8)"), "{m}");
    }
}
