#!/usr/bin/env bash
# rsp-rs (crates.io, MIT) through rsep bench's harness (benchmarks/peers/rsprs, our sources and
# Cargo.lock), built with cargo into benchmarks/.peers/rsprs/target. A benchmark dependency
# only: nothing of it is linked into rsep. Needs cargo/rustc (stable).
#
# rsp-rs depends on oxigraph 0.5 with its default features, RocksDB among them (C++, most of
# an hour on 2 shared cores), which it never uses: it only makes in-memory stores. The
# harness patches oxigraph (see its Cargo.toml) with oxigraph 0.5.13's own crates.io source,
# copied here into benchmarks/.peers/rsprs with `default = ["rocksdb"]` made `default = []`.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dest="$root/benchmarks/.peers/rsprs"
oxi="oxigraph-0.5.13"
command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup)" >&2; exit 1; }
mkdir -p "$dest"
if [ ! -f "$dest/$oxi/Cargo.toml" ]; then
  # the crate from crates.io through cargo's own download (a manifest that only depends on it)
  mkdir -p "$dest/fetch/src"
  printf '[package]\nname = "fetch-oxigraph"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\noxigraph = "=0.5.13"\n' \
    > "$dest/fetch/Cargo.toml"
  echo 'fn main() {}' > "$dest/fetch/src/main.rs"
  cargo fetch --manifest-path "$dest/fetch/Cargo.toml"
  reg="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$oxi" | head -1)"
  rm -rf "$dest/$oxi.part"
  cp -r "$reg" "$dest/$oxi.part"
  grep -q '^default = \["rocksdb"\]$' "$dest/$oxi.part/Cargo.toml" \
    || { echo "$oxi's Cargo.toml has no default = [\"rocksdb\"] line to change" >&2; exit 1; }
  sed -i 's/^default = \["rocksdb"\]$/default = []/' "$dest/$oxi.part/Cargo.toml"
  mv "$dest/$oxi.part" "$dest/$oxi"
fi
CARGO_TARGET_DIR="$dest/target" cargo build --release --locked -j "${RSPRS_JOBS:-2}" \
  --manifest-path "$root/benchmarks/peers/rsprs/Cargo.toml"
ls "$dest/target/release/rsep-bench-rsprs" >/dev/null
echo "rsp-rs $(sed -n '/^name = "rsp-rs"$/{n;s/^version = "\(.*\)"$/\1/p}' "$root/benchmarks/peers/rsprs/Cargo.lock") harness built in $dest"
