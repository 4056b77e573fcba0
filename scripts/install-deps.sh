#!/usr/bin/env bash
# Install everything mpsched needs on a fresh Debian 12 machine: the Rust toolchain (stable, with
# clippy and rustfmt), a C toolchain and fontconfig for the plots, and the tools the real data
# plane uses (clang, libbpf headers, libelf and zlib for the vendored libbpf, bpftool, iproute2,
# ethtool, iperf3, and mptcpize to run iperf3 over kernel MPTCP), tshark to read captures (its
# dumpcap captures on the kernel backend), python3 (scripts/bench-peers.py) and systemd
# (systemd-analyze checks the tunnel's unit, examples/tunnel/); then the P4
# toolchain (BMv2's simple_switch and p4c-bm2-ss), see install_p4 below; then the Python package
# (`import mpsched`, python/) in a virtual environment, .venv (MPSCHED_VENV to name another),
# see install_python below.
set -euo pipefail
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends \
  build-essential pkg-config ca-certificates curl git \
  libfontconfig1-dev fonts-dejavu-core \
  clang llvm libbpf-dev libelf-dev zlib1g-dev bpftool iproute2 ethtool iperf3 mptcpize tshark python3 python3-venv systemd >/dev/null
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

# The P4 toolchain: one already on PATH or in /opt/p4 (MPSCHED_P4_PREFIX to name another) is
# used; otherwise it is built into /opt/p4 from the offline sources of ../shared/p4 (about 45
# minutes on two cores, once per machine; MPSCHED_P4_SOURCES names another folder); otherwise
# the P4 parts are left out, with how to get the tools. mpsched's build compiles p4/ when it
# finds p4c-bm2-ss in the same places.
install_p4() {
  local prefix=${MPSCHED_P4_PREFIX:-/opt/p4}
  local here sources
  here=$(cd "$(dirname "$0")/.." && pwd)
  if { command -v simple_switch && command -v p4c-bm2-ss; } >/dev/null 2>&1 \
     || { [ -x "$prefix/bin/simple_switch" ] && [ -x "$prefix/bin/p4c-bm2-ss" ]; }; then
    # BMv2's CLI runs on Debian's python3 with python3-thrift; simple_switch needs its libraries.
    $sudo apt-get install -y -qq --no-install-recommends python3-thrift libthrift-0.17.0 \
      libnanomsg5 libpcap0.8 libgmp10 libjsoncpp25 libxxhash0 libboost-program-options1.74.0 libboost-filesystem1.74.0 \
      libboost-thread1.74.0 >/dev/null
    echo "P4 toolchain: $(command -v p4c-bm2-ss || echo "$prefix/bin/p4c-bm2-ss")"
    return
  fi
  for sources in "${MPSCHED_P4_SOURCES:-}" "$here/../shared/p4" /work/shared/p4; do
    if [ -n "$sources" ] && [ -x "$sources/build-toolchain.sh" ]; then
      echo "building the P4 toolchain into $prefix from $sources (45 to 60 minutes on two cores, once)"
      $sudo bash "$sources/build-toolchain.sh" "$prefix"
      return
    fi
  done
  echo "P4 toolchain not found and no sources to build it: the BMv2 parts of mpsched are left out." >&2
  echo "  To add them, install BMv2 (simple_switch, simple_switch_CLI) and p4c (p4c-bm2-ss) from" >&2
  echo "  p4lang's packages or a source build (github.com/p4lang/behavioral-model, github.com/p4lang/p4c)," >&2
  echo "  put them on PATH or in /opt/p4/bin, and rebuild mpsched." >&2
}
install_p4

# The Python package: a virtual environment with maturin, pandas, pytest, tqdm, Ray, matplotlib,
# nbconvert and ipykernel (the examples), and mpsched built
# from python/ (release, abi3) and installed into it. `source .venv/bin/activate`, then
# `import mpsched` (docs/python.md).
install_python() {
  local here venv
  here=$(cd "$(dirname "$0")/.." && pwd)
  venv=${MPSCHED_VENV:-$here/.venv}
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install -q --upgrade pip >/dev/null
  "$venv/bin/pip" install -q "maturin>=1.5,<2" "pandas>=1.5" "pytest>=7" "tqdm>=4" "ray>=2.9" \
    matplotlib nbconvert ipykernel
  "$venv/bin/pip" install -q "$here/python"
  echo "Python package: $("$venv/bin/python" -c 'import mpsched; print("mpsched", mpsched.__version__, "in", mpsched.__file__)')"
}
install_python
