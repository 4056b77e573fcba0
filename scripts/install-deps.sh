#!/usr/bin/env bash
# Install everything mpsched needs on a fresh Debian 12 machine: the Rust toolchain (stable, with
# clippy and rustfmt), a C toolchain and fontconfig for the plots, and the tools the real data
# plane uses (clang, libbpf headers, libelf and zlib for the vendored libbpf, bpftool, iproute2,
# ethtool, iperf3, and mptcpize to run iperf3 over kernel MPTCP), tshark to read captures (its
# dumpcap captures on the kernel backend) and python3 (scripts/bench-peers.py).
set -euo pipefail
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends \
  build-essential pkg-config ca-certificates curl git \
  libfontconfig1-dev fonts-dejavu-core \
  clang llvm libbpf-dev libelf-dev zlib1g-dev bpftool iproute2 ethtool iperf3 mptcpize tshark python3 >/dev/null
if ! command -v cargo >/dev/null 2>&1; then
  if [ ! -x "$HOME/.cargo/bin/cargo" ]; then
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  fi
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if command -v rustup >/dev/null 2>&1; then
  rustup component add clippy rustfmt >/dev/null 2>&1 || true
fi
cargo --version
