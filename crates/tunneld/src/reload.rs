//! What a reload (SIGHUP) may change while the session runs, worked out without I/O: the
//! daemon re-reads its configuration, [`plan`] compares it with the running one, and
//! [`crate::Daemon::reload`] applies the plan or, if it is refused, keeps running unchanged.
//!
//! The paths may change: added, removed, their roles, weights, remotes, local addresses and
//! interfaces. What the session or the device is made of may not (the role, the key and seal,
//! the transport, the scheduler and its parameters, the device, the timing, the metrics
//! address): changing one would end the session or the device, which a reload exists to
//! keep, so the reload is refused, naming the fields, and a restart applies them.
//!
//! A path is the same path across a reload when it keeps its name, and it must keep its wire
//! number (`id`, or its place in the file): the peer knows it by that number. Removing a path
//! from the middle of a file without `id`s renumbers those after it, so that is refused with
//! the advice to give the paths `id`s.

use crate::config::{Config, PathSpec, Transport};

/// What a reload changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Paths to remove, by wire number.
    pub removed: Vec<u8>,
    /// Paths to add.
    pub added: Vec<PathSpec>,
    /// Paths that stay but need a new socket (their local address or interface changed, or,
    /// on TCP, their remote): their counters and state go on.
    pub rebound: Vec<PathSpec>,
    /// Paths that stay on their socket with a new role or remote.
    pub updated: Vec<PathSpec>,
}

impl Plan {
    /// Whether the reload changes nothing.
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.added.is_empty() && self.rebound.is_empty() && self.updated.is_empty()
    }

    /// One line for the log: what changes, path by path.
    pub fn describe(&self, old: &Config) -> String {
        let name = |id: u8| {
            old.paths
                .iter()
                .find(|p| p.id == id)
                .map_or_else(|| format!("#{id}"), |p| p.name.clone())
        };
        let mut parts: Vec<String> = Vec::new();
        parts.extend(self.removed.iter().map(|&id| format!("path `{}` removed", name(id))));
        parts.extend(
            self.added
                .iter()
                .map(|p| format!("path `{}` added (id {})", p.name, p.id)),
        );
        parts.extend(self.rebound.iter().map(|p| format!("path `{}` rebound", p.name)));
        parts.extend(self.updated.iter().map(|p| format!("path `{}` updated", p.name)));
        match parts.is_empty() {
            true => "nothing changed".into(),
            false => parts.join(", "),
        }
    }
}

/// The fields that differ between `old` and `new` and that a reload cannot change.
fn fixed_fields_changed(old: &Config, new: &Config) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut check = |field, same: bool| {
        if !same {
            out.push(field);
        }
    };
    check("role", old.role == new.role);
    check("key", old.psk == new.psk);
    check("transport", old.transport == new.transport);
    check("scheduler", old.scheduler == new.scheduler);
    check("scheduler_params", old.scheduler_params == new.scheduler_params);
    check("metrics", old.metrics == new.metrics);
    check("device", old.device == new.device);
    check("timing", old.path_timing == new.path_timing);
    check("timing.reorder_capacity", old.reorder_capacity == new.reorder_capacity);
    check(
        "timing.reorder_timeout",
        old.reorder_timeout_ns == new.reorder_timeout_ns,
    );
    check("tcp", old.tcp == new.tcp);
    out
}

