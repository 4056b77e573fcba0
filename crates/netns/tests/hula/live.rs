//! The live test: a k = 4 fat tree of `mphula` switches with kernel MPTCP.

pub fn mphula_puts_two_subflows_on_different_uplinks() {}
