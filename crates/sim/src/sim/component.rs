//! Components: parts of a simulation written outside the engine, as htsim's event sources are.
//!
//! A component has its own events (timers it sets, each with a token it chooses) and its own
//! TCP connections (opened between any two hosts, written to, and reported back when their
//! receivers deliver bytes in order). The engine knows nothing of what a component is: a
//! traffic generator drawing flow sizes from a distribution, an MPTCP connection over several
//! subflows, a probe, a monitor are each a type implementing [`Component`], installed with
//! [`Simulation::add_component`], and none adds an arm to the engine.
//!
//! A component runs through a [`Net`], its handle on the simulation for the length of one
//! call: the time, timers, connections, and the hosts by name. Nothing a component does reaches
//! it again within the same call (a packet it sends is delivered by a later event), so each
//! component is taken out of the simulation while it runs and put back after.

use super::tcp::{Conn, Owner};
use super::{SimError, Simulation};
use crate::event::{EventKind, TimePs};
use crate::packet::{Packet, CONTROL_FLOW};
use mpsched_core::control::{ControlError, ControlPlane, ProgramControl, QueueThreshold};
use mpsched_core::packet::{Ecn, PacketMeta, PortId};
use mpsched_core::program::Program;
use mpsched_scenario::NodeKind;
use mpsched_transport::tcp::{ReceiverStats, SenderStats, TcpConfig};

/// A component installed in a simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ComponentId(pub u32);

/// A TCP connection a component opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnId(pub u32);

/// A part of a simulation with its own events and connections. Every method but
/// [`Component::name`] has a default that does nothing.
pub trait Component: Send {
    /// Name, under which the component's counters appear in the results.
    fn name(&self) -> &str;

    /// Called once when the component is installed: set the first timers, open connections.
    fn start(&mut self, _net: &mut Net<'_>) {}

    /// A timer set through [`Net::set_timer`] is due.
    fn on_timer(&mut self, _token: u64, _net: &mut Net<'_>) {}

    /// A datagram arrived at `host` on a UDP port this component bound ([`Net::bind_udp`]).
    fn on_packet(&mut self, _host: u32, _pkt: &PacketMeta, _net: &mut Net<'_>) {}

    /// The receiver of connection `conn` delivered bytes in order: `delivered_bytes` in all
    /// since the connection opened.
    fn on_delivered(&mut self, _conn: ConnId, _delivered_bytes: u64, _net: &mut Net<'_>) {}

    /// Named counters for the results.
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}

/// How a component's datagram leaves its host ([`Net::send_udp`]): its ECN and DSCP bits (the
/// DSCP class, `dscp >> 3`, picks the egress queue as a flow's does), and the interface, by
/// port. An `Ecn` alone converts into options with that ECN and the rest default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpOptions {
    /// ECN field.
    pub ecn: Ecn,
    /// DSCP (six bits; higher bits are dropped).
    pub dscp: u8,
    /// The interface to send by (the host's port): None for the one its routes give.
    pub iface: Option<PortId>,
}

impl From<Ecn> for UdpOptions {
    fn from(ecn: Ecn) -> UdpOptions {
        UdpOptions {
            ecn,
            ..UdpOptions::default()
        }
    }
}

/// A component's handle on the simulation during one call. It is also the component's
/// [`ControlPlane`]: registers, tables and queues of any node, by name.
pub struct Net<'a> {
    sim: &'a mut Simulation,
    id: ComponentId,
}

impl Net<'_> {
    /// The component being called.
    pub fn id(&self) -> ComponentId {
        self.id
    }

    /// Simulated time now.
    pub fn now_ps(&self) -> TimePs {
        self.sim.net.now
    }

    /// The time the run ends (the scenario's duration plus the drain time).
    pub fn end_ps(&self) -> TimePs {
        self.sim.net.end_ps
    }

    /// Call [`Component::on_timer`] with `token` at `at_ps` (now, if that has passed).
    pub fn set_timer(&mut self, at_ps: TimePs, token: u64) {
        let i = self.sim.traffic.component_timers.insert((self.id.0, token));
        self.sim
            .net
            .queue
            .schedule(at_ps.max(self.sim.net.now), EventKind::ComponentTimer(i));
    }

    /// The host named `name`.
    pub fn host(&self, name: &str) -> Option<u32> {
        self.sim
            .net
            .nodes
            .iter()
            .position(|n| n.name == name && n.kind == NodeKind::Host)
            .map(|i| i as u32)
    }

    /// Open a TCP connection from host `src` (port `src_port`) to host `dst` (port `dst_port`)
    /// with `cfg`. Each end sends by the interface its routes give and from that interface's
    /// address. Its receiver's deliveries come back through [`Component::on_delivered`].
    pub fn open_tcp(&mut self, src: u32, dst: u32, ports: (u16, u16), cfg: &TcpConfig) -> Result<ConnId, SimError> {
        self.hosts(&[src, dst])?;
        let sim = &mut *self.sim;
        let (Some(there), Some(back)) = (sim.host_port(src, dst), sim.host_port(dst, src)) else {
            return Err(SimError::Config(format!(
                "no route between `{}` and `{}`",
                sim.net.nodes[src as usize].name, sim.net.nodes[dst as usize].name
            )));
        };
        let meta = PacketMeta::udp(
            sim.net.interface_ips[src as usize][usize::from(there)],
            sim.net.interface_ips[dst as usize][usize::from(back)],
            ports.0,
            ports.1,
            0,
        );
        let c = sim.traffic.conns.len() as u32;
        sim.traffic
            .conns
            .push(Conn::new(cfg, src, dst, meta, there, back, Owner::Component(self.id)));
        Ok(ConnId(c))
    }

    /// Datagrams arriving at `host` on UDP port `port` go to this component's
    /// [`Component::on_packet`]. Fails if another component holds the port.
    pub fn bind_udp(&mut self, host: u32, port: u16) -> Result<(), SimError> {
        self.hosts(&[host])?;
        match self.sim.traffic.udp_endpoints.entry((host, port)) {
            std::collections::hash_map::Entry::Occupied(_) => Err(SimError::Config(format!(
                "UDP port {port} of node {host} is bound already"
            ))),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(self.id);
                Ok(())
            }
        }
    }

