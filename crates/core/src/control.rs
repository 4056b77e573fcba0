//! The control channel: what a control plane may read and write in a running data plane,
//! backend-neutral.
//!
//! A [`ControlPlane`] addresses one node per call by name, and a program's registers and tables
//! by name, in P4Runtime's shape: a register is an array of integers read and written by
//! (name, index); a table entry is a key of integer fields, an action name and integer
//! parameters. That maps onto BMv2's `register_read` / `table_add` / `table_delete` and onto BPF
//! maps (a key struct, a value struct holding an action id and its parameters). Ports' queues
//! (their WRR / DRR weights, ECN and drop thresholds) belong to the backend, not the program.
//!
//! Programs answer through [`crate::program::Program::read_register`] and its siblings; a
//! backend (the simulator's component handle, the kernel's map writer, BMv2's CLI) implements
//! [`ControlPlane`] by finding the node and handing the call to its program or its ports. Each
//! call touches one node's state only, so nodes stay independent.

use crate::packet::PortId;
use std::collections::BTreeMap;

/// Why a control operation failed: what was not found, or what was refused.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum ControlError {
    /// No node by this name.
    #[error("no node named `{0}`")]
    NoNode(String),
    /// The node runs no program.
    #[error("node `{0}` runs no program")]
    NoProgram(String),
    /// The program exposes no register by this name.
    #[error("no register named `{0}`")]
    NoRegister(String),
    /// The register has fewer entries.
    #[error("register `{register}` has {size} entries; index {index} is beyond")]
    NoIndex {
        /// The register.
        register: String,
        /// Its entries.
        size: usize,
        /// The index asked for.
        index: usize,
    },
    /// The register may be read, not written.
    #[error("register `{0}` is read-only")]
    ReadOnly(String),
    /// The program exposes no table by this name.
    #[error("no table named `{0}`")]
    NoTable(String),
    /// The table has no action by this name.
    #[error("table `{table}` has no action `{action}`")]
    NoAction {
        /// The table.
        table: String,
        /// The action asked for.
        action: String,
    },
    /// A key or action parameters of the wrong number or width.
    #[error("table `{table}`: {reason}")]
    BadEntry {
        /// The table.
        table: String,
        /// What is wrong.
        reason: String,
    },
    /// No entry with this key (a delete).
    #[error("table `{table}` has no entry for key {key:?}")]
    NoEntry {
        /// The table.
        table: String,
        /// The key.
        key: Vec<u64>,
    },
    /// The node has no such port.
    #[error("node `{node}` has no port {port}")]
    NoPort {
        /// The node.
        node: String,
        /// The port asked for.
        port: PortId,
    },
    /// The port has no such queue.
    #[error("node `{node}` port {port} has no queue {queue}")]
    NoQueue {
        /// The node.
        node: String,
        /// The port.
        port: PortId,
        /// The queue asked for.
        queue: u8,
    },
    /// The program or backend does not offer this operation (the default of every
    /// [`crate::program::Program`] control method).
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// A register a program exposes: `size` entries read by index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RegisterInfo {
    /// Its name.
    pub name: String,
    /// Entries (indices run below it).
    pub size: usize,
    /// Whether the control plane may write it.
    pub writable: bool,
}

/// A table a program exposes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TableInfo {
    /// Its name.
    pub name: String,
    /// Names of its key fields, in key order.
    pub key_fields: Vec<String>,
    /// Its actions, each with the names of its parameters.
    pub actions: Vec<(String, Vec<String>)>,
}

/// What a program exposes to the control plane.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ControlListing {
    /// Registers.
    pub registers: Vec<RegisterInfo>,
    /// Tables.
    pub tables: Vec<TableInfo>,
}

/// A threshold of one queue of a port, in packets waiting (the unit the simulator's and
/// BMv2's queues count in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueThreshold {
    /// Mark an ECN-capable packet CE when it finds at least this many packets waiting in its
    /// queue (None: never).
    EcnMarkPkts(Option<u32>),
    /// Drop a packet that finds this many waiting: the queue's capacity.
    DropPkts(u32),
}

/// What one node's program answers to a control plane: its registers and tables, by name. Every
/// [`crate::program::Program`] is one (the simulator's programs answer from their state); so is a
/// kernel or BMv2 switch (from its maps or through its CLI). Every operation is unsupported
/// unless the implementation says otherwise.
pub trait ProgramControl {
    /// What the program exposes.
    fn control_listing(&self) -> ControlListing {
        ControlListing::default()
    }

    /// Entry `index` of register `name`.
    fn read_register(&self, name: &str, _index: usize) -> Result<u64, ControlError> {
        Err(ControlError::Unsupported(format!(
            "register `{name}`: the program exposes no registers"
        )))
    }

    /// Write entry `index` of register `name`.
    fn write_register(&mut self, name: &str, _index: usize, _value: u64) -> Result<(), ControlError> {
        Err(ControlError::Unsupported(format!(
            "register `{name}`: the program exposes no registers"
        )))
    }

    /// Insert or replace the entry of `key` in table `table`: on a match, run `action` with
    /// `params` (P4Runtime's shape).
    fn table_write(&mut self, table: &str, _key: &[u64], _action: &str, _params: &[u64]) -> Result<(), ControlError> {
        Err(ControlError::Unsupported(format!(
            "table `{table}`: the program exposes no tables"
        )))
    }

