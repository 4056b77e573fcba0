//! Kernel MPTCP subflows as `ss -tin` shows them: the per-subflow figures of an MPTCP flow on
//! the kernel.
//!
//! iperf3 reads `TCP_INFO` from its socket, which on an MPTCP socket is the first subflow's
//! alone; `ss` lists every subflow as a TCP socket with its `tcp_info` and, after
//! `tcp-ulp-mptcp`, the connection's token. The backend reads it each sample interval while a
//! flow runs and keeps the last reading: the subflows of the connection to the flow's server
//! address and port that has acknowledged the most bytes (iperf3's control connection to the
//! same port is MPTCP too, and nearly idle).

use crate::ns::Netns;
use mpsched_scenario::results::{round, SubflowFigures};

/// One subflow socket of an `ss -tinH` listing.
#[derive(Clone, Debug, PartialEq)]
pub struct SsSubflow {
    /// Local `address:port` (the `%interface` suffix dropped).
    pub local: String,
    /// Remote `address:port`.
    pub remote: String,
    /// The MPTCP connection's token as the peer knows it (shared by its subflows).
    pub token: String,
    /// Whether it is the connection's first subflow (MP_CAPABLE, flag `M`).
    pub first: bool,
    /// `bytes_acked`.
    pub bytes_acked: u64,
    /// `segs_out`.
    pub segs_out: u64,
    /// Retransmissions over its life (`retrans:current/total`).
    pub retrans_total: u64,
    /// Smoothed RTT, ms.
    pub srtt_ms: f64,
    /// Congestion window, bytes (`cwnd` segments of `mss`).
    pub cwnd_bytes: u64,
}

impl SsSubflow {
    /// Its figures, `acked_mbps` over `active_s` seconds.
    pub fn figures(&self, active_s: f64) -> SubflowFigures {
        SubflowFigures {
            id: format!("{} -> {}", self.local, self.remote),
            acked_mbps: round(self.bytes_acked as f64 * 8.0 / active_s.max(1e-9) / 1e6, 4),
            segments_sent: self.segs_out,
            retransmitted_segments: self.retrans_total,
            rtos: None,
            srtt_ms: round(self.srtt_ms, 3),
            cwnd_kib: round(self.cwnd_bytes as f64 / 1024.0, 3),
        }
    }
}

/// The MPTCP subflow sockets of an `ss -tinH` listing (plain TCP sockets left out).
pub fn parse(text: &str) -> Vec<SsSubflow> {
    let mut out = Vec::new();
    let mut header: Option<(String, String)> = None;
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) {
            // State, Recv-Q, Send-Q, local, remote.
            let cols: Vec<&str> = line.split_whitespace().collect();
            header = (cols.len() >= 5).then(|| (strip_interface(cols[3]), cols[4].to_string()));
            continue;
        }
        let Some((local, remote)) = header.take() else { continue };
        if let Some(s) = subflow(local, remote, line) {
            out.push(s);
        }
    }
    out
}

/// One socket's info line, if it is an MPTCP subflow.
fn subflow(local: String, remote: String, info: &str) -> Option<SsSubflow> {
    let (tcp, ulp) = info.split_once("tcp-ulp-mptcp")?;
    let field = |text: &str, key: &str| -> Option<String> {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(key).map(str::to_string))
    };
    let num = |key: &str| field(tcp, key).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let token = field(ulp, "token:")?;
    let token = token.split_once('/').map_or(token.as_str(), |t| t.1);
    let token = token.split('(').next().unwrap_or("").to_string();
    let srtt_ms = field(tcp, "rtt:")
        .and_then(|v| v.split('/').next().and_then(|x| x.parse::<f64>().ok()))
        .unwrap_or(0.0);
    let retrans_total = field(tcp, "retrans:")
        .and_then(|v| v.split('/').nth(1).and_then(|x| x.parse::<u64>().ok()))
        .unwrap_or(0);
    Some(SsSubflow {
        local,
        remote,
        token,
        first: field(ulp, "flags:").is_some_and(|f| f.contains('M')),
        bytes_acked: num("bytes_acked:"),
        segs_out: num("segs_out:"),
        retrans_total,
        srtt_ms,
        cwnd_bytes: num("cwnd:") * num("mss:"),
    })
}

/// `10.2.0.2%e1:34501` as `10.2.0.2:34501`.
fn strip_interface(addr: &str) -> String {
    match (addr.find('%'), addr.rfind(':')) {
        (Some(p), Some(c)) if p < c => format!("{}{}", &addr[..p], &addr[c..]),
        _ => addr.to_string(),
    }
}