    /// Send a UDP datagram of `wire_bytes` (headers included) from host `src` to host `dst`
    /// with `opts` (an [`Ecn`] alone will do): by the interface it names, or else by the one the
    /// routes give, and from that interface's address.
    pub fn send_udp(
        &mut self,
        src: u32,
        dst: u32,
        ports: (u16, u16),
        wire_bytes: u32,
        opts: impl Into<UdpOptions>,
    ) -> Result<(), SimError> {
        let opts = opts.into();
        self.hosts(&[src, dst])?;
        let sim = &mut *self.sim;
        let out = match opts.iface {
            Some(i) if usize::from(i) < sim.net.nodes[src as usize].out_links.len() => Some(i),
            Some(i) => {
                return Err(SimError::Config(format!(
                    "host `{}` has no interface {i}",
                    sim.net.nodes[src as usize].name
                )))
            }
            None => sim.host_port(src, dst),
        };
        let (Some(out), Some(back)) = (out, sim.host_port(dst, src)) else {
            return Err(SimError::Config(format!("no route from node {src} to node {dst}")));
        };
        let mut meta = PacketMeta::udp(
            sim.net.interface_ips[src as usize][usize::from(out)],
            sim.net.interface_ips[dst as usize][usize::from(back)],
            ports.0,
            ports.1,
            wire_bytes,
        );
        meta.ecn = opts.ecn;
        meta.dscp = opts.dscp & 0x3f;
        let pkt = Packet::bare(meta, CONTROL_FLOW, sim.net.now);
        sim.output(src, out, pkt);
        Ok(())
    }

    /// The application writes `bytes` more into connection `conn`; it sends what it may now.
    pub fn write(&mut self, conn: ConnId, bytes: u64) {
        self.sim.traffic.conns[conn.0 as usize].sender.write(bytes);
        self.sim.pump(conn.0);
    }

