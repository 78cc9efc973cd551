"""Local stand-ins for the web that agentd's built-in tools reach, for test_builtins.py.

- A SearxNG JSON API (`GET /search?q=...&format=json`, answering
  `{"results": [{"url", "title", "content", "publishedDate"?}]}`), the back end agentd's
  `web_search` uses when `AGENTD_SEARXNG_URL` is set. conftest.py starts it before agentd (the
  variable is read at startup) and points agentd at it, so `web_search` never reaches the
  internet and no test depends on agentd's local index.
  With `categories=images` it answers SearxNG's image results (`img_src`, the page `url`,
  `title`, `resolution` when known) for `image_search`.
- A page server for `fetch_url`: an HTML article wrapped in navigation and footer boilerplate,
  and a plain-text page; and a PNG that `image_search` measures.

Both are stdlib `http.server`s on 127.0.0.1 (agentd may reach loopback:
`AGENTD_ALLOW_PRIVATE_NETWORKS=127.0.0.0/8`), each in a daemon thread, and record every request
they get, so the tests can prove what agentd asked for (or that it asked nothing).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# --- the search service's answers ---------------------------------------------------------------

# SearxNG results by query text (`q`); any other query finds nothing. Non-ASCII on purpose.
SEARCH_RESULTS: dict[str, list[dict[str, str]]] = {
    "Rhein Basel": [
        {
            "url": "https://basel.example.org/rhein",
            "title": "Der Rhein in Basel",
            "content": "Der Rhein fließt mitten durch Basel – im Sommer schwimmt die halbe Stadt darin.",
            "publishedDate": "2025-05-15T00:00:00",
        },
        {
            "url": "https://lexikon.example.org/wiki/Rhein",
            "title": "Rhein – Lexikon",
            "content": "Der Rhein ist ein 1233 km langer Strom in Mitteleuropa.",
        },
    ],
    "Zürichsee Lage": [
        {
            "url": "https://zuerich.example.org/see",
            "title": "Zürichsee",
            "content": "Der Zürichsee liegt südöstlich der Stadt Zürich, auf 406 m ü. M.",
            "publishedDate": "2024-11-02",
        },
    ],
}

# SearxNG image results by query text (`categories=images`); `{pages}` is the page server's URL.
IMAGE_PATH = "/bilder/faehre.png"
IMAGE_SIZE = (320, 240)
IMAGE_RESULTS: dict[str, list[dict[str, str]]] = {
    "Fähre Horgen": [
        {
            "url": "https://zuerich.example.org/faehre",
            "title": "Die Fähre <b>Horgen–Meilen</b>",
            "img_src": "https://bilder.example.org/faehre-gross.jpg",
            "resolution": "1600 x 900",
            "img_format": "JPEG",
        },
        # No resolution: agentd reads the image (through the guard) to measure it.
        {"url": "https://zuerich.example.org/see", "title": "Zürichsee", "img_src": "{pages}" + IMAGE_PATH},
        # The metadata address: refused by the guard, never shown.
        {"url": "https://evil.example.org/", "title": "Metadaten", "img_src": "http://169.254.169.254/latest/x.png",
         "resolution": "1 x 1"},
    ],
}


def png(width: int, height: int) -> bytes:
    """A PNG header of that size (what a measuring read needs)."""
    return (
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"
        + width.to_bytes(4, "big")
        + height.to_bytes(4, "big")
        + bytes([8, 6, 0, 0, 0, 0, 0, 0, 0])
    )


# --- the page server's pages --------------------------------------------------------------------

ARTICLE_PATH = "/artikel/rheinschwimmen"
ARTICLE_TITLE = "Rheinschwimmen in Basel"
# Sentences of the article body that a cleaned page must keep.
ARTICLE_SENTENCES = [
    "Im Sommer lassen sich Tausende Baslerinnen und Basler im Wickelfisch den Rhein hinuntertreiben.",
    "Das Wasser ist im August oft über 22 °C warm.",
    "Einsteigen kann man beim Tinguely-Museum, aussteigen an den Treppen beim St. Johann.",
]
# Words that occur only in the boilerplate around the article.
ARTICLE_BOILERPLATE = ["Startseite", "Abonnieren", "Impressum"]
ARTICLE_HTML = f"""<!doctype html>
<html lang="de">
<head><meta charset="utf-8"><title>{ARTICLE_TITLE}</title></head>
<body>
<nav><a href="/">Startseite</a> | <a href="/ueber-uns">Über uns</a> | <a href="/abo">Abonnieren</a></nav>
<article>
<h1>{ARTICLE_TITLE}</h1>
<p>{ARTICLE_SENTENCES[0]} {ARTICLE_SENTENCES[1]}</p>
<p>{ARTICLE_SENTENCES[2]} Wer den Fluss nicht kennt, schwimmt besser mit Einheimischen.</p>
</article>
<footer>© 2025 Basler Rheinblatt · <a href="/impressum">Impressum</a></footer>
</body>
</html>
"""

NOTES_PATH = "/notizen.txt"
NOTES_TEXT = "Notizen zum Zürichsee: Die Fähre Horgen–Meilen fährt rund um die Uhr.\n"

PAGES: dict[str, tuple[str, str | bytes]] = {
    ARTICLE_PATH: ("text/html; charset=utf-8", ARTICLE_HTML),
    NOTES_PATH: ("text/plain; charset=utf-8", NOTES_TEXT),
    IMAGE_PATH: ("image/png", png(*IMAGE_SIZE)),
}


# --- the servers --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One request a local server received."""

    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]


