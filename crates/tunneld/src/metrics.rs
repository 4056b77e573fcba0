//! Counters in Prometheus' text exposition format (version 0.0.4), served over HTTP on a local
//! port, one response per connection.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One metric family: name, help, type, and its samples (labels, value).
#[derive(Clone, Debug)]
pub struct Family {
    /// Name, `mpsched_tunnel_` first.
    pub name: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// `counter` or `gauge`.
    pub kind: &'static str,
    /// Samples: label pairs and value.
    pub samples: Vec<(Vec<(&'static str, String)>, f64)>,
}

impl Family {
    /// A family without samples yet.
    pub fn new(name: &'static str, kind: &'static str, help: &'static str) -> Family {
        Family {
            name,
            help,
            kind,
            samples: Vec::new(),
        }
    }

    /// Add a sample.
    pub fn sample(mut self, labels: Vec<(&'static str, String)>, value: f64) -> Family {
        self.samples.push((labels, value));
        self
    }
}

/// Label values escaped as the format asks (backslash, quote, newline).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The families as exposition text.
pub fn render(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for (labels, v) in &f.samples {
            let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
            if l.is_empty() {
                let _ = writeln!(out, "{} {v}", f.name);
            } else {
                let _ = writeln!(out, "{}{{{}}} {v}", f.name, l.join(","));
            }
        }
    }
    out
}

/// The metrics endpoint: a thread that answers each connection with the latest snapshot the
/// daemon published, so that a slow or idle client costs the data path nothing.
#[derive(Debug)]
pub struct MetricsServer {
    snapshot: Arc<Mutex<String>>,
    addr: std::net::SocketAddr,
}

impl MetricsServer {
    /// Listen on `addr` and answer from a thread (one connection at a time, each given 1 s).
    pub fn bind(addr: std::net::SocketAddr) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let snapshot = Arc::new(Mutex::new(String::new()));
        let shared = Arc::clone(&snapshot);
        std::thread::Builder::new().name("metrics".into()).spawn(move || {
            for stream in listener.incoming() {
                match stream {
                    Ok(s) => {
                        let body = shared.lock().map(|b| b.clone()).unwrap_or_default();
                        let _ = answer(s, &body);
                    }
                    // Out of descriptors, say: wait rather than spin.
                    Err(_) => std::thread::sleep(Duration::from_millis(100)),
                }
            }
        })?;
        Ok(MetricsServer { snapshot, addr })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Replace what clients get.
    pub fn publish(&self, text: String) {
        if let Ok(mut s) = self.snapshot.lock() {
            *s = text;
        }
    }
}

fn answer(mut s: TcpStream, body: &str) -> io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(1)))?;
    s.set_write_timeout(Some(Duration::from_secs(1)))?;
    let mut req = [0u8; 1024];
    let _ = s.read(&mut req);
    write!(
        s,
        "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    s.flush()
}

/// One sample read back from exposition text.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Family name.
    pub name: String,
    /// Label pairs, unescaped, in the order written.
    pub labels: Vec<(String, String)>,
    /// Value.
    pub value: f64,
}

impl Sample {
    /// The value of label `key`, if the sample has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// The samples of exposition text (what [`render`] writes: comments skipped, a line that is
/// not a sample ignored).
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(parse_line)
        .collect()
}

