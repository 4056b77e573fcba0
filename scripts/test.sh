#!/usr/bin/env bash
# The whole test suite: formatting, lints, every test of every crate (unit, property,
# reproduction, CLI, doc tests; built optimised, see [profile.test]), then the Python
# package's tests (pytest, python/tests) against the release `mpsched` built from this checkout,
# the package rebuilt into the virtual environment scripts/install-deps.sh made (.venv, or
# MPSCHED_VENV).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
venv=${MPSCHED_VENV:-$PWD/.venv}
if [ ! -x "$venv/bin/python" ]; then
  echo "no Python virtual environment at $venv: run scripts/install-deps.sh first" >&2
  exit 1
fi
cargo build --release --locked -p mpsched-cli
"$venv/bin/pip" install -q ./python
MPSCHED_BIN=$PWD/target/release/mpsched "$venv/bin/python" -m pytest -q python/tests
