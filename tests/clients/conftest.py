"""Client test suite: the official SDKs (`perplexityai`, `openai`) against a real `agentd`.

Session fixtures start two processes built by `cargo build --bin agentd --bin fake-provider`:

- `fake-provider` (crates/testkit/src/bin/fake_provider.rs): the scripted OpenAI Chat
  Completions fake, with a control API (`POST /script`, `GET /requests`, `POST /reset`, ...).
- `agentd serve --listen 127.0.0.1:0 --data-dir <tmp>` with `OPENAI_API_KEY` and
  `OPENAI_BASE_URL` pointing at the fake, so the model id `openai/<anything>` reaches it, and
  `AGENTD_ALLOW_PRIVATE_NETWORKS=127.0.0.0/8`, so it may reach the MCP fixture servers on loopback
  (the `mcp_servers` fixture starts them, see mcp_servers.py), and `AGENTD_SEARXNG_URL` pointing
  at a local SearxNG-shaped server (web_servers.py, started first), so `web_search` never
  reaches the internet; the `web` fixture gives tests that server and a page server for `fetch_url`.

Clients do not reach agentd directly: each agentd gets a recording reverse proxy in front
(recorder.py), whose URL is `Agentd.url`; it keeps every response body and SSE event, which
`test_openresponses.py` validates at the end of the session against the Open Responses document.

Both print `listening on http://ADDR` on stdout; stdout and stderr go to files in the session's
temporary directory (agentd's stderr is read by the no-secret-in-logs test). Tests share the
two processes and run one at a time; the `fake` fixture resets the fake provider before each
test.

Binaries are found through `AGENTD_BIN` / `FAKE_PROVIDER_BIN`, else `$CARGO_TARGET_DIR/debug`,
else `<repo>/target/debug` (run.sh sets the variables from `cargo metadata`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import openai
import perplexity
import pytest

from mcp_servers import McpServers
from recorder import RECORDINGS, RecordingProxy
from web_servers import WebServers

REPO_ROOT = Path(__file__).resolve().parents[2]

# Everything here talks to loopback: keep a proxy configured on the machine out of the way
# (httpx, and so both SDKs, and agentd's reqwest honour the proxy variables).
_NO_PROXY = ",".join(filter(None, ["127.0.0.1,localhost", os.environ.get("NO_PROXY")]))
os.environ["NO_PROXY"] = os.environ["no_proxy"] = _NO_PROXY

# The upstream key agentd is configured with; it must never appear in logs or bodies.
PROVIDER_KEY = "sk-fake-provider-secret-for-clients"

# Any model id under the `openai/` provider reaches the fake provider.
MODEL = "openai/gpt-fake"

# Generous for a debug build on a busy 2-core machine, small enough to fail fast on a hang.
START_TIMEOUT_S = 60.0
CLIENT_TIMEOUT_S = 60.0


def _binary(env_var: str, name: str) -> Path:
    if os.environ.get(env_var):
        path = Path(os.environ[env_var])
    else:
        target = os.environ.get("CARGO_TARGET_DIR") or str(REPO_ROOT / "target")
        path = Path(target) / "debug" / name
    if not path.is_file():
        pytest.exit(
            f"{path} not found: build it with `cargo build --bin agentd --bin fake-provider` "
            f"(or set {env_var})",
            returncode=2,
        )
    return path


def agentd_bin() -> Path:
    return _binary("AGENTD_BIN", "agentd")


def fake_provider_bin() -> Path:
    return _binary("FAKE_PROVIDER_BIN", "fake-provider")


@dataclass
class Process:
    """A child process whose stdout and stderr go to files."""

    name: str
    popen: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path
    _files: list[Any] = field(default_factory=list)

    @classmethod
    def spawn(cls, name: str, argv: list[str], logs: Path, env: dict[str, str]) -> Process:
        stdout_path = logs / f"{name}.stdout"
        stderr_path = logs / f"{name}.stderr"
        stdout = stdout_path.open("wb")
        stderr = stderr_path.open("wb")
        popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env, cwd=logs
        )
        return cls(name, popen, stdout_path, stderr_path, [stdout, stderr])

    def wait_for_line(self, pattern: str) -> re.Match[str]:
        """Waits until stdout has a line matching `pattern`."""
        regex = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            match = regex.search(self.stdout_path.read_text(errors="replace"))
            if match:
                return match
            if self.popen.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(
            f"{self.name} did not print /{pattern}/ (exit {self.popen.returncode}).\n"
            f"stdout:\n{self.stdout_path.read_text(errors='replace')}\n"
            f"stderr:\n{self.stderr_path.read_text(errors='replace')[-4000:]}"
        )

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        for f in self._files:
            f.close()
        self._files.clear()


def wait_healthy(url: str, process: Process) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    last: object = None
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            break
        try:
            response = httpx.get(f"{url}/health", timeout=2)
            if response.status_code == 200 and response.json() == {"status": "ok"}:
                return
            last = f"{response.status_code} {response.text}"
        except httpx.HTTPError as err:
            last = err
        time.sleep(0.1)
    process.stop()
    raise RuntimeError(
        f"{process.name} never became healthy ({last}); stderr:\n"
        f"{process.stderr_path.read_text(errors='replace')[-4000:]}"
    )


class FakeProvider:
    """The running `fake-provider` and its control API."""

    def __init__(self, process: Process, base_url: str, control_url: str) -> None:
        self.process = process
        self.base_url = base_url  # the value for OPENAI_BASE_URL (ends in /v1)
        self.control_url = control_url
        self._http = httpx.Client(base_url=control_url, timeout=10)

    def script(self, *replies: dict[str, Any]) -> None:
        """Queues replies, one per upstream request, e.g. `{"text": "Hi"}`."""
        response = self._http.post("/script", json=list(replies))
        assert response.status_code == 200, response.text

    def requests(self) -> list[dict[str, Any]]:
        """Upstream model-turn request bodies (in their wire API's JSON) since the last reset."""
        return self._http.get("/requests").raise_for_status().json()

    def headers(self) -> list[dict[str, str]]:
        return self._http.get("/headers").raise_for_status().json()

    def pending(self) -> int:
        return self._http.get("/pending").raise_for_status().json()["pending_replies"]

    def reset(self) -> None:
        self._http.post("/reset").raise_for_status()

    def assert_all_used(self) -> None:
        assert self.pending() == 0, "some scripted replies were never requested"

    def close(self) -> None:
        self._http.close()
        self.process.stop()


@dataclass
class Agentd:
    """A running `agentd serve` and the recording proxy in front of it."""

    process: Process
    url: str  # the proxy's URL: what clients use
    data_dir: Path
    direct_url: str  # agentd's own address
    proxy: RecordingProxy

    @property
    def stderr_path(self) -> Path:
        return self.process.stderr_path

    def stop(self) -> None:
        self.process.stop()
        self.proxy.close()


def provider_env(fake: FakeProvider) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        # Only the provider under test: a developer's real keys must not configure others.
        if not key.endswith("_API_KEY") and not key.endswith("_BASE_URL") and not key.startswith("AGENTD_")
    }
    origin = fake.base_url.removesuffix("/v1")
    env.update(
        OPENAI_API_KEY=PROVIDER_KEY,
        OPENAI_BASE_URL=fake.base_url,
        # The fake speaks every wire API by route: Anthropic Messages and Gemini too.
        ANTHROPIC_API_KEY=PROVIDER_KEY,
        ANTHROPIC_BASE_URL=origin,
        GEMINI_API_KEY=PROVIDER_KEY,
        GEMINI_BASE_URL=origin,
        # Debug logging, so the no-secret-in-logs test covers more than the default level.
        RUST_LOG=os.environ.get("RUST_LOG", "debug"),
        NO_COLOR="1",
        # The MCP fixture servers listen on loopback, which agentd refuses to reach by default.
        AGENTD_ALLOW_PRIVATE_NETWORKS="127.0.0.0/8",
    )
    return env


