#!/usr/bin/env bash
# Installs the npm reference MCP servers the tests start into .tools/npm (gitignored).
# Idempotent: a package is (re)installed only when its pinned version is missing.
# Entry points (see fixtures/README.md and fixtures/servers.py):
#   .tools/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js
#   .tools/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
#   .tools/npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/.tools/npm"
PACKAGES=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
)

installed_version() {
  local pkg_json="$DEST/node_modules/$1/package.json"
  if [[ -f "$pkg_json" ]]; then
    sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg_json" | head -n 1
  fi
}

missing=()
for spec in "${PACKAGES[@]}"; do
  name="${spec%@*}"
  version="${spec##*@}"
  if [[ "$(installed_version "$name")" != "$version" ]]; then
    missing+=("$spec")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "npm-setup: reference servers already in $DEST"
  exit 0
fi

mkdir -p "$DEST"
echo "npm-setup: installing ${missing[*]} into $DEST"
npm install --prefix "$DEST" --no-audit --no-fund --loglevel=error "${missing[@]}"
echo "npm-setup: ready"
