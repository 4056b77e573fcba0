//! A program's parameters: declared by the program, parsed and bounded by the scenario crate,
//! handed to the program in base units.
//!
//! A program lists its [`Param`]s; the scenario crate reads `[programs.<name>]` with its units
//! (times `100us`, rates `10Gbps`, sizes `64KiB`, plain counts), refuses what is out of the
//! declared bounds at the file and field, and builds [`Params`]. Because every parameter a
//! scenario can size is bounded here, a program may allocate by them without checking again.

use std::collections::BTreeMap;

/// The unit a parameter is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A time (`100us`), held in picoseconds.
    Time,
    /// A rate (`10Gbps`), held in bit/s.
    Rate,
    /// A size (`64KiB`), held in bytes.
    Bytes,
    /// A plain integer.
    Count,
    /// One of the named choices (`objective = "paper"`), held as its index in the list.
    Choice(&'static [&'static str]),
}

impl ParamKind {
    /// What the unit is called in messages.
    pub fn describe(self) -> &'static str {
        match self {
            ParamKind::Time => "a time",
            ParamKind::Rate => "a rate",
            ParamKind::Bytes => "a size",
            ParamKind::Count => "an integer",
            ParamKind::Choice(_) => "a choice",
        }
    }

    /// The name a value stands for, where the kind is a choice.
    pub fn choice_name(self, value: u64) -> Option<&'static str> {
        match self {
            ParamKind::Choice(names) => usize::try_from(value).ok().and_then(|i| names.get(i).copied()),
            _ => None,
        }
    }
}

/// One parameter a program declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its key under `[programs.<program>]`.
    pub name: &'static str,
    /// Its unit.
    pub kind: ParamKind,
    /// Its value when the scenario gives none, in base units.
    pub default: u64,
    /// The smallest value accepted, in base units.
    pub min: u64,
    /// The largest value accepted, in base units.
    pub max: u64,
    /// Whether the value must be a power of two (a table indexed by hash bits).
    pub power_of_two: bool,
    /// The value must be a multiple of this (1: any), in base units: a time a data plane
    /// counts in whole microseconds, say.
    pub multiple_of: u64,
    /// One line for docs and `mpsched list programs`.
    pub doc: &'static str,
}

impl Param {
    /// Why `value` is refused, if it is.
    pub fn check(&self, value: u64) -> Result<(), String> {
        if value < self.min || value > self.max {
            return Err(format!(
                "must be {} from {} to {} (base units: {})",
                self.kind.describe(),
                self.min,
                self.max,
                base_unit(self.kind)
            ));
        }
        if self.power_of_two && !value.is_power_of_two() {
            return Err(format!("must be a power of two, got {value}"));
        }
        if value % self.multiple_of.max(1) != 0 {
            return Err(format!(
                "must be a multiple of {} {}, got {value}",
                self.multiple_of,
                base_unit(self.kind)
            ));
        }
        Ok(())
    }
}

/// The base unit of a kind, for messages.
pub fn base_unit(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::Time => "ps",
        ParamKind::Rate => "bit/s",
        ParamKind::Bytes => "bytes",
        ParamKind::Count => "count",
        ParamKind::Choice(_) => "index of the choice",
    }
}

/// A program's parameter values in base units, every declared one present.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params(BTreeMap<&'static str, u64>);

impl Params {
    /// Every parameter of `declared` at its default.
    pub fn defaults(declared: &[Param]) -> Params {
        Params(declared.iter().map(|p| (p.name, p.default)).collect())
    }

    /// Set `name` to `value` after checking it against its declaration in `declared`.
    pub fn set(&mut self, declared: &[Param], name: &str, value: u64) -> Result<(), String> {
        let p = declared
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| format!("no parameter `{name}` (known: {})", names(declared)))?;
        p.check(value)?;
        self.0.insert(p.name, value);
        Ok(())
    }

    /// The value of a declared parameter.
    ///
    /// # Panics
    /// If the program asks for a name it did not declare: a bug in the program, caught by its
    /// tests.
    pub fn get(&self, name: &str) -> u64 {
        *self
            .0
            .get(name)
            .unwrap_or_else(|| panic!("parameter `{name}` was not declared"))
    }

    /// Every (name, value), in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.0.iter().map(|(k, v)| (*k, *v))
    }
}

/// The declared names, for messages.
pub fn names(declared: &[Param]) -> String {
    if declared.is_empty() {
        return "none".into();
    }
    declared
        .iter()
        .map(|p| format!("`{}`", p.name))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECLARED: &[Param] = &[Param {
        name: "slots",
        kind: ParamKind::Count,
        default: 16,
        min: 1,
        max: 1024,
        power_of_two: true,
        multiple_of: 1,
        doc: "",
    }];

    #[test]
    fn values_are_bounded_and_named() {
        let mut p = Params::defaults(DECLARED);
        assert_eq!(p.get("slots"), 16);
        p.set(DECLARED, "slots", 64).unwrap();
        assert_eq!(p.get("slots"), 64);
        assert!(p.set(DECLARED, "slots", 2048).unwrap_err().contains("from 1 to 1024"));
        assert!(p.set(DECLARED, "slots", 48).unwrap_err().contains("power of two"));
        assert!(p.set(DECLARED, "slot", 4).unwrap_err().contains("`slots`"));
    }
}