/// The subflows of the connection to `remote` (`address:port`) that acknowledged the most
/// bytes, the first subflow first.
pub fn connection(subflows: &[SsSubflow], remote: &str) -> Vec<SsSubflow> {
    let mut tokens: Vec<(&str, u64)> = Vec::new();
    for s in subflows.iter().filter(|s| s.remote == remote) {
        match tokens.iter_mut().find(|t| t.0 == s.token) {
            Some(t) => t.1 += s.bytes_acked,
            None => tokens.push((&s.token, s.bytes_acked)),
        }
    }
    let Some(&(token, _)) = tokens.iter().max_by_key(|t| t.1) else {
        return Vec::new();
    };
    let mut conn: Vec<SsSubflow> = subflows
        .iter()
        .filter(|s| s.remote == remote && s.token == token)
        .cloned()
        .collect();
    conn.sort_by_key(|s| !s.first);
    conn
}

/// `ss -tinH` in namespace `n` (empty where ss fails: the reading is then skipped).
pub fn read(n: &Netns) -> String {
    n.exec("ss", &["-tinH"])
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An MPTCP iperf3 run as ss 6.1 showed it (trimmed): the control connection's two
    /// subflows and the data connection's two, each pair sharing the peer's token.
    const LISTING: &str = "\
ESTAB 0      0         10.1.0.2:37605 10.0.0.2:5201
\t cubic wscale:10,10 rto:204 rtt:0.067/0.037 mss:1448 cwnd:12 bytes_acked:42 segs_out:6 tcp-ulp-mptcp flags:Mmec token:0000(id:0)/df76e393(id:0) seq:1e91 sfseq:2 ssnoff:c706 maplen:1
ESTAB 0      377472    10.1.0.2:40000 10.0.0.2:5201
\t cubic wscale:10,10 rto:212 rtt:8.027/0.338 mss:1448 cwnd:80 ssthresh:71 bytes_acked:42431417 segs_out:30011 retrans:0/11 tcp-ulp-mptcp flags:Mmec token:0000(id:0)/93ee8468(id:0) seq:d1da sfseq:1 ssnoff:4831 maplen:0
ESTAB 0      392424 10.2.0.2%e1:34501 10.0.0.2:5201
\t cubic wscale:10,10 rto:212 rtt:8.373/0.651 mss:1448 cwnd:81 ssthresh:71 bytes_acked:42333646 segs_out:29933 retrans:0/13 tcp-ulp-mptcp flags:Jjec token:51b9f120(id:0)/93ee8468(id:1) seq:d1da sfseq:0 ssnoff:c950 maplen:0
ESTAB 0      0      10.2.0.2%e1:37895 10.0.0.2:5201
\t cubic wscale:10,10 rto:204 rtt:0.028/0.011 mss:1448 cwnd:11 bytes_acked:145 segs_out:5 tcp-ulp-mptcp flags:Jjec token:ab47cf47(id:0)/df76e393(id:1) seq:1e91 sfseq:2 ssnoff:6f8c maplen:1
ESTAB 0      0         10.1.0.2:22 10.0.0.9:50000
\t cubic wscale:7,7 rto:204 rtt:1.0/0.5 mss:1448 cwnd:10 bytes_acked:100 segs_out:3
";

    #[test]
    fn the_data_connections_subflows_are_picked_with_their_figures() {
        let all = parse(LISTING);
        assert_eq!(all.len(), 4, "the plain TCP socket is not a subflow");
        let conn = connection(&all, "10.0.0.2:5201");
        assert_eq!(conn.len(), 2);
        assert!(conn[0].first && !conn[1].first);
        assert_eq!(conn[1].local, "10.2.0.2:34501");
        assert_eq!((conn[0].retrans_total, conn[1].retrans_total), (11, 13));
        assert_eq!(conn[0].cwnd_bytes, 80 * 1448);
        let f = conn[1].figures(4.0);
        assert_eq!(f.id, "10.2.0.2:34501 -> 10.0.0.2:5201");
        assert_eq!(f.acked_mbps, round(42333646.0 * 8.0 / 4.0 / 1e6, 4));
        assert_eq!((f.srtt_ms, f.segments_sent, f.rtos), (8.373, 29933, None));
        assert!(connection(&all, "10.0.0.3:5201").is_empty());
    }
}
