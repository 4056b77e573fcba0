//! Bounds on a scenario's TOML text, checked by one linear scan before the TOML parser builds
//! anything.
//!
//! The 64 MiB bound on a file ([`crate::files::MAX_SCENARIO_FILE_BYTES`]) does not bound what
//! parsing it costs: the parser first keeps every lexical token of the text in memory (about
//! 50 bytes each with the event it becomes), then a tree of every value and table, so 63 MiB of
//! `[],` took 4.3 GB. This scan follows TOML's lexical structure as the parser's lexer does
//! (basic, literal and multi-line strings, comments, newlines, brackets, inline tables) and
//! counts the tokens, the values, the tables and the nesting depth, refusing the text at the
//! first line where one of them passes its bound. It allocates nothing.

/// Most lexical tokens (a key, a value, `=`, a run of spaces, a newline, a comment: each one):
/// the parser holds every one twice, as a token and as an event, 48 bytes in all (63 MiB of
/// newlines, 66 million tokens, took 3.2 GB), so about 500 MB at the bound. A 10 000-UE ATSSS
/// scenario (`scripts/gen-atsss-ues.py 10000`, 8 MB) has 3.2 million, 10 000 host tunnels
/// (`scripts/gen-host-tunnels.py 10000`) 2.3 million.
pub const MAX_TOKENS: usize = 10_000_000;

/// Most values (each string, number, boolean, date, array and inline table): each a node of
/// the parser's tree, about 55 bytes, so 110 MB at the bound. The 10 000-UE scenario has
/// 491 000, the 10 000 tunnels 357 000.
pub const MAX_VALUES: usize = 2_000_000;

/// Most tables (each `[header]` and `[[header]]`, inline table, and table a dotted key or a
/// header implies): each a map of the parser's tree, about 175 bytes, so 90 MB at the bound.
/// The 10 000-UE scenario has 85 000, the 10 000 tunnels 71 000.
pub const MAX_TABLES: usize = 500_000;

/// Deepest nesting of arrays and inline tables in a value (the parser's own limit is 80).
/// Scenarios nest two deep (`down = [["leaf0", "spine1"]]`).
pub const MAX_DEPTH: usize = 16;

/// What a scan of a text counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Lexical tokens, the end of the text included.
    pub tokens: usize,
    /// Values.
    pub values: usize,
    /// Tables, implied ones included.
    pub tables: usize,
    /// Deepest nesting reached.
    pub depth: usize,
}

/// A text over a bound: the line (from 1) where it passed it, and which bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Line of the token that passed the bound.
    pub line: usize,
    /// The bound, as `more than 2000000 values`.
    pub message: String,
}

/// Where a token stands, which decides what it counts as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// A key (at the start of a line, or after `{` or `,` in an inline table).
    Key,
    /// A value (after `=`, or in an array).
    Value,
    /// Inside a `[header]` or `[[header]]`.
    Header,
}

/// The scan's state: where it is in the text and what it has counted.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    line: usize,
    counts: Counts,
    place: Place,
    /// Open arrays (`true`) and inline tables (`false`), innermost at `depth - 1`.
    open: [bool; MAX_DEPTH],
    depth: usize,
    /// A `.` just came in a value: the atom after it continues a float (`0.25` is three
    /// tokens, one value).
    after_dot: bool,
}

/// Count `text`'s tokens, values, tables and depth, or refuse it at the first line where one
/// passes its bound.
pub fn check(text: &str) -> Result<Counts, Refusal> {
    let mut s = Scan {
        bytes: text.as_bytes(),
        at: 0,
        line: 1,
        // The end of the text is a token too.
        counts: Counts {
            tokens: 1,
            ..Counts::default()
        },
        place: Place::Key,
        open: [false; MAX_DEPTH],
        depth: 0,
        after_dot: false,
    };
    while s.at < s.bytes.len() {
        s.token()?;
    }
    Ok(s.counts)
}

