//! `simple_switch_CLI`, kept open: the switch's runtime interface (tables, registers, mirror
//! sessions) over Thrift.
//!
//! BMv2's CLI is the interface its users know and the one its Thrift API is documented
//! through; a Rust Thrift client would need bindings generated from BMv2's IDL, pinned to its
//! version. One process per switch serves every command, so Python starts once (about half a
//! second) and each command costs a Thrift round trip. Commands go in on its standard input;
//! its answer is everything up to the next `RuntimeCmd: ` prompt.

use crate::Bmv2Error;
use std::io::{Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

const PROMPT: &[u8] = b"RuntimeCmd: ";

/// One running `simple_switch_CLI`.
pub struct SwitchCli {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    /// Every command sent, in order: what a user would type to configure the switch by hand.
    pub log: Vec<String>,
}

impl SwitchCli {
    /// Start the CLI on `thrift_port` inside namespace `ns` and wait for its first prompt.
    pub fn open(cli: &std::path::Path, ns: &str, thrift_port: u16) -> Result<SwitchCli, Bmv2Error> {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(cli)
            .args(["--thrift-port", &thrift_port.to_string()])
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(Bmv2Error::io(format!("starting {}", cli.display())))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let mut c = SwitchCli {
            child,
            stdin,
            stdout,
            log: Vec::new(),
        };
        let banner = c.answer()?;
        if !banner.contains("Done") {
            return Err(Bmv2Error::Switch(format!(
                "simple_switch_CLI did not connect: {banner}"
            )));
        }
        Ok(c)
    }

    /// Read up to the next prompt.
    fn answer(&mut self) -> Result<String, Bmv2Error> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while !buf.ends_with(PROMPT) {
            let n = self
                .stdout
                .read(&mut chunk)
                .map_err(Bmv2Error::io("reading simple_switch_CLI"))?;
            if n == 0 {
                return Err(Bmv2Error::Switch(format!(
                    "simple_switch_CLI ended: {}",
                    String::from_utf8_lossy(&buf)
                )));
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        buf.truncate(buf.len() - PROMPT.len());
        Ok(String::from_utf8_lossy(&buf).trim().to_string())
    }

    /// Run one command; its answer, or an error if BMv2 refused it.
    pub fn run(&mut self, command: &str) -> Result<String, Bmv2Error> {
        writeln!(self.stdin, "{command}").map_err(Bmv2Error::io("writing to simple_switch_CLI"))?;
        self.log.push(command.to_string());
        let out = self.answer()?;
        let refused = out.lines().any(|l| {
            l.starts_with("Error") || l.starts_with("Invalid") || l.contains("exception") || l.starts_with("***")
        });
        if refused {
            return Err(Bmv2Error::Switch(format!("`{command}`: {out}")));
        }
        Ok(out)
    }

    /// Every value of register array `name`.
    pub fn register_read_all(&mut self, name: &str) -> Result<Vec<u64>, Bmv2Error> {
        let out = self.run(&format!("register_read {name}"))?;
        parse_register_array(name, &out)
    }

    /// Write one register.
    pub fn register_write(&mut self, name: &str, index: usize, value: u64) -> Result<(), Bmv2Error> {
        self.run(&format!("register_write {name} {index} {value}")).map(|_| ())
    }
}

impl Drop for SwitchCli {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "EOF");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The values of `NAME= a, b, c` (BMv2's answer to `register_read NAME`).
pub fn parse_register_array(name: &str, out: &str) -> Result<Vec<u64>, Bmv2Error> {
    let bad = || Bmv2Error::Switch(format!("unexpected answer to `register_read {name}`: {out}"));
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{name}=")))
        .ok_or_else(bad)?;
    let values = &line[name.len() + 1..];
    values
        .split(',')
        .map(|v| v.trim().parse::<u64>().map_err(|_| bad()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_register_array_answer_parses_into_its_values() {
        let out = "MpsIngress.counters= 0, 7, 18446744073709551615";
        assert_eq!(
            parse_register_array("MpsIngress.counters", out).unwrap(),
            vec![0, 7, u64::MAX]
        );
    }

    #[test]
    fn an_answer_for_another_register_is_an_error() {
        assert!(parse_register_array("MpsIngress.counters", "MpsEgress.x= 1").is_err());
        assert!(parse_register_array("MpsIngress.counters", "MpsIngress.counters= 1, x").is_err());
    }
}
