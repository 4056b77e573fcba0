#!/usr/bin/env bash
# The whole test suite: formatting, lints, and every test of every crate (unit, property,
# reproduction, CLI, doc tests). Tests are built optimised (see [profile.test]).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