/// What reloading `new` over the running `old` changes, or why it may not be applied.
pub fn plan(old: &Config, new: &Config) -> Result<Plan, String> {
    let fixed = fixed_fields_changed(old, new);
    if !fixed.is_empty() {
        return Err(format!(
            "{} cannot change while the tunnel runs (restart the daemon to apply {})",
            fixed.join(", "),
            if fixed.len() == 1 { "it" } else { "them" }
        ));
    }
    let mut p = Plan::default();
    for o in &old.paths {
        match new.paths.iter().find(|n| n.name == o.name) {
            None => p.removed.push(o.id),
            Some(n) if n.id != o.id => {
                return Err(format!(
                    "path `{}` would change its wire number from {} to {} (the peer knows it by it): \
                     give every path an `id` to remove or reorder paths while the tunnel runs",
                    o.name, o.id, n.id
                ))
            }
            Some(n) if n == o => {}
            Some(n) => {
                let moved = n.local != o.local
                    || n.interface != o.interface
                    || (new.transport == Transport::Tcp && n.remote != o.remote);
                match moved {
                    true => p.rebound.push(n.clone()),
                    false => p.updated.push(n.clone()),
                }
            }
        }
    }
    for n in &new.paths {
        if old.paths.iter().any(|o| o.name == n.name) {
            continue;
        }
        // A new path may not take a removed one's number: the peer may still be sending on it
        // until it reloads too, and those datagrams would count as the new path's.
        if let Some(o) = old.paths.iter().find(|o| o.id == n.id) {
            return Err(format!(
                "path `{}` would take wire number {} from path `{}`, removed in the same reload: \
                 give it another `id`, or remove `{}` first and add `{}` in a later reload",
                n.name, n.id, o.name, o.name, n.name
            ));
        }
        p.added.push(n.clone());
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    fn config(paths: &str) -> Config {
        config_with("scheduler = \"rr\"", paths)
    }

    fn config_with(head: &str, paths: &str) -> Config {
        let t = format!(
            "role = \"initiator\"\nkey = \"{KEY}\"\n{head}\n[device]\nname = \"mpt0\"\naddress = \"10.99.0.1/30\"\n{paths}"
        );
        Config::parse(&t, "t.toml", Path::new(".")).unwrap()
    }

    fn path(name: &str, n: u8, extra: &str) -> String {
        format!("[[path]]\nname = \"{name}\"\nlocal = \"10.0.{n}.1:4789\"\nremote = \"10.0.{n}.2:4789\"\n{extra}\n")
    }

    #[test]
    fn the_same_file_changes_nothing() {
        let a = config(&(path("a", 1, "") + &path("b", 2, "")));
        let p = plan(&a, &config(&(path("a", 1, "") + &path("b", 2, "")))).unwrap();
        assert!(p.is_empty());
        assert_eq!(p.describe(&a), "nothing changed");
    }

    #[test]
    fn a_path_appended_is_added_and_a_role_is_updated_in_place() {
        let old = config(&(path("a", 1, "") + &path("b", 2, "")));
        let new = config(&(path("a", 1, "") + &path("b", 2, "role = \"backup\"") + &path("c", 3, "")));
        let p = plan(&old, &new).unwrap();
        assert_eq!(
            p.added.iter().map(|s| (s.name.as_str(), s.id)).collect::<Vec<_>>(),
            [("c", 2)]
        );
        assert_eq!(p.updated.len(), 1);
        assert!(p.updated[0].backup);
        assert!(p.removed.is_empty() && p.rebound.is_empty());
        assert_eq!(p.describe(&old), "path `c` added (id 2), path `b` updated");
    }

    #[test]
    fn a_weight_is_updated_in_place() {
        let old = config(&(path("a", 1, "") + &path("b", 2, "")));
        let p = plan(&old, &config(&(path("a", 1, "weight = 3") + &path("b", 2, "")))).unwrap();
        assert_eq!(
            p.updated
                .iter()
                .map(|s| (s.name.as_str(), s.weight))
                .collect::<Vec<_>>(),
            [("a", 3)]
        );
        assert!(p.added.is_empty() && p.removed.is_empty() && p.rebound.is_empty());
    }

    #[test]
    fn a_new_local_address_rebinds_and_a_udp_remote_does_not() {
        let old = config(&(path("a", 1, "") + &path("b", 2, "")));
        let moved = path("b", 2, "").replace("10.0.2.1:4789", "10.0.2.1:4790");
        let p = plan(&old, &config(&(path("a", 1, "") + &moved))).unwrap();
        assert_eq!(p.rebound.len(), 1);
        let roamed = path("b", 2, "").replace("10.0.2.2:4789", "10.0.9.2:4789");
        let p = plan(&old, &config(&(path("a", 1, "") + &roamed))).unwrap();
        assert_eq!((p.rebound.len(), p.updated.len()), (0, 1));
    }

    #[test]
    fn removing_a_middle_path_needs_ids_and_with_them_keeps_the_others_numbers() {
        let old = config(&(path("a", 1, "") + &path("b", 2, "") + &path("c", 3, "")));
        let e = plan(&old, &config(&(path("a", 1, "") + &path("c", 3, "")))).unwrap_err();
        assert!(e.contains("path `c` would change its wire number from 2 to 1"), "{e}");
        assert!(e.contains("`id`"), "{e}");
        let old = config(&(path("a", 1, "id = 0") + &path("b", 2, "id = 1") + &path("c", 3, "id = 2")));
        let new = config(&(path("a", 1, "id = 0") + &path("c", 3, "id = 2")));
        let p = plan(&old, &new).unwrap();
        assert_eq!(p.removed, [1]);
        assert!(p.added.is_empty() && p.updated.is_empty() && p.rebound.is_empty());
        // The last path of a file without ids can go: no other is renumbered.
        let old = config(&(path("a", 1, "") + &path("b", 2, "")));
        assert_eq!(plan(&old, &config(&path("a", 1, ""))).unwrap().removed, [1]);
    }

    #[test]
    fn a_new_path_may_not_take_a_removed_ones_number() {
        let old = config(&(path("a", 1, "") + &path("b", 2, "")));
        let e = plan(&old, &config(&(path("a", 1, "") + &path("z", 3, "")))).unwrap_err();
        assert!(e.contains("path `z` would take wire number 1 from path `b`"), "{e}");
    }

    #[test]
    fn what_the_session_is_made_of_is_refused_and_named() {
        let paths = path("a", 1, "");
        let old = config(&paths);
        let e = plan(
            &old,
            &config_with("scheduler = \"bond\"\nmetrics = \"127.0.0.1:9\"", &paths),
        )
        .unwrap_err();
        assert!(e.starts_with("scheduler, metrics cannot change"), "{e}");
        assert!(e.contains("restart the daemon to apply them"), "{e}");
    }
}
