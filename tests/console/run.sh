#!/usr/bin/env bash
# The web console's browser tests: console.test.mjs drives Debian's Chromium (/usr/bin/chromium,
# or $CHROMIUM) with playwright-core against a real agentd process, the scripted fake model and
# an MCP fixture server. Usage: tests/console/run.sh
#
# Needs chromium (Debian package), npm with Node >= 18, Python >= 3.11 (tests/mcp/setup.sh) and
# the Rust toolchain. Reaches only the npm registry (first run, `npm ci` of package-lock.json);
# playwright-core downloads no browser. Screenshots and logs go to
# $AGENTD_TEST_ARTIFACTS/console (target/test-artifacts/console by default).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

chromium="${CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$chromium" ]]; then
  echo "tests/console/run.sh: $chromium not found (apt-get install chromium, or set CHROMIUM=...)" >&2
  exit 2
fi

# The MCP fixture servers' venv (idempotent).
"$repo/tests/mcp/setup.sh"

# playwright-core, pinned by package-lock.json; `npm ci` only when the pins changed.
stamp="$here/node_modules/.installed.sha256"
wanted="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$wanted" ]]; then
  (cd "$here" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$wanted" >"$stamp"
fi

cd "$repo"
cargo build --quiet --bin agentd --bin fake-provider
target_dir="$(cargo metadata --no-deps --format-version 1 |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')"
export AGENTD_BIN="$target_dir/debug/agentd"
export FAKE_PROVIDER_BIN="$target_dir/debug/fake-provider"
export CHROMIUM="$chromium"

exec node --test --test-concurrency=1 "$here/console.test.mjs"
