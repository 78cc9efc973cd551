#!/usr/bin/env bash
# Installs what the MCP fixture servers need, into gitignored directories beside this script:
#   .venv          Python (>= 3.11) with the official `mcp` package, pinned in requirements.txt
#                  (runs fixtures.py)
#   node_modules   @modelcontextprotocol/server-everything, pinned in package.json and
#                  package-lock.json (installed with `npm ci`)
#
# Idempotent: a stamp in each directory records the hash of what was installed, so a second run
# does nothing and prints nothing. Safe to run from several test processes at once (flock).
# Needs Python >= 3.11 with venv (set PYTHON=... to choose one) and npm; reaches only PyPI and
# the npm registry, and only on the first run or after the pins changed.
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

# --- Node: node_modules with server-everything -------------------------------------------------
if ! command -v npm >/dev/null 2>&1; then
  echo "tests/mcp/setup.sh: needs node and npm (apt-get install nodejs npm)" >&2
  exit 2
fi
node_stamp="$here/node_modules/.setup.sha256"
node_wanted="$(cat "$here/package.json" "$here/package-lock.json" 2>/dev/null | sha256sum | cut -d' ' -f1)"
everything="$here/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [[ "$(cat "$node_stamp" 2>/dev/null || true)" != "$node_wanted" || ! -f "$everything" ]]; then
  if [[ -f "$here/package-lock.json" ]]; then
    npm ci --no-audit --no-fund --loglevel=error >&2
  else
    npm install --no-audit --no-fund --loglevel=error >&2
    # The lock file was just written: hash what will be there from now on.
    node_wanted="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
  fi
  test -f "$everything"
  echo "$node_wanted" >"$node_stamp"
fi