# A route answers (status, content type, body) for a path and its query.
Answer = tuple[int, str, bytes]
Route = Callable[[str, dict[str, list[str]]], Answer]


class LocalServer:
    """A `ThreadingHTTPServer` on 127.0.0.1:0 answering GETs with `route`; records each request."""

    def __init__(self, route: Route) -> None:
        self._route = route
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                split = urlsplit(self.path)
                query = parse_qs(split.query, keep_blank_values=True)
                server._record(
                    Request(split.path, query, {k.lower(): v for k, v in self.headers.items()})
                )
                status, content_type, body = server._route(split.path, query)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the recorded requests are the log

        return Handler

    def _record(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)

    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)


def _json(status: int, value: object) -> Answer:
    return status, "application/json", json.dumps(value, ensure_ascii=False).encode()


def searxng_route(path: str, query: dict[str, list[str]], pages_url: str = "") -> Answer:
    """SearxNG's `/search`: JSON only when `format=json` is asked for (403 otherwise, as an
    instance without the JSON format answers); image results for `categories=images`."""
    if path != "/search":
        return _json(404, {"error": "not found"})
    if query.get("format") != ["json"]:
        return 403, "text/plain; charset=utf-8", b"Forbidden"
    text = query.get("q", [""])[0]
    if query.get("categories") == ["images"]:
        results = [
            {key: value.replace("{pages}", pages_url) for key, value in hit.items()}
            for hit in IMAGE_RESULTS.get(text, [])
        ]
        return _json(200, {"query": text, "number_of_results": len(results), "results": results})
    return _json(200, {"query": text, "number_of_results": 0, "results": SEARCH_RESULTS.get(text, [])})


def pages_route(path: str, query: dict[str, list[str]]) -> Answer:
    if path not in PAGES:
        return 404, "text/plain; charset=utf-8", b"no such page"
    content_type, body = PAGES[path]
    return 200, content_type, body if isinstance(body, bytes) else body.encode()


class WebServers:
    """The search service and the page server, started together."""

    def __init__(self) -> None:
        self.pages = LocalServer(pages_route)
        try:
            self.searxng = LocalServer(lambda path, query: searxng_route(path, query, self.pages.url))
        except BaseException:
            self.pages.close()
            raise

    @property
    def searxng_url(self) -> str:
        """The value for `AGENTD_SEARXNG_URL`."""
        return self.searxng.url

    def page_url(self, path: str) -> str:
        return self.pages.url + path

    def search_queries(self) -> list[str]:
        """The `q` of every search request received (in arrival order)."""
        return [q for request in self.searxng.requests() for q in request.query.get("q", [])]

    def page_hits(self, path: str) -> int:
        return sum(1 for request in self.pages.requests() if request.path == path)

    def reset(self) -> None:
        self.searxng.reset()
        self.pages.reset()

    def close(self) -> None:
        self.searxng.close()
        self.pages.close()