    /// Check that each of `nodes` is a host.
    fn hosts(&self, nodes: &[u32]) -> Result<(), SimError> {
        for &n in nodes {
            if !self
                .sim
                .net
                .nodes
                .get(n as usize)
                .is_some_and(|x| x.kind == NodeKind::Host)
            {
                return Err(SimError::Config(format!("node {n} is not a host")));
            }
        }
        Ok(())
    }

    /// Scenario link `link` fails, both directions: what is queued is lost now; what is on the
    /// wire or in flight is lost when it would have arrived (the arrival checks the link, so the
    /// end of serialisation need not); nothing enters it again.
    pub fn fail_link(&mut self, link: usize) -> Result<(), SimError> {
        let sim = &mut *self.sim;
        if 2 * link + 1 >= sim.net.links.len() {
            return Err(SimError::Config(format!("no link {link}")));
        }
        for l in [2 * link, 2 * link + 1] {
            sim.net.links[l].up = false;
            loop {
                let link = &mut sim.net.links[l];
                let Some(d) = link.queues.pop(link.queued_bytes) else {
                    break;
                };
                link.queued_bytes -= u64::from(d.wire_bytes);
                link.stats.down_drops += 1;
                sim.drop_packet(d.pkt);
            }
            // The queue is empty: those waiting for room in it wait no more (their next ACK or
            // timer lets them send, into a link that drops what it is given).
            for w in std::mem::take(&mut sim.net.links[l].waiting) {
                match w {
                    crate::link::Waiter::Conn(c) => sim.traffic.conns[c as usize].waiting_for_room = false,
                    crate::link::Waiter::Paced(fi) => sim.release_paced(fi),
                }
            }
        }
        Ok(())
    }

    /// Set scenario link `link`'s rate in both directions (a capacity trace): 0 takes it down
    /// as [`Net::fail_link`] does; a rate brings a link that was down back up. A packet being
    /// serialised finishes at the old rate.
    pub fn set_link_rate(&mut self, link: usize, rate_bps: u64) -> Result<(), SimError> {
        if rate_bps == 0 {
            return self.fail_link(link);
        }
        let sim = &mut *self.sim;
        if 2 * link + 1 >= sim.net.links.len() {
            return Err(SimError::Config(format!("no link {link}")));
        }
        for l in [2 * link, 2 * link + 1] {
            sim.net.links[l].up = true;
            sim.net.links[l].set_rate(rate_bps);
        }
        Ok(())
    }

    /// Replace switch `node`'s routes and ECMP groups with those of `config` (the control plane
    /// after a failure).
    pub fn update_routes(&mut self, node: u32, config: &mpsched_core::switch::SwitchConfig) -> Result<(), SimError> {
        let name = self.sim.net.nodes.get(node as usize).map(|n| n.name.clone());
        let program = self
            .sim
            .net
            .nodes
            .get_mut(node as usize)
            .and_then(|n| n.program.as_mut())
            .ok_or_else(|| SimError::Config(format!("node {node} has no program")))?;
        program
            .update_routes(config)
            .map_err(|e| SimError::Config(format!("node `{}`: {e}", name.unwrap_or_default())))
    }

    /// The node named `name` (host or switch).
    pub fn node(&self, name: &str) -> Option<u32> {
        self.sim.net.nodes.iter().position(|n| n.name == name).map(|i| i as u32)
    }

    /// Node `name`'s index, or the error naming it.
    fn node_by_name(&self, name: &str) -> Result<usize, ControlError> {
        self.node(name)
            .map(|i| i as usize)
            .ok_or_else(|| ControlError::NoNode(name.to_string()))
    }

    /// Node `name`'s program.
    fn program_of(&mut self, name: &str) -> Result<&mut (dyn Program + 'static), ControlError> {
        let i = self.node_by_name(name)?;
        self.sim.net.nodes[i]
            .program
            .as_deref_mut()
            .ok_or_else(|| ControlError::NoProgram(name.to_string()))
    }