def start_agentd(
    name: str, data_dir: Path, logs: Path, fake: FakeProvider, extra_env: Mapping[str, str] | None = None
) -> Agentd:
    process = Process.spawn(
        name,
        [str(agentd_bin()), "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir)],
        logs,
        {**provider_env(fake), **(extra_env or {})},
    )
    url = "http://" + process.wait_for_line(r"^listening on http://(\S+)$").group(1)
    wait_healthy(url, process)
    proxy = RecordingProxy(url)
    return Agentd(process, proxy.url, data_dir, url, proxy)


@pytest.fixture(scope="session")
def logs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("logs")


@pytest.fixture(scope="session")
def fake_provider(logs_dir: Path) -> Iterator[FakeProvider]:
    process = Process.spawn("fake-provider", [str(fake_provider_bin())], logs_dir, dict(os.environ))
    process.wait_for_line(r"^listening on http://\S+$")
    base_url = process.wait_for_line(r"^base_url (\S+)$").group(1)
    control_url = process.wait_for_line(r"^control_url (\S+)$").group(1)
    fake = FakeProvider(process, base_url, control_url)
    yield fake
    fake.close()


@pytest.fixture
def fake(fake_provider: FakeProvider) -> FakeProvider:
    """The fake provider, reset: no recorded requests, no queued replies."""
    fake_provider.reset()
    return fake_provider


@pytest.fixture(scope="session")
def web_servers() -> Iterator[WebServers]:
    """The SearxNG-shaped search service and the page server (web_servers.py). agentd reads
    `AGENTD_SEARXNG_URL` at startup, so they start before it."""
    servers = WebServers()
    yield servers
    servers.close()


@pytest.fixture
def web(web_servers: WebServers) -> WebServers:
    """The local search service and page server, with their request logs cleared."""
    web_servers.reset()
    return web_servers


@pytest.fixture(scope="session")
def agentd(
    tmp_path_factory: pytest.TempPathFactory,
    logs_dir: Path,
    fake_provider: FakeProvider,
    web_servers: WebServers,
) -> Iterator[Agentd]:
    # `web_search` goes to the local SearxNG stand-in (no test uses agentd's local index).
    server = start_agentd(
        "agentd",
        tmp_path_factory.mktemp("agentd-data"),
        logs_dir,
        fake_provider,
        extra_env={"AGENTD_SEARXNG_URL": web_servers.searxng_url},
    )
    yield server
    server.stop()


# Clients. Retries are off: a retried request would consume the next scripted reply.


@pytest.fixture(scope="session")
def pplx(agentd: Agentd) -> Iterator[perplexity.Perplexity]:
    # The SDK posts to "/v1/responses" itself, so its base URL is the server root.
    client = perplexity.Perplexity(
        base_url=agentd.url, api_key="any", max_retries=0, timeout=CLIENT_TIMEOUT_S
    )
    yield client
    client.close()


@pytest.fixture(scope="session")
def oai(agentd: Agentd) -> Iterator[openai.OpenAI]:
    # The OpenAI SDK appends "/responses" to its base URL, which therefore ends in /v1.
    client = openai.OpenAI(
        base_url=agentd.url + "/v1", api_key="any", max_retries=0, timeout=CLIENT_TIMEOUT_S
    )
    yield client
    client.close()


# The same clients with `_strict_response_validation=True`: the SDK validates every response and
# event against its types and raises `APIResponseValidationError` on a missing or mistyped field
# (by default both SDKs construct their models without validation).


@pytest.fixture(scope="session")
def strict_pplx(agentd: Agentd) -> Iterator[perplexity.Perplexity]:
    client = perplexity.Perplexity(
        base_url=agentd.url,
        api_key="any",
        max_retries=0,
        timeout=CLIENT_TIMEOUT_S,
        _strict_response_validation=True,
    )
    yield client
    client.close()


@pytest.fixture(scope="session")
def strict_oai(agentd: Agentd) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(
        base_url=agentd.url + "/v1",
        api_key="any",
        max_retries=0,
        timeout=CLIENT_TIMEOUT_S,
        _strict_response_validation=True,
    )
    yield client
    client.close()


@pytest.fixture(scope="session")
def http(agentd: Agentd) -> Iterator[httpx.Client]:
    """Plain HTTP against agentd, for what the SDKs do not expose (raw bodies, aliases)."""
    client = httpx.Client(base_url=agentd.url, timeout=CLIENT_TIMEOUT_S)
    yield client
    client.close()


T = TypeVar("T")
# Runs `body(client)` with an `AsyncOpenAI` client on agentd (see `with_async_oai`).
WithAsyncOpenAI = Callable[[Callable[[openai.AsyncOpenAI], Awaitable[Any]]], Any]


@pytest.fixture
def with_async_oai(agentd: Agentd) -> WithAsyncOpenAI:
    """For the async frameworks: runs `body(client)` in a fresh event loop with an `AsyncOpenAI`
    client on agentd, closed in that same loop (a client outlives no loop)."""

    def run(body: Callable[[openai.AsyncOpenAI], Awaitable[T]]) -> T:
        async def main() -> T:
            async with openai.AsyncOpenAI(
                base_url=agentd.url + "/v1", api_key="any", max_retries=0, timeout=CLIENT_TIMEOUT_S
            ) as client:
                return await body(client)

        return asyncio.run(main())

    return run


@pytest.fixture
def mcp_servers(tmp_path: Path) -> Iterator[McpServers]:
    """Starts MCP fixture servers (`mcp_servers.start("basic")`); all are stopped after the test."""
    servers = McpServers(tmp_path)
    yield servers
    servers.close()


@pytest.fixture(autouse=True)
def _record_test_name(request: pytest.FixtureRequest) -> None:
    """Labels what the recording proxies record with the test that caused it."""
    RECORDINGS.current_test = request.node.nodeid


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "last: run after every other test (checks what the whole session left behind)"
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    """With `AGENTD_RECORDINGS=<file>`, writes what the recording proxies saw (one JSON object
    per request: the test, method, path, request body, status, response body or events)."""
    target = os.environ.get("AGENTD_RECORDINGS")
    if target:
        with open(target, "w") as out:
            for exchange in RECORDINGS.exchanges():
                out.write(json.dumps(dataclasses.asdict(exchange)) + "\n")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("last") is not None)
