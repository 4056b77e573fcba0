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

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
