"""A recording reverse proxy in front of agentd: every client of the suite talks to agentd
through it, and it keeps the JSON of every API response body and every SSE event it forwarded,
so that `test_openresponses.py` can validate all of them against the Open Responses document.

It is a plain HTTP/1.1 proxy on loopback (stdlib `http.server`, one thread per connection):
the request goes to agentd unchanged (a new upstream connection per request), and the answer
comes back as it arrives: a streamed body (SSE) is relayed chunk by chunk, so clients see events
as agentd writes them. Only bodies under `/v1/responses` and `/v1/agent` are recorded.
"""

from __future__ import annotations

import http.client
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

# Hop-by-hop headers (RFC 9110 §7.6.1) and the framing this proxy chooses itself.
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
}

RECORDED_PREFIXES = ("/v1/responses", "/v1/agent")


@dataclass
class Exchange:
    """One request through the proxy and what agentd answered."""

    test: str  # the pytest node id of the test that was running
    method: str
    path: str
    status: int
    content_type: str
    request: Any = None  # the request's JSON body (None when it had none)
    body: Any = None  # the JSON body (None for a stream or a non-JSON body)
    events: list[Any] = field(default_factory=list)  # the SSE events' JSON data, in order


def parse_sse(raw: bytes) -> list[Any]:
    """The JSON `data` of each event of an SSE body (`[DONE]` and comments left out)."""
    events = []
    # The text after the last blank line is an unfinished event (a stream cut short) or nothing.
    for block in raw.decode("utf-8").replace("\r\n", "\n").split("\n\n")[:-1]:
        data = "\n".join(
            line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")
        )
        if data and data != "[DONE]":
            events.append(json.loads(data))
    return events


class Recordings:
    """What every proxy of the session recorded, and the test running now (set by conftest)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []
        self._errors: list[str] = []
        self.current_test = ""

    def add(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)

    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)

    def add_error(self, error: str) -> None:
        with self._lock:
            self._errors.append(error)

    def errors(self) -> list[str]:
        """What went wrong inside a proxy (a body that would not parse, …): test_openresponses.py
        fails on any, since the proxy's own errors reach no client."""
        with self._lock:
            return list(self._errors)


# The session's recordings: every agentd the suite starts (conftest.start_agentd) records here.
RECORDINGS = Recordings()


class RecordingProxy:
    """Forwards `http://127.0.0.1:<port>` to `upstream` and records the API's answers."""

    def __init__(self, upstream: str, recordings: Recordings = RECORDINGS) -> None:
        parts = urlsplit(upstream)
        assert parts.hostname and parts.port, upstream
        self._upstream = (parts.hostname, parts.port)
        self._recordings = recordings
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                proxy._forward(self)

            do_POST = do_GET
            do_DELETE = do_GET
            do_PUT = do_GET
            do_PATCH = do_GET
            do_HEAD = do_GET
            do_OPTIONS = do_GET

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _read_request_body(self, handler: BaseHTTPRequestHandler) -> bytes:
        if handler.headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(handler.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += handler.rfile.read(size)
                handler.rfile.readline()
        length = int(handler.headers.get("content-length") or 0)
        return handler.rfile.read(length) if length else b""

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        body = self._read_request_body(handler)
        exchange = self._exchange(handler, body)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Host"] = "%s:%d" % self._upstream
        if body or handler.command in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection(*self._upstream, timeout=300)
        try:
            upstream.request(handler.command, handler.path, body=body, headers=headers)
            response = upstream.getresponse()
            self._relay(handler, response, exchange)
        except Exception as err:
            self._recordings.add_error(f"{self._recordings.current_test}: {handler.command} {handler.path}: {err!r}")
            raise
        finally:
            upstream.close()

    def _exchange(self, handler: BaseHTTPRequestHandler, body: bytes) -> Exchange | None:
        """The record of this request, already in the recordings (None when not recorded)."""
        if not handler.path.split("?")[0].startswith(RECORDED_PREFIXES):
            return None
        exchange = Exchange(self._recordings.current_test, handler.command, handler.path, 0, "")
        if body and handler.headers.get("content-type", "").startswith("application/json"):
            try:
                exchange.request = json.loads(body)
            except ValueError:
                exchange.request = None  # a test of malformed bodies
        self._recordings.add(exchange)
        return exchange

    def _relay(
        self, handler: BaseHTTPRequestHandler, response: http.client.HTTPResponse, exchange: Exchange | None
    ) -> None:
        """Relays the answer. What is recorded is recorded before the client gets it, so a test
        reading the recordings after its client returned finds everything."""
        content_type = response.getheader("content-type", "")
        if exchange is not None:
            exchange.status = response.status
            exchange.content_type = content_type
        handler.send_response_only(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in _HOP_BY_HOP:
                handler.send_header(name, value)
        if handler.command == "HEAD" or response.status in (204, 304):
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        elif content_type.startswith("text/event-stream"):
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            pending = b""
            try:
                while chunk := response.read1(65536):
                    if exchange is not None:
                        # Complete events (a blank line ends each) are recorded as they pass.
                        pending += chunk.replace(b"\r\n", b"\n")
                        complete, _, pending = pending.rpartition(b"\n\n")
                        if complete:
                            exchange.events.extend(parse_sse(complete + b"\n\n"))
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    handler.wfile.flush()
                handler.wfile.write(b"0\r\n\r\n")
                handler.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                # The client went away: so does the upstream connection (closed by the caller).
                handler.close_connection = True
        else:
            received = response.read()
            if exchange is not None and content_type.startswith("application/json") and received:
                exchange.body = json.loads(received)
            handler.send_header("Content-Length", str(len(received)))
            handler.end_headers()
            handler.wfile.write(received)
            handler.wfile.flush()