    /// The queues of node `name`'s port `port`, and the port's wire bytes waiting.
    fn port_queues(&mut self, name: &str, port: PortId) -> Result<&mut crate::queue::PortQueues, ControlError> {
        let i = self.node_by_name(name)?;
        let sim = &mut *self.sim;
        let l = *sim.net.nodes[i]
            .out_links
            .get(usize::from(port))
            .ok_or_else(|| ControlError::NoPort {
                node: name.to_string(),
                port,
            })?;
        Ok(&mut sim.net.links[l as usize].queues)
    }

    /// Counters of connection `conn`'s sender and receiver.
    pub fn conn_stats(&self, conn: ConnId) -> (&SenderStats, &ReceiverStats) {
        let c = &self.sim.traffic.conns[conn.0 as usize];
        (c.sender.stats(), c.receiver.stats())
    }
}

impl Simulation {
    /// Install `component` and start it; its counters join the results under its name.
    pub fn add_component(&mut self, component: Box<dyn Component>) -> ComponentId {
        let id = ComponentId(self.traffic.components.len() as u32);
        self.traffic.components.push(Some(component));
        self.call_component(id, |c, net| c.start(net));
        id
    }

    /// Call component `id` with a [`Net`] on this simulation.
    pub(crate) fn call_component(&mut self, id: ComponentId, f: impl FnOnce(&mut dyn Component, &mut Net<'_>)) {
        // Taken out while it runs; nothing it does calls it again before it returns.
        let Some(mut c) = self.traffic.components[id.0 as usize].take() else {
            debug_assert!(false, "component {} called while running", id.0);
            return;
        };
        f(c.as_mut(), &mut Net { sim: self, id });
        self.traffic.components[id.0 as usize] = Some(c);
    }

    /// A datagram for a UDP port a component bound: true if one took it.
    pub(crate) fn component_datagram(&mut self, host: u32, pkt: &Packet) -> bool {
        let Some(&id) = self.traffic.udp_endpoints.get(&(host, pkt.meta.dst_port)) else {
            return false;
        };
        let meta = pkt.meta;
        self.call_component(id, |c, net| c.on_packet(host, &meta, net));
        true
    }

    pub(crate) fn on_component_timer(&mut self, i: u32) {
        let (id, token) = self.traffic.component_timers.take(i);
        self.call_component(ComponentId(id), |c, net| c.on_timer(token, net));
    }

    /// The components' counters, by component name.
    pub(crate) fn component_counters(&self) -> impl Iterator<Item = (String, Vec<(String, u64)>)> + '_ {
        self.traffic
            .components
            .iter()
            .flatten()
            .map(|c| (c.name().to_string(), c.counters()))
    }
}

impl Net<'_> {
    /// End the run with `error` (a program's control loop failed): the engine stops at the
    /// next event and the run returns [`super::SimError::Control`].
    pub(crate) fn fail_control(&mut self, error: String) {
        if self.sim.net.control_error.is_none() {
            self.sim.net.control_error = Some(error);
        }
    }
}

impl ControlPlane for Net<'_> {
    fn program(&mut self, node: &str) -> Result<&mut dyn ProgramControl, ControlError> {
        Ok(self.program_of(node)?)
    }

    /// WRR or DRR weights of the port's queues (from the next round on).
    fn set_queue_weights(&mut self, node: &str, port: PortId, weights: &[u32]) -> Result<(), ControlError> {
        self.port_queues(node, port)?
            .set_weights(weights)
            .map_err(|e| ControlError::Unsupported(format!("node `{node}` port {port}: {e}")))
    }

    fn set_queue_threshold(
        &mut self,
        node: &str,
        port: PortId,
        queue: u8,
        threshold: QueueThreshold,
    ) -> Result<(), ControlError> {
        let q = self.port_queues(node, port)?;
        if usize::from(queue) >= q.n_queues() {
            return Err(ControlError::NoQueue {
                node: node.to_string(),
                port,
                queue,
            });
        }
        match threshold {
            QueueThreshold::EcnMarkPkts(t) => q.set_ecn_threshold(queue, t),
            QueueThreshold::DropPkts(t) => q.set_capacity(queue, t),
        }
        .map_err(|e| ControlError::Unsupported(format!("node `{node}` port {port}: {e}")))
    }
}