impl Scan<'_> {
    /// Consume one token and count it.
    fn token(&mut self) -> Result<(), Refusal> {
        self.counts.tokens += 1;
        if self.counts.tokens > MAX_TOKENS {
            return Err(self.refuse(format!("more than {MAX_TOKENS} tokens")));
        }
        let b = self.bytes[self.at];
        match b {
            b'[' | b']' | b'{' | b'}' | b',' | b'=' | b'.' => {
                self.at += 1;
                self.punctuation(b)?;
            }
            b' ' | b'\t' => self.skip_while(|c| c == b' ' || c == b'\t'),
            b'#' => self.skip_while(|c| c != b'\n' && c != b'\r'),
            b'\n' | b'\r' => self.newline(),
            b'"' | b'\'' => {
                self.string(b);
                self.scalar()?;
            }
            _ => {
                self.skip_while(|c| !b".=,[]{} \t#\r\n".contains(&c));
                self.scalar()?;
            }
        }
        // A dot continues a value only into the very next token (`0.25`).
        self.after_dot = b == b'.' && self.place == Place::Value;
        Ok(())
    }

    fn refuse(&self, message: String) -> Refusal {
        Refusal {
            line: self.line,
            message,
        }
    }

    fn skip_while(&mut self, keep: impl Fn(u8) -> bool) {
        while self.at < self.bytes.len() && keep(self.bytes[self.at]) {
            self.at += 1;
        }
    }

    /// Where a token after `,` or a closing bracket stands: in an array a value, in an inline
    /// table a key; outside both, the rest of a line's value.
    fn place_inside(&self) -> Place {
        match self.depth.checked_sub(1).map(|d| self.open[d]) {
            Some(true) | None => Place::Value,
            Some(false) => Place::Key,
        }
    }

    fn punctuation(&mut self, b: u8) -> Result<(), Refusal> {
        match (b, self.place) {
            // The brackets of a header, and the keys between them, are no values.
            (b'[', Place::Key) if self.depth == 0 => {
                self.place = Place::Header;
                self.add_table()?;
            }
            (b'[' | b']' | b'{' | b'}' | b'=', Place::Header) => {}
            (b'[', _) => self.open(true)?,
            (b'{', _) => self.open(false)?,
            (b']' | b'}', _) => {
                self.depth = self.depth.saturating_sub(1);
                self.place = self.place_inside();
            }
            (b',', _) => self.place = self.place_inside(),
            (b'=', _) => self.place = Place::Value,
            // `a.b = 1` and `[a.b]` imply table `a`.
            (b'.', Place::Key | Place::Header) => self.add_table()?,
            _ => {}
        }
        Ok(())
    }

    /// An array (`[`) or an inline table (`{`) opens: a value, one level deeper.
    fn open(&mut self, array: bool) -> Result<(), Refusal> {
        self.add_value()?;
        if !array {
            self.add_table()?;
        }
        if self.depth == MAX_DEPTH {
            return Err(self.refuse(format!("arrays and inline tables nested more than {MAX_DEPTH} deep")));
        }
        self.open[self.depth] = array;
        self.depth += 1;
        self.counts.depth = self.counts.depth.max(self.depth);
        self.place = if array { Place::Value } else { Place::Key };
        Ok(())
    }

    /// A string or an atom (a bare key, a number, a boolean, a date).
    fn scalar(&mut self) -> Result<(), Refusal> {
        if self.place == Place::Value && !self.after_dot {
            self.add_value()?;
        }
        Ok(())
    }

    fn add_value(&mut self) -> Result<(), Refusal> {
        self.counts.values += 1;
        if self.counts.values > MAX_VALUES {
            return Err(self.refuse(format!("more than {MAX_VALUES} values")));
        }
        Ok(())
    }

    fn add_table(&mut self) -> Result<(), Refusal> {
        self.counts.tables += 1;
        if self.counts.tables > MAX_TABLES {
            return Err(self.refuse(format!("more than {MAX_TABLES} tables")));
        }
        Ok(())
    }

    /// `\n`, `\r\n` or a lone `\r` (one token, as the parser's lexer has it). Outside any
    /// array or inline table a newline ends the line's key, value or header.
    fn newline(&mut self) {
        if self.bytes[self.at] == b'\r' && self.bytes.get(self.at + 1) == Some(&b'\n') {
            self.at += 1;
        }
        if self.bytes[self.at] == b'\n' {
            self.line += 1;
        }
        self.at += 1;
        if self.depth == 0 {
            self.place = Place::Key;
        }
    }

    /// A string opening with `quote`, as the parser's lexer takes it: a basic (`"`) string
    /// skips escaped quotes and backslashes; a one-line string ends at its quote or before a
    /// newline (an error the parser reports); a multi-line one at its triple quote and up to
    /// two more quotes (`""""` ends `"x"` quoted).
    fn string(&mut self, quote: u8) {
        let triple = [quote; 3];
        let multi = self.bytes[self.at..].starts_with(&triple);
        self.at += if multi { 3 } else { 1 };
        while let Some(&c) = self.bytes.get(self.at) {
            match c {
                b'\\' if quote == b'"' => {
                    let next = self.bytes.get(self.at + 1);
                    self.at += if matches!(next, Some(b'\\' | b'"')) { 2 } else { 1 };
                }
                b'\n' if !multi => return,
                b'\n' => {
                    self.line += 1;
                    self.at += 1;
                }
                c if c == quote && !multi => {
                    self.at += 1;
                    return;
                }
                c if c == quote && self.bytes[self.at..].starts_with(&triple) => {
                    self.at += 3;
                    for _ in 0..2 {
                        if self.bytes.get(self.at) == Some(&quote) {
                            self.at += 1;
                        }
                    }
                    return;
                }
                _ => self.at += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings, comments, floats, dates, dotted keys and headers, multi-line values, an
    /// unterminated string: the token count is what toml_parser 1.1.5's lexer gives (compared
    /// on this text, every built-in scenario and the 10 000-UE and 10 000-tunnel ones).
    const TRICKY: &str = r#"# comment with [ brackets { and "quotes"
a = 0.25 # trailing
b = "x\"y["
c = 'lit[{'
d = """
multi [ line
"quote" \""" still
"""
e = '''
literal '''
f = [1, 2.5, {g = "h", i.j = [3]}, [[4]]]
[t.u."v.w"]
[[arr]]
k = 1979-05-27T07:32:00.999Z
l = { m = 1,
  n = 2 }
o = """"x""""
p = "unterminated
q = 1
"#;

    #[test]
    fn counts_follow_the_lexer_and_the_structure() {
        let c = check(TRICKY).unwrap();
        // a b c d e; f: itself, 1, 2.5, {..}, "h", [3], 3, [[4]], [4], 4; k; l: itself, 1, 2;
        // o p q.
        assert_eq!(c.values, 22);
        // {g ..}, `i.` of i.j, [t.u."v.w"] and the two it implies, [[arr]], l.
        assert_eq!(c.tables, 7);
        assert_eq!(c.depth, 3, "[[[4]]] in f");
        assert_eq!(c.tokens, 139);
        let crlf = check("a = 1\r\nb = 2\rc = 3").unwrap();
        assert_eq!((crlf.tokens, crlf.values), (18, 3), "a lone CR is a newline token too");
    }

    #[test]
    fn brackets_in_strings_and_comments_are_text() {
        let c = check("s = \"[[{{\"\n# [[[[\nm = \"\"\"\n[x]\n{\n\"\"\"\nl = '[['\n").unwrap();
        assert_eq!((c.values, c.tables, c.depth), (3, 0, 0));
    }

    #[test]
    fn each_bound_refuses_at_the_line_that_passes_it() {
        let values = format!("a = 1\nx = [{}]\n", "1,".repeat(MAX_VALUES - 2));
        assert_eq!(check(&values).unwrap().values, MAX_VALUES);
        let r = check(&format!("a = 1\nx = [{}]\n", "1,".repeat(MAX_VALUES))).unwrap_err();
        assert_eq!((r.line, r.message.as_str()), (2, "more than 2000000 values"));

        let headers = |n: usize| (0..n).map(|i| format!("[t{i}]\n")).collect::<String>();
        assert_eq!(check(&headers(MAX_TABLES)).unwrap().tables, MAX_TABLES);
        let r = check(&headers(MAX_TABLES + 1)).unwrap_err();
        assert_eq!(
            (r.line, r.message.as_str()),
            (MAX_TABLES + 1, "more than 500000 tables")
        );
        let r = check(&format!("x = [{}]", "{},".repeat(MAX_TABLES + 1))).unwrap_err();
        assert_eq!(r.message, "more than 500000 tables", "inline tables count");
        let dotted = format!("{} = 1", vec!["a"; MAX_TABLES + 2].join("."));
        assert_eq!(check(&dotted).unwrap_err().message, "more than 500000 tables");

        // With the end of the text, MAX_TOKENS - 1 newlines are MAX_TOKENS tokens.
        assert_eq!(check(&"\n".repeat(MAX_TOKENS - 1)).unwrap().tokens, MAX_TOKENS);
        let r = check(&"\n".repeat(MAX_TOKENS)).unwrap_err();
        assert_eq!((r.line, r.message.as_str()), (MAX_TOKENS, "more than 10000000 tokens"));

        let nested = |d: usize| format!("a = 1\nx = {}{}\n", "[".repeat(d), "]".repeat(d));
        assert_eq!(check(&nested(MAX_DEPTH)).unwrap().depth, MAX_DEPTH);
        let r = check(&nested(MAX_DEPTH + 1)).unwrap_err();
        assert_eq!(
            (r.line, r.message.as_str()),
            (2, "arrays and inline tables nested more than 16 deep")
        );
    }

    /// Files, built-ins, `--set`, sweeps and Python all read text through
    /// `Scenario::from_toml_with` or `Scenario::parse_table`, and a `--set` value through
    /// `overrides::parse_value`: each checks the bounds before the parser runs.
    #[test]
    fn every_door_refuses_text_over_a_bound_before_parsing_it() {
        use crate::overrides::{parse_value, Override};
        use crate::Scenario;
        let bomb = format!("# a bomb\nx = [{}]\n", "[],".repeat(MAX_VALUES));
        let want = "line 2: more than 2000000 values; a scenario's text holds at most";
        let set = [Override::parse("scenario.seed", "2").unwrap()];
        for e in [
            Scenario::from_toml(&bomb, "bomb.toml").unwrap_err(),
            Scenario::from_toml_with(&bomb, "bomb.toml", &set).unwrap_err(),
            Scenario::parse_table(&bomb, "bomb.toml").unwrap_err(),
        ] {
            assert_eq!((e.file.as_str(), e.field.as_str()), ("bomb.toml", ""));
            assert!(e.message.starts_with(want), "{}", e.message);
            assert!(e.to_string().starts_with("bomb.toml: line 2: more than"), "{e}");
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(parse_value(&deep), toml::Value::String(deep.clone()), "taken as a word");
        assert!(parse_value("[[1]]").is_array());
    }

    #[test]
    fn lines_count_through_multi_line_strings() {
        let text = format!("m = \"\"\"\n\n\n\"\"\"\nx = {}", "[".repeat(MAX_DEPTH + 1));
        assert_eq!(check(&text).unwrap_err().line, 5);
    }
}