fn parse_line(line: &str) -> Option<Sample> {
    let (head, value) = line.trim_end().rsplit_once(' ')?;
    let value = value.parse().ok()?;
    let Some((name, rest)) = head.split_once('{') else {
        return Some(Sample {
            name: head.to_string(),
            labels: Vec::new(),
            value,
        });
    };
    let mut labels = Vec::new();
    let mut chars = rest.chars();
    loop {
        let key: String = chars.by_ref().take_while(|&c| c != '=').collect();
        if chars.next() != Some('"') {
            return None;
        }
        let mut v = String::new();
        loop {
            match chars.next()? {
                '\\' => match chars.next()? {
                    'n' => v.push('\n'),
                    c => v.push(c),
                },
                '"' => break,
                c => v.push(c),
            }
        }
        labels.push((key.trim_start_matches(',').to_string(), v));
        match chars.next()? {
            ',' => continue,
            '}' => break,
            _ => return None,
        }
    }
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// The exposition text a metrics endpoint at `addr` serves (one HTTP/1.0 GET, all of it
/// within `timeout`; an answer longer than [`MAX_EXPOSITION_BYTES`] is refused, not cut).
pub fn fetch(addr: std::net::SocketAddr, timeout: Duration) -> io::Result<String> {
    let deadline = std::time::Instant::now() + timeout;
    let left = || {
        deadline
            .checked_duration_since(std::time::Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "no whole answer in time"))
    };
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_write_timeout(Some(left()?))?;
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")?;
    let mut r = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        s.set_read_timeout(Some(left()?))?;
        let n = s.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        r.extend_from_slice(&chunk[..n]);
        if r.len() as u64 > MAX_EXPOSITION_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "an answer longer than 4 MiB",
            ));
        }
    }
    let r = String::from_utf8_lossy(&r);
    match r.split_once("\r\n\r\n") {
        Some((status, body)) if status.starts_with("HTTP/1.0 200") || status.starts_with("HTTP/1.1 200") => {
            Ok(body.to_string())
        }
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not a metrics answer: {:?}", r.lines().next().unwrap_or("")),
        )),
    }
}

/// The most of an answer [`fetch`] reads (a daemon with 8 paths writes about 40 KB).
pub const MAX_EXPOSITION_BYTES: u64 = 4 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_render_writes_parse_reads_back() {
        let f = Family::new("mpsched_tunnel_x_total", "counter", "Things.")
            .sample(vec![("path", "a\"b,c}\\d\ne".into()), ("remote", String::new())], 3.0)
            .sample(vec![], 1.5);
        let got = parse(&render(&[f]));
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].name, "mpsched_tunnel_x_total");
        assert_eq!(got[0].label("path"), Some("a\"b,c}\\d\ne"));
        assert_eq!((got[0].label("remote"), got[0].value), (Some(""), 3.0));
        assert_eq!((got[1].labels.len(), got[1].value), (0, 1.5));
        assert!(
            parse("x{a=\"1} 2\ny{a=1} 3\nz\n").is_empty(),
            "malformed lines are skipped"
        );
        assert!(parse("nan NaN\n")[0].value.is_nan());
    }

    #[test]
    fn exposition_text_has_help_type_and_escaped_labels() {
        let f = Family::new("mpsched_tunnel_x_total", "counter", "Things.")
            .sample(vec![("path", "a\"b".into())], 3.0)
            .sample(vec![], 1.5);
        assert_eq!(
            render(&[f]),
            "# HELP mpsched_tunnel_x_total Things.\n# TYPE mpsched_tunnel_x_total counter\n\
             mpsched_tunnel_x_total{path=\"a\\\"b\"} 3\nmpsched_tunnel_x_total 1.5\n"
        );
    }

    #[test]
    fn a_client_gets_the_latest_snapshot_over_http() {
        let m = MetricsServer::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        m.publish("x 1\n".into());
        let get = || {
            let mut c = TcpStream::connect(m.local_addr()).unwrap();
            c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
            let mut r = String::new();
            c.read_to_string(&mut r).unwrap();
            r
        };
        let r = get();
        assert!(r.starts_with("HTTP/1.0 200 OK"), "{r}");
        assert!(r.ends_with("\r\n\r\nx 1\n"), "{r}");
        // An idle client does not hold the next one back for more than its second.
        let _idle = TcpStream::connect(m.local_addr()).unwrap();
        m.publish("x 2\n".into());
        assert!(get().ends_with("x 2\n"));
        assert_eq!(fetch(m.local_addr(), Duration::from_secs(2)).unwrap(), "x 2\n");
        // Something else on the port: refused, not read as counters.
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = other.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut c, _) = other.accept().unwrap();
            let _ = c.write_all(b"SSH-2.0-OpenSSH\r\n");
        });
        assert!(fetch(at, Duration::from_secs(2)).is_err());
    }
}
