#!/usr/bin/env bash
# Installs FastMCP 4.1 into its own venv, .tools/fastmcp-venv (gitignored), for bench/proxy.py only.
# FastMCP is not a project dependency. Its `server` extra asks for certifi>=2026.10.19, newer than the
# package registry here serves, so fastmcp and fastmcp-slim go in with --no-deps and their requirements
# (base + client + server extras, read from the wheels' METADATA) are installed normally, certifi unpinned.
# Idempotent: nothing happens when the pinned version imports already.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.tools/fastmcp-venv"
SPEC="fastmcp==4.1.*"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3

if [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c \
  'import importlib.metadata as m, sys; import fastmcp.server; sys.exit(not m.version("fastmcp").startswith("4.1."))' \
  2>/dev/null; then
  echo "fastmcp-setup: fastmcp $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("fastmcp"))') already in $VENV"
  exit 0
fi

mkdir -p "$ROOT/.tools"
"$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --quiet)
"${PIP[@]}" install --upgrade pip packaging

WHEELS="$(mktemp -d)"
trap 'rm -rf "$WHEELS"' EXIT

# fastmcp is a meta-package: its wheel pins fastmcp-slim[client,server] at the same version.
"${PIP[@]}" download --no-deps "$SPEC" -d "$WHEELS"
VERSION="$(basename "$WHEELS"/fastmcp-*.whl | sed -n 's/^fastmcp-\([^-]*\)-.*/\1/p')"
"${PIP[@]}" download --no-deps "fastmcp-slim==$VERSION" -d "$WHEELS"

# requirements WHEEL EXTRAS...: the wheel's Requires-Dist that apply to this Python with these extras,
# extras stripped from the marker, certifi loosened to any version, fastmcp-slim itself left out.
requirements() {
  "$VENV/bin/python" - "$@" <<'PY'
import sys
import zipfile
from email.parser import Parser

from packaging.requirements import Requirement

wheel, extras = sys.argv[1], sys.argv[2:] or [""]
with zipfile.ZipFile(wheel) as zf:
    name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    meta = Parser().parsestr(zf.read(name).decode())
for line in meta.get_all("Requires-Dist") or []:
    req = Requirement(line)
    if req.name.startswith("fastmcp"):
        continue
    if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in extras):
        continue
    if req.name == "certifi":
        print("certifi")  # the registry's newest is older than the pin: any certifi works for a local proxy
        continue
    req.marker = None
    print(str(req))
PY
}

mapfile -t DEPS < <(requirements "$WHEELS"/fastmcp_slim-*.whl "" client server | sort -u)
echo "fastmcp-setup: installing fastmcp $VERSION (--no-deps) and ${#DEPS[@]} requirements into $VENV"
"${PIP[@]}" install "${DEPS[@]}"
"${PIP[@]}" install --no-deps "$WHEELS"/fastmcp_slim-*.whl "$WHEELS"/fastmcp-*.whl
"$VENV/bin/python" -c 'import fastmcp.server; print("fastmcp-setup: ready, fastmcp", fastmcp.__version__)'