    /// Delete the entry of `key` from table `table`.
    fn table_delete(&mut self, table: &str, _key: &[u64]) -> Result<(), ControlError> {
        Err(ControlError::Unsupported(format!(
            "table `{table}`: the program exposes no tables"
        )))
    }
}

/// A control plane's handle on a running data plane: one node per call, by name. A backend
/// finds a node's program ([`ControlPlane::program`]) and owns its ports' queues; the register and
/// table calls go to the program.
pub trait ControlPlane {
    /// The program of `node`.
    fn program(&mut self, node: &str) -> Result<&mut dyn ProgramControl, ControlError>;

    /// Entry `index` of register `register` of `node`'s program.
    fn read_register(&mut self, node: &str, register: &str, index: usize) -> Result<u64, ControlError> {
        self.program(node)?.read_register(register, index)
    }

    /// Write entry `index` of register `register` of `node`'s program.
    fn write_register(&mut self, node: &str, register: &str, index: usize, value: u64) -> Result<(), ControlError> {
        self.program(node)?.write_register(register, index, value)
    }

    /// Insert or replace the entry of `key` in table `table` of `node`'s program: on a match,
    /// run `action` with `params`.
    fn table_write(
        &mut self,
        node: &str,
        table: &str,
        key: &[u64],
        action: &str,
        params: &[u64],
    ) -> Result<(), ControlError> {
        self.program(node)?.table_write(table, key, action, params)
    }

    /// Delete the entry of `key` from table `table` of `node`'s program.
    fn table_delete(&mut self, node: &str, table: &str, key: &[u64]) -> Result<(), ControlError> {
        self.program(node)?.table_delete(table, key)
    }

    /// What `node`'s program exposes.
    fn listing(&mut self, node: &str) -> Result<ControlListing, ControlError> {
        Ok(self.program(node)?.control_listing())
    }

    /// Set the weights of `node`'s port `port` (WRR: packets per round; DRR: quanta per round),
    /// one per queue.
    fn set_queue_weights(&mut self, node: &str, port: PortId, weights: &[u32]) -> Result<(), ControlError>;

    /// Set a threshold of queue `queue` of `node`'s port `port`.
    fn set_queue_threshold(
        &mut self,
        node: &str,
        port: PortId,
        queue: u8,
        threshold: QueueThreshold,
    ) -> Result<(), ControlError>;
}

/// A snapshot name as a control-plane register: `base<i>` (a name ending in digits) is entry `i`
/// of register `base`; any other name is a register of one entry. Programs that name their state
/// in a snapshot (`split0.weight1`, `port2.rx_pkts`) expose it to a control plane this way, on
/// every backend that can read the snapshot.
pub fn register_of(name: &str) -> (&str, usize) {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
    match name[base.len()..].parse() {
        Ok(i) if !base.is_empty() && !base.ends_with('.') => (base, i),
        _ => (name, 0),
    }
}

/// The registers of a snapshot named as [`register_of`] reads them, writable where `writable`
/// says so of a register's name.
pub fn snapshot_listing(snap: &BTreeMap<String, u64>, writable: impl Fn(&str) -> bool) -> Vec<RegisterInfo> {
    let mut registers: Vec<RegisterInfo> = Vec::new();
    for name in snap.keys() {
        let (base, i) = register_of(name);
        match registers.iter_mut().find(|r| r.name == base) {
            Some(r) => r.size = r.size.max(i + 1),
            None => registers.push(RegisterInfo {
                name: base.to_string(),
                size: i + 1,
                writable: writable(base),
            }),
        }
    }
    registers
}

/// Entry `index` of register `name` in a snapshot named as [`register_of`] reads it.
pub fn snapshot_register(snap: &BTreeMap<String, u64>, name: &str, index: usize) -> Result<u64, ControlError> {
    let indexed = format!("{name}{index}");
    if let Some(v) = snap.get(&indexed) {
        if register_of(&indexed).0 == name {
            return Ok(*v);
        }
    }
    if let Some(v) = snap.get(name) {
        return match index {
            0 => Ok(*v),
            _ => Err(ControlError::NoIndex {
                register: name.to_string(),
                size: 1,
                index,
            }),
        };
    }
    let size = snap.keys().filter(|k| register_of(k).0 == name).count();
    Err(match size {
        0 => ControlError::NoRegister(name.to_string()),
        _ => ControlError::NoIndex {
            register: name.to_string(),
            size,
            index,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_names_read_as_indexed_registers() {
        let snap: BTreeMap<String, u64> = [("split0.weight0", 2), ("split0.weight1", 1), ("counter.rx", 9)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(snapshot_register(&snap, "split0.weight", 1), Ok(1));
        assert_eq!(snapshot_register(&snap, "counter.rx", 0), Ok(9));
        assert!(matches!(
            snapshot_register(&snap, "split0.weight", 2),
            Err(ControlError::NoIndex { size: 2, .. })
        ));
        assert!(matches!(
            snapshot_register(&snap, "counter.rx", 1),
            Err(ControlError::NoIndex { size: 1, .. })
        ));
        assert!(matches!(
            snapshot_register(&snap, "nope", 0),
            Err(ControlError::NoRegister(_))
        ));
        assert_eq!(register_of("split0.weight12"), ("split0.weight", 12));
        assert_eq!(register_of("port3."), ("port3.", 0));
    }
}
