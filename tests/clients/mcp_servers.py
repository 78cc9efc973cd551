"""MCP fixture servers (`tests/mcp/fixtures.py`, the official Python `mcp` package) as child
processes of the test session, for the MCP client tests.

`tests/mcp/setup.sh` creates the venv they run in (`tests/mcp/.venv`; run.sh calls it). A
server binds 127.0.0.1:0 itself and writes its port to a file once it serves; every HTTP request,
`tools/list` and `tools/call` it sees is appended to a JSON-lines log, which the tests read to
prove what agentd did (or did not) send.

Kinds (see the docstring of fixtures.py): basic, auth, annotated, failing, many, changing, broken.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES_PY = REPO_ROOT / "tests" / "mcp" / "fixtures.py"
FIXTURES_PYTHON = REPO_ROOT / "tests" / "mcp" / ".venv" / "bin" / "python"

# Importing the `mcp` package and starting uvicorn takes a few seconds on a busy 2-core machine.
READY_TIMEOUT_S = 60.0

Transport = Literal["streamable-http", "sse"]


@dataclass
class McpServer:
    """One running fixture server and its event log."""

    kind: str
    url: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    stderr_path: Path
    _files: list[Any] = field(default_factory=list)

    def events(self) -> list[dict[str, Any]]:
        """Every event logged so far, in order."""
        if not self.log_path.exists():
            return []
        lines = self.log_path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        """The `tools/call` requests received: (tool name, arguments)."""
        return [(event["tool"], event["arguments"]) for event in self.events() if event["event"] == "call"]

    def requests(self) -> list[dict[str, Any]]:
        """The HTTP requests received: method, path, authorization, `x-*` headers."""
        return [event for event in self.events() if event["event"] == "request"]

    def list_count(self) -> int:
        """How many `tools/list` requests (pages included) the server answered."""
        return sum(1 for event in self.events() if event["event"] == "list_tools")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        for f in self._files:
            f.close()
        self._files.clear()


class McpServers:
    """Starts fixture servers in a directory and stops every one of them at `close()`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._servers: list[McpServer] = []

    def start(
        self, kind: str, transport: Transport = "streamable-http", token: str | None = None
    ) -> McpServer:
        """Starts `fixtures.py KIND` and waits until it serves; `token` guards it with a bearer token."""
        if not FIXTURES_PYTHON.is_file():
            raise RuntimeError(f"{FIXTURES_PYTHON} is missing: run tests/mcp/setup.sh (run.sh does)")
        name = f"mcp-{kind}-{len(self._servers)}"
        port_file = self.directory / f"{name}.port"
        log_path = self.directory / f"{name}.jsonl"
        stderr_path = self.directory / f"{name}.stderr"
        argv = [
            str(FIXTURES_PYTHON),
            str(FIXTURES_PY),
            kind,
            "--transport",
            transport,
            "--port-file",
            str(port_file),
            "--log",
            str(log_path),
        ]
        if token is not None:
            argv += ["--token", token]
        stderr = stderr_path.open("wb")
        popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr, cwd=self.directory
        )
        path = "/sse" if transport == "sse" else "/mcp"
        server = McpServer(kind, "", popen, log_path, stderr_path, [stderr])
        self._servers.append(server)

        deadline = time.monotonic() + READY_TIMEOUT_S
        while not port_file.exists():
            if popen.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(
                    f"MCP fixture {kind} did not start (exit {popen.returncode}):\n"
                    f"{stderr_path.read_text(errors='replace')[-4000:]}"
                )
            time.sleep(0.05)
        port = int(port_file.read_text().strip())
        server.url = f"http://127.0.0.1:{port}{path}"
        return server

    def close(self) -> None:
        for server in self._servers:
            server.stop()
        self._servers.clear()
