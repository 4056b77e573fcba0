//! Requests to capture an interface to a pcap file, honoured by the simulator and the kernel.

use std::path::PathBuf;

/// A request to capture one interface to a pcap file.
#[derive(Clone, Debug)]
pub struct CaptureRequest {
    /// Node name.
    pub node: String,
    /// Interface: `ethN` (port N, in the order the node's links are declared) or the name of
    /// the neighbour at the other end.
    pub iface: String,
    /// Output file.
    pub path: PathBuf,
    /// Snap length in bytes.
    pub snaplen: u32,
}

impl CaptureRequest {
    /// This capture for variant `variant`: `{variant}` in its path replaced by the name.
    pub fn for_variant(&self, variant: &str) -> CaptureRequest {
        CaptureRequest {
            path: self.path.to_string_lossy().replace("{variant}", variant).into(),
            ..self.clone()
        }
    }
}
