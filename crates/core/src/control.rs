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

/// A control plane's handle on a running data plane: one node per call, by name.
pub trait ControlPlane {
    /// Entry `index` of register `register` of `node`'s program.
    fn read_register(&mut self, node: &str, register: &str, index: usize) -> Result<u64, ControlError>;

    /// Write entry `index` of register `register` of `node`'s program.
    fn write_register(&mut self, node: &str, register: &str, index: usize, value: u64) -> Result<(), ControlError>;

    /// Insert or replace the entry of `key` in table `table` of `node`'s program: on a match,
    /// run `action` with `params`.
    fn table_write(
        &mut self,
        node: &str,
        table: &str,
        key: &[u64],
        action: &str,
        params: &[u64],
    ) -> Result<(), ControlError>;

    /// Delete the entry of `key` from table `table` of `node`'s program.
    fn table_delete(&mut self, node: &str, table: &str, key: &[u64]) -> Result<(), ControlError>;

    /// What `node`'s program exposes.
    fn listing(&mut self, node: &str) -> Result<ControlListing, ControlError>;

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
