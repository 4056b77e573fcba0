//! Setting a key of a scenario's TOML before it is validated: `workload.load = 0.5`,
//! `scenario.seed = 3`, `link.2.rate = "40Gbps"`. Sweeps vary one key this way, so that every
//! point of a sweep is the scenario text, its overrides, a variant and a seed, and nothing else.
//!
//! A key is a dotted path. A segment that reaches an array of tables applies the rest of the
//! path to every element (`workload.load` sets the load of every `[[workload]]`), unless the
//! next segment is an index (`workload.0.load`). The last segment may name a key the text does
//! not write (a default), but every table on the way must exist: a typo is an error, not a new
//! table the validator would then reject with a less useful message.

use toml::{Table, Value};

/// One `key = value` to set.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// Dotted path (`workload.load`).
    pub key: String,
    /// The value, typed as TOML would type it.
    pub value: Value,
}

impl Override {
    /// `key` set to `value`, where `value` is TOML (`0.5`, `"cubic"`, `[1, 2]`) or, failing
    /// that, a bare word taken as a string (`cubic`, `40Gbps`).
    pub fn parse(key: &str, value: &str) -> Result<Override, String> {
        check_key(key)?;
        Ok(Override {
            key: key.to_string(),
            value: parse_value(value),
        })
    }
}

/// `text` as TOML if it is a TOML value within the bounds on scenario text
/// ([`crate::prescan`]), else as a string (which validation then refuses where a number or a
/// list was expected).
pub fn parse_value(text: &str) -> Value {
    let doc = format!("v = {text}");
    if crate::prescan::check(&doc).is_err() {
        return Value::String(text.to_string());
    }
    match doc.parse::<Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| Value::String(text.to_string())),
        Err(_) => Value::String(text.to_string()),
    }
}

/// A value as a scenario file would write it, for tables and file names (`0.5`, `cubic`).
pub fn display_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(format!("`{key}` is not a dotted key like `workload.load`"));
    }
    Ok(())
}

/// Set `o.key` in `doc` to `o.value`.
pub fn apply(doc: &mut Table, o: &Override) -> Result<(), String> {
    check_key(&o.key)?;
    let path: Vec<&str> = o.key.split('.').collect();
    // A program's parameter may be set where the file has no `[programs.<name>]` table yet
    // (its defaults apply): validation then checks the program and the parameter by name.
    if let ["programs", program, _] = path[..] {
        let programs = doc.entry("programs").or_insert_with(|| Value::Table(Table::new()));
        if let Value::Table(t) = programs {
            t.entry(program).or_insert_with(|| Value::Table(Table::new()));
        }
    }
    set_in_table(doc, &path, &o.value, &o.key)
}

fn set_in_table(t: &mut Table, path: &[&str], value: &Value, key: &str) -> Result<(), String> {
    let (head, rest) = (path[0], &path[1..]);
    if rest.is_empty() {
        t.insert(head.to_string(), value.clone());
        return Ok(());
    }
    match t.get_mut(head) {
        Some(v) => set_in_value(v, rest, value, key),
        None => Err(format!("`{key}`: the scenario has no `{head}`")),
    }
}

fn set_in_value(v: &mut Value, path: &[&str], value: &Value, key: &str) -> Result<(), String> {
    match v {
        Value::Table(t) => set_in_table(t, path, value, key),
        Value::Array(items) => {
            if let Ok(i) = path[0].parse::<usize>() {
                let n = items.len();
                let item = items
                    .get_mut(i)
                    .ok_or_else(|| format!("`{key}`: index {i} out of {n} entries"))?;
                if path.len() == 1 {
                    *item = value.clone();
                    return Ok(());
                }
                return set_in_value(item, &path[1..], value, key);
            }
            if items.is_empty() {
                return Err(format!("`{key}`: the list is empty"));
            }
            items
                .iter_mut()
                .try_for_each(|item| set_in_value(item, path, value, key))
        }
        _ => Err(format!("`{key}`: `{}` is a value, not a table", path[0])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"
[scenario]
name = "x"
[[workload]]
name = "a"
load = 0.3
[[workload]]
name = "b"
load = 0.4
"#;

    fn doc() -> Table {
        DOC.parse().unwrap()
    }

    #[test]
    fn values_are_typed_as_toml_and_bare_words_are_strings() {
        assert_eq!(parse_value("0.5"), Value::Float(0.5));
        assert_eq!(parse_value("3"), Value::Integer(3));
        assert_eq!(parse_value("\"x y\""), Value::String("x y".into()));
        assert_eq!(parse_value("cubic"), Value::String("cubic".into()));
        assert_eq!(parse_value("40Gbps"), Value::String("40Gbps".into()));
        assert_eq!(display_value(&Value::Float(0.5)), "0.5");
        assert_eq!(display_value(&Value::String("cubic".into())), "cubic");
    }

    #[test]
    fn a_key_through_an_array_sets_every_element_unless_indexed() {
        let mut d = doc();
        apply(&mut d, &Override::parse("workload.load", "0.9").unwrap()).unwrap();
        let loads: Vec<f64> = d["workload"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["load"].as_float().unwrap())
            .collect();
        assert_eq!(loads, vec![0.9, 0.9]);
        apply(&mut d, &Override::parse("workload.1.load", "0.1").unwrap()).unwrap();
        assert_eq!(d["workload"][1]["load"].as_float(), Some(0.1));
        assert_eq!(d["workload"][0]["load"].as_float(), Some(0.9));
        apply(&mut d, &Override::parse("scenario.seed", "7").unwrap()).unwrap();
        assert_eq!(d["scenario"]["seed"].as_integer(), Some(7));
    }

    #[test]
    fn a_missing_table_or_a_bad_index_is_an_error() {
        let mut d = doc();
        let e = apply(&mut d, &Override::parse("workloads.load", "1").unwrap()).unwrap_err();
        assert!(e.contains("no `workloads`"), "{e}");
        let e = apply(&mut d, &Override::parse("workload.5.load", "1").unwrap()).unwrap_err();
        assert!(e.contains("index 5 out of 2"), "{e}");
        let e = apply(&mut d, &Override::parse("scenario.name.x", "1").unwrap()).unwrap_err();
        assert!(e.contains("not a table"), "{e}");
        assert!(Override::parse("a..b", "1").is_err());
        assert_eq!(d, doc(), "these are found before anything is set");
    }
}
