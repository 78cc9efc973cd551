"""MCP fixture servers for agentd's integration tests, built on the official Python `mcp` SDK.

One entry point serves every kind over either HTTP transport, on 127.0.0.1 only:

    python fixtures.py KIND --transport streamable-http|sse --port-file PATH --log PATH [--token T]
                      [--extra-tools N] [--page-size N] [--token-lifetime SECONDS]

The server binds 127.0.0.1:0 itself, hands the listening socket to uvicorn (so no other process
can take the port in between) and, once uvicorn serves, writes the port number to --port-file
(atomically: the file appears complete). Endpoints: streamable HTTP at `/mcp`; SSE at `/sse`
with messages POSTed to `/messages/?session_id=...`.

Every event is appended to --log as one JSON line:

    {"event": "request", "method": "POST", "path": "/mcp",
     "authorization": "Bearer ..." | null, "headers": {"x-...": "..."}}   each HTTP request
    {"event": "list_tools", "cursor": null | "..."}                        each tools/list
    {"event": "call", "tool": "echo", "arguments": {...}}                   each tools/call

Kinds:
    basic      echo(text), add(a, b) (both read-only), slow(seconds)
    auth       the basic tools; needs --token
    oauth      the basic tools behind the SDK's own OAuth authorization server, on the same
               origin (MCP authorization spec): protected resource metadata, RFC 8414 metadata,
               dynamic registration, an authorization endpoint that approves at once (redirects
               to the client's redirect_uri with a code), PKCE, RFC 8707 resources (tokens are
               only accepted for this endpoint), rotating refresh tokens; scope `mcp:tools`;
               access tokens live --token-lifetime seconds (default 3600; the `expires_in` sent
               is --announced-lifetime when given, so a token can die before its announced
               expiry: the client sees a 401). Logs `authorize` {"scopes", "resource"},
               `token` {"grant_type"} and `issued` {"access_token", "refresh_token"} events.
               --refuse-refresh: every refresh token is refused (invalid_grant; logs
               `refresh_refused`), as when a user revoked the grant.
    annotated  get_weather(city), list_files(path) (read-only), delete_file(path) (destructive),
               send_email(to, subject, body) (not read-only)
    failing    explode(reason) (a tool error carrying the reason), ok()
    many       60 tools across topics, tools/list paginated 25 per page (low-level server)
    changing   mutate(), ping(); the first mutate() adds new_tool() and notifies tools/list_changed
    edge       results and errors of every shape (low-level server; tools/list unpaginated):
                 echo(message)  "Echo: <message>" (read-only; the only annotated tool but
                                change_tools, which is not read-only)
                 headers()      the request's x-* headers as a JSON object
                 fail()         a result with isError: "the tool failed on purpose"
                 slow(seconds)  sleeps (5 s by default), then "done"
                 big(bytes)     a text of `bytes` (default 1024) characters "x"
                 structured()   no content, only structuredContent {"answer": 42}
                 mixed()        a text block "caption" and a PNG image block
                 change_tools() sends notifications/tools/list_changed, then "changed" (the tool
                                list stays the same; SSE also advertises tools.listChanged)
                 leak()         a JSON-RPC error (-32000) "rejected credentials: ..." echoing the
                                request's Authorization and x-* headers, as a careless server might
    broken     not MCP: 200 with a JSON body that is no JSON-RPC answer, to every request

Options:
    --token T          (any kind) every HTTP request without `Authorization: Bearer T` gets a 401
                       with `WWW-Authenticate: Bearer`
    --extra-tools N    (many, edge) N more tools after the kind's own: tool_0000, tool_0001, ...
                       without parameters (in edge, a call answers with the tool's name)
    --page-size N      (many, edge) tools/list pages of N tools linked by nextCursor (the offset
                       of the next page); many pages 25 by default, edge answers in one page

The process exits by itself when its parent (the test process) goes away.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import uvicorn
from mcp import types
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.sse import SseServerTransport
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.shared.exceptions import MCPError
from pydantic import Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

PAGE_SIZE = 25
"""tools/list page size of the `many` kind (unless --page-size)."""

NO_PARAMETERS: dict[str, Any] = {"type": "object"}
"""The input schema of a tool without parameters."""


class EventLog:
    """Appends one JSON object per line to a file, flushed at once so a reader sees it."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (open for the process's life)

    def write(self, event: dict[str, Any]) -> None:
        self._file.write(json.dumps(event, sort_keys=True) + "\n")
        self._file.flush()


# --- logging and auth around every HTTP request -------------------------------------------------


class RequestLog:
    """ASGI middleware: logs each HTTP request and, when a token is set, answers 401 to any
    request without `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, log: EventLog, token: str | None) -> None:
        self.app = app
        self.log = log
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        authorization = headers.get("authorization")
        self.log.write(
            {
                "event": "request",
                "method": scope["method"],
                "path": scope["path"],
                "authorization": authorization,
                "headers": {k: v for k, v in headers.items() if k.startswith("x-")},
            }
        )
        if self.token is not None and authorization != f"Bearer {self.token}":
            response = JSONResponse(
                {"error": "unauthorized"}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def mcp_event_logger(log: EventLog) -> Callable[..., Awaitable[Any]]:
    """MCP server middleware (sees every JSON-RPC message): logs tools/list and tools/call."""

    async def middleware(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        params = ctx.params or {}
        if ctx.method == "tools/list":
            log.write({"event": "list_tools", "cursor": params.get("cursor")})
        elif ctx.method == "tools/call":
            log.write(
                {"event": "call", "tool": params.get("name"), "arguments": params.get("arguments") or {}}
            )
        return await call_next(ctx)

    return middleware


def advertise_tools_list_changed(ctx: Any, result: Any) -> Any:
    """Sets `capabilities.tools.listChanged` in an initialize result, which middleware sees in
    its wire form (MCPServer offers no switch for it)."""
    if ctx.method == "initialize" and isinstance(result, dict):
        result.setdefault("capabilities", {}).setdefault("tools", {})["listChanged"] = True
    return result


# --- the kinds ----------------------------------------------------------------------------------

READ_ONLY = types.ToolAnnotations(read_only_hint=True)


def add_basic_tools(server: MCPServer) -> None:
    @server.tool(description="Echo the given text back unchanged.", annotations=READ_ONLY)
    def echo(text: Annotated[str, Field(description="The text to send back.")]) -> str:
        return text

    @server.tool(description="Add two integers and return their sum.", annotations=READ_ONLY)
    def add(
        a: Annotated[int, Field(description="The first addend.")],
        b: Annotated[int, Field(description="The second addend.")],
    ) -> int:
        return a + b

    @server.tool(description="Wait for the given number of seconds, then answer 'done'.")
    async def slow(seconds: Annotated[float, Field(description="How long to wait, in seconds.")]) -> str:
        await asyncio.sleep(seconds)
        return "done"


def add_annotated_tools(server: MCPServer) -> None:
    @server.tool(description="Get the current weather for a city.", annotations=READ_ONLY)
    def get_weather(city: Annotated[str, Field(description="The city name, e.g. Paris.")]) -> str:
        return f"The weather in {city} is sunny, 21 degrees Celsius."

    @server.tool(description="List the files in a directory.", annotations=READ_ONLY)
    def list_files(path: Annotated[str, Field(description="The directory to list.")]) -> str:
        return f"Files in {path}: notes.txt, report.pdf"

    @server.tool(
        description="Delete a file permanently.",
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True),
    )
    def delete_file(path: Annotated[str, Field(description="The file to delete.")]) -> str:
        return f"Deleted {path}"

    @server.tool(
        description="Send an email message.",
        annotations=types.ToolAnnotations(read_only_hint=False),
    )
    def send_email(
        to: Annotated[str, Field(description="The recipient's address.")],
        subject: Annotated[str, Field(description="The subject line.")],
        body: Annotated[str, Field(description="The message text.")],
    ) -> str:
        return f"Sent email to {to} with subject {subject!r} and body {body!r}"


def add_failing_tools(server: MCPServer) -> None:
    @server.tool(description="Always fails with the given reason.")
    def explode(reason: Annotated[str, Field(description="The error message to fail with.")]) -> str:
        # ToolError is the SDK's "anticipated failure": the result is isError with this text.
        raise ToolError(reason)

    @server.tool(description="Always succeeds and answers 'fine'.", annotations=READ_ONLY)
    def ok() -> str:
        return "fine"


def add_changing_tools(server: MCPServer) -> None:
    def new_tool() -> str:
        return "new tool called"

    @server.tool(description="Answer 'pong'.", annotations=READ_ONLY)
    def ping() -> str:
        return "pong"

    @server.tool(description="Change this server's tool list: the first call adds new_tool.")
    async def mutate(ctx: Context) -> str:
        if any(tool.name == "new_tool" for tool in await server.list_tools()):
            return "already mutated"
        server.add_tool(new_tool, description="A tool that exists only after mutate() was called.")
        # Handshake-era clients get the notification on this call's response stream (so also a
        # client that opened no standalone GET stream); 2026-07-28 clients subscribe to it with
        # subscriptions/listen.
        await ctx.session.send_notification(
            types.ToolListChangedNotification(), related_request_id=ctx.request_id
        )
        await ctx.notify_tools_changed()
        return "mutated: new_tool added"


HIGH_LEVEL_KINDS: dict[str, Callable[[MCPServer], None]] = {
    "basic": add_basic_tools,
    "auth": add_basic_tools,
    "annotated": add_annotated_tools,
    "failing": add_failing_tools,
    "changing": add_changing_tools,
}


def high_level_app(kind: str, transport: str, log: EventLog) -> Starlette:
    server = MCPServer(f"agentd-fixture-{kind}", version="1.0.0", log_level="WARNING")
    HIGH_LEVEL_KINDS[kind](server)
    server.middleware.append(mcp_event_logger(log))
    if kind == "changing":

        async def list_changed_capability(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
            return advertise_tools_list_changed(ctx, await call_next(ctx))

        server.middleware.append(list_changed_capability)
    if transport == "sse":
        return server.sse_app()
    return server.streamable_http_app()


# --- oauth: the basic tools behind the SDK's OAuth authorization server --------------------------

OAUTH_SCOPE = "mcp:tools"


class AutoApprovingProvider:
    """An in-memory authorization server for the SDK's auth routes. The authorization endpoint
    approves at once; codes are single use; each refresh rotates the refresh token; access
    tokens carry the RFC 8707 resource they were asked for."""

    def __init__(
        self, log: EventLog, lifetime: int, announced: int | None = None, refuse_refresh: bool = False
    ) -> None:
        self.log = log
        self.lifetime = lifetime
        self.announced = lifetime if announced is None else announced
        self.refuse_refresh = refuse_refresh
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh_tokens: dict[str, RefreshToken] = {}
        self.access_tokens: dict[str, AccessToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        assert client.client_id is not None
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.log.write({"event": "authorize", "scopes": params.scopes, "resource": params.resource})
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        self.log.write({"event": "token", "grant_type": "authorization_code"})
        return self.issue(authorization_code.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        if self.refuse_refresh:
            self.log.write({"event": "refresh_refused"})
            return None
        token = self.refresh_tokens.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh_tokens[refresh_token.token]
        self.log.write({"event": "token", "grant_type": "refresh_token"})
        return self.issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access_tokens.get(token)
        if access is None or (access.expires_at is not None and access.expires_at < time.time()):
            return None
        return access

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access_tokens.pop(token.token, None)
        self.refresh_tokens.pop(token.token, None)

    def issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        self.access_tokens[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.lifetime,
            resource=resource,
        )
        self.refresh_tokens[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        self.log.write({"event": "issued", "access_token": access, "refresh_token": refresh})
        return OAuthToken(
            access_token=access,
            expires_in=self.announced,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )


def oauth_app(
    transport: str,
    log: EventLog,
    port: int,
    lifetime: int,
    announced: int | None = None,
    refuse_refresh: bool = False,
) -> Starlette:
    base = f"http://127.0.0.1:{port}"
    path = "/sse" if transport == "sse" else "/mcp"
    server = MCPServer(
        "agentd-fixture-oauth",
        version="1.0.0",
        log_level="WARNING",
        auth_server_provider=AutoApprovingProvider(log, lifetime, announced, refuse_refresh),
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}{path}",
            validate_token_resource=True,
            required_scopes=[OAUTH_SCOPE],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[OAUTH_SCOPE], default_scopes=[OAUTH_SCOPE]
            ),
        ),
    )
    add_basic_tools(server)
    server.middleware.append(mcp_event_logger(log))
    if transport == "sse":
        return server.sse_app()
    return server.streamable_http_app()


# --- many: 60 tools on the low-level server, paginated ------------------------------------------

# (name, description, read-only, [(parameter, JSON type, description)])
# fmt: off
MANY_TOOLS: list[tuple[str, str, bool, list[tuple[str, str, str]]]] = [
    ("weather_forecast", "Get the weather forecast (temperature, rain, wind) for a city for the next days.", True,
     [("city", "string", "City name, e.g. Berlin"), ("days", "integer", "Number of days to forecast, 1 to 7")]),
    ("weather_alerts", "List active severe weather alerts such as storms, floods or heat warnings for a region.", True,
     [("region", "string", "Region or country code")]),
    ("air_quality_index", "Get the current air quality index and pollutant levels (PM2.5, ozone) for a city.", True,
     [("city", "string", "City name")]),
    ("stock_quote", "Get the latest stock price quote, daily change and volume for a ticker symbol.", True,
     [("symbol", "string", "Ticker symbol, e.g. AAPL")]),
    ("stock_history", "Get historical daily closing prices of a stock between two dates.", True,
     [("symbol", "string", "Ticker symbol"), ("start", "string", "Start date, YYYY-MM-DD"),
      ("end", "string", "End date, YYYY-MM-DD")]),
    ("currency_convert", "Convert an amount of money from one currency to another at today's exchange rate.", True,
     [("amount", "number", "Amount to convert"), ("from_currency", "string", "ISO code of the source currency"),
      ("to_currency", "string", "ISO code of the target currency")]),
    ("crypto_price", "Get the current market price of a cryptocurrency such as bitcoin or ether.", True,
     [("coin", "string", "Coin name or symbol")]),
    ("translate_text", "Translate text from one human language into another language.", True,
     [("text", "string", "Text to translate"), ("target_language", "string", "Language to translate into")]),
    ("detect_language", "Detect which human language a piece of text is written in.", True,
     [("text", "string", "Text to analyse")]),
    ("spell_check", "Find spelling mistakes in a text and suggest corrections.", True,
     [("text", "string", "Text to check"), ("language", "string", "Language of the text")]),
    ("summarize_document", "Summarize a long document or article into a few sentences.", True,
     [("url", "string", "Address of the document"), ("max_sentences", "integer", "Length of the summary")]),
    ("calendar_create_event", "Create a new event or meeting in the user's calendar with a title, time and guests.",
     False,
     [("title", "string", "Event title"), ("start", "string", "Start time, ISO 8601"),
      ("duration_minutes", "integer", "Length of the event"), ("attendees", "string", "Comma separated emails")]),
    ("calendar_list_events", "List the events in the user's calendar between two dates.", True,
     [("from_date", "string", "First day, YYYY-MM-DD"), ("to_date", "string", "Last day, YYYY-MM-DD")]),
    ("calendar_delete_event", "Cancel and delete an event from the user's calendar.", False,
     [("event_id", "string", "Identifier of the event")]),
    ("calendar_find_free_slot", "Find a free time slot when all given people are available for a meeting.", True,
     [("attendees", "string", "Comma separated emails"), ("duration_minutes", "integer", "Meeting length")]),
    ("github_create_issue", "Open a new issue in a GitHub repository with a title and description.", False,
     [("repo", "string", "Repository as owner/name"), ("title", "string", "Issue title"),
      ("body", "string", "Issue description in Markdown")]),
    ("github_list_pull_requests", "List open pull requests of a GitHub repository.", True,
     [("repo", "string", "Repository as owner/name"), ("state", "string", "open, closed or all")]),
    ("github_merge_pull_request", "Merge a pull request into its base branch on GitHub.", False,
     [("repo", "string", "Repository as owner/name"), ("number", "integer", "Pull request number")]),
    ("github_search_code", "Search source code across GitHub repositories for a string or symbol.", True,
     [("query", "string", "Code search query")]),
    ("jira_create_ticket", "Create a Jira ticket (bug, task or story) in a project backlog.", False,
     [("project", "string", "Project key"), ("summary", "string", "Ticket summary"),
      ("issue_type", "string", "Bug, Task or Story")]),
    ("jira_transition_ticket", "Move a Jira ticket to another workflow status such as In Progress or Done.", False,
     [("ticket", "string", "Ticket key, e.g. OPS-12"), ("status", "string", "Target status")]),
    ("slack_send_message", "Post a chat message to a Slack channel.", False,
     [("channel", "string", "Channel name"), ("text", "string", "Message text")]),
    ("slack_search_messages", "Search Slack message history for a phrase.", True,
     [("query", "string", "Search phrase"), ("channel", "string", "Restrict to this channel")]),
    ("email_send", "Send an email to one or more recipients.", False,
     [("to", "string", "Recipient addresses"), ("subject", "string", "Subject line"),
      ("body", "string", "Message text")]),
    ("email_search_inbox", "Search the email inbox by sender, subject or words in the message.", True,
     [("query", "string", "Search terms")]),
    ("contacts_lookup", "Look up a person's phone number, email and address in the address book.", True,
     [("name", "string", "Person's name")]),
    ("maps_directions", "Get driving, walking or transit directions between two places.", True,
     [("origin", "string", "Starting address"), ("destination", "string", "Destination address"),
      ("mode", "string", "driving, walking or transit")]),
    ("maps_geocode", "Turn a street address into latitude and longitude coordinates.", True,
     [("address", "string", "Street address")]),
    ("places_nearby", "Find nearby restaurants, shops or other places around a location.", True,
     [("location", "string", "Address or coordinates"), ("category", "string", "Kind of place, e.g. cafe")]),
    ("flight_search", "Search airline flights between two airports on a date, with prices.", True,
     [("origin", "string", "Departure airport code"), ("destination", "string", "Arrival airport code"),
      ("date", "string", "Travel date, YYYY-MM-DD")]),
    ("flight_status", "Get the live status, gate and delay of a flight by its number.", True,
     [("flight_number", "string", "Flight number, e.g. LH400")]),
    ("hotel_book", "Book a hotel room for given check-in and check-out dates.", False,
     [("hotel_id", "string", "Hotel identifier"), ("check_in", "string", "Arrival date"),
      ("check_out", "string", "Departure date")]),
    ("restaurant_reserve", "Reserve a table at a restaurant for a number of guests.", False,
     [("restaurant", "string", "Restaurant name"), ("time", "string", "Reservation time"),
      ("guests", "integer", "Party size")]),
    ("recipe_search", "Find cooking recipes by ingredient, cuisine or dish name.", True,
     [("query", "string", "Ingredient or dish")]),
    ("nutrition_facts", "Get calories, protein, fat and carbohydrates of a food item.", True,
     [("food", "string", "Food name"), ("grams", "number", "Portion size in grams")]),
    ("news_headlines", "Get today's top news headlines for a topic or country.", True,
     [("topic", "string", "News topic, e.g. technology"), ("country", "string", "Country code")]),
    ("wikipedia_lookup", "Look up the summary of an encyclopedia article on Wikipedia.", True,
     [("title", "string", "Article title")]),
    ("web_search", "Search the web and return the top result titles and links.", True,
     [("query", "string", "Search query"), ("count", "integer", "Number of results")]),
    ("dictionary_define", "Get the definition, pronunciation and synonyms of an English word.", True,
     [("word", "string", "The word")]),
    ("unit_convert", "Convert a measurement between units such as miles to kilometres or pounds to kilograms.", True,
     [("value", "number", "Quantity"), ("from_unit", "string", "Source unit"), ("to_unit", "string", "Target unit")]),
    ("calculator_evaluate", "Evaluate an arithmetic expression and return the numeric result.", True,
     [("expression", "string", "Expression such as 2*(3+4)")]),
    ("timezone_convert", "Convert a time from one time zone to another.", True,
     [("time", "string", "Time, HH:MM"), ("from_zone", "string", "Source time zone"),
      ("to_zone", "string", "Target time zone")]),
    ("file_read", "Read the text contents of a file in the workspace.", True,
     [("path", "string", "File path")]),
    ("file_write", "Write text to a file in the workspace, replacing its contents.", False,
     [("path", "string", "File path"), ("content", "string", "Text to write")]),
    ("file_delete", "Delete a file from the workspace permanently.", False,
     [("path", "string", "File path")]),
    ("database_query", "Run a read-only SQL SELECT query against the analytics database.", True,
     [("sql", "string", "SQL SELECT statement")]),
    ("spreadsheet_append_row", "Append a row of values to a spreadsheet sheet.", False,
     [("spreadsheet_id", "string", "Spreadsheet identifier"), ("sheet", "string", "Sheet name"),
      ("values", "string", "Comma separated cell values")]),
    ("invoice_create", "Create a customer invoice with line items and a due date.", False,
     [("customer", "string", "Customer name"), ("amount", "number", "Total amount"),
      ("due_date", "string", "Due date, YYYY-MM-DD")]),
    ("payment_refund", "Refund a customer payment fully or partially.", False,
     [("payment_id", "string", "Payment identifier"), ("amount", "number", "Amount to refund")]),
    ("shipment_track", "Track a parcel shipment by carrier and tracking number.", True,
     [("carrier", "string", "Carrier name"), ("tracking_number", "string", "Tracking number")]),
    ("crm_update_lead", "Update a sales lead's status and notes in the CRM.", False,
     [("lead_id", "string", "Lead identifier"), ("status", "string", "New status"), ("notes", "string", "Notes")]),
    ("support_ticket_reply", "Reply to a customer support ticket.", False,
     [("ticket_id", "string", "Ticket identifier"), ("message", "string", "Reply text")]),
    ("image_generate", "Generate an image from a text prompt.", False,
     [("prompt", "string", "Description of the picture"), ("size", "string", "e.g. 1024x1024")]),
    ("image_describe", "Describe the contents of an image at a URL.", True,
     [("url", "string", "Image address")]),
    ("speech_to_text", "Transcribe spoken audio from a recording into text.", True,
     [("audio_url", "string", "Address of the audio file"), ("language", "string", "Spoken language")]),
    ("text_to_speech", "Turn text into spoken audio with a chosen voice.", False,
     [("text", "string", "Text to speak"), ("voice", "string", "Voice name")]),
    ("music_play", "Play a song, album or playlist on the music player.", False,
     [("query", "string", "Song, artist or playlist")]),
    ("smart_home_set_thermostat", "Set the target temperature of the home thermostat.", False,
     [("room", "string", "Room name"), ("celsius", "number", "Target temperature")]),
    ("smart_home_lights", "Turn the lights in a room on or off, or dim them.", False,
     [("room", "string", "Room name"), ("brightness", "integer", "0 (off) to 100")]),
    ("reminder_create", "Create a reminder that notifies the user at a given time.", False,
     [("text", "string", "What to remind of"), ("at", "string", "When, ISO 8601")]),
]
# fmt: on


def many_tool_list() -> list[types.Tool]:
    tools = []
    for name, description, read_only, params in MANY_TOOLS:
        properties = {p: {"type": kind, "description": text} for p, kind, text in params}
        tools.append(
            types.Tool(
                name=name,
                description=description,
                input_schema={"type": "object", "properties": properties, "required": [params[0][0]]},
                annotations=types.ToolAnnotations(read_only_hint=read_only),
            )
        )
    return tools


def generated_tools(count: int) -> list[types.Tool]:
    """The --extra-tools: tool_0000, tool_0001, ... without parameters."""
    return [
        types.Tool(name=f"tool_{i:04}", description=f"Generated tool {i}.", input_schema=NO_PARAMETERS)
        for i in range(count)
    ]


def paginated_list_tools(
    tools: list[types.Tool], page_size: int | None
) -> Callable[[Any, types.PaginatedRequestParams | None], Awaitable[types.ListToolsResult]]:
    """A tools/list handler answering pages of `page_size` tools (all in one without it); the
    cursor is the offset of the next page."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        if page_size is None:
            return types.ListToolsResult(tools=tools)
        cursor = params.cursor if params is not None else None
        try:
            start = int(cursor) if cursor is not None else 0
        except ValueError:
            raise MCPError(types.INVALID_PARAMS, f"invalid cursor {cursor!r}") from None
        end = start + page_size
        next_cursor = str(end) if end < len(tools) else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=next_cursor)

    return list_tools


def many_server(extra_tools: int, page_size: int | None) -> Server:
    tools = many_tool_list() + generated_tools(extra_tools)
    names = {tool.name for tool in tools}

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name not in names:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Unknown tool: {params.name}")], is_error=True
            )
        text = f"{params.name} called with {json.dumps(arguments, sort_keys=True)}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server(
        "agentd-fixture-many",
        version="1.0.0",
        on_list_tools=paginated_list_tools(tools, PAGE_SIZE if page_size is None else page_size),
        on_call_tool=call_tool,
    )


# --- edge: results and errors of every shape, on the low-level server ----------------------------


def edge_tool_list() -> list[types.Tool]:
    def tool(name: str, description: str, **properties: str) -> types.Tool:
        schema = {"type": "object", "properties": {p: {"type": t} for p, t in properties.items()}}
        return types.Tool(name=name, description=description, input_schema=schema if properties else NO_PARAMETERS)

    return [
        types.Tool(
            name="echo",
            description="Echoes the message back.",
            input_schema={
                "type": "object",
                "properties": {"message": {"type": "string", "description": "What to echo"}},
                "required": ["message"],
            },
            annotations=READ_ONLY,
        ),
        tool("headers", "The request's x-* headers."),
        tool("fail", "Always fails (isError)."),
        tool("slow", "Sleeps, then answers.", seconds="number"),
        tool("big", "Answers with a long text.", bytes="integer"),
        tool("structured", "Only structuredContent."),
        tool("mixed", "A text and an image block."),
        types.Tool(
            name="change_tools",
            description="Announces a tool list change.",
            input_schema=NO_PARAMETERS,
            annotations=types.ToolAnnotations(read_only_hint=False),
        ),
        tool("leak", "Echoes credentials in an error."),
    ]


def edge_server(extra_tools: int, page_size: int | None) -> Server:
    tools = edge_tool_list() + generated_tools(extra_tools)
    generated = {tool.name for tool in tools if tool.name.startswith("tool_")}

    def text(value: str, is_error: bool = False) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=is_error)

    def request_headers(ctx: Any, keep: Callable[[str], bool]) -> dict[str, str]:
        """The HTTP request's headers (names lowercase) that `keep` accepts."""
        request = ctx.request
        return {} if request is None else {k: v for k, v in request.headers.items() if keep(k)}

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        match params.name:
            case "echo":
                return text(f"Echo: {args.get('message', '')}")
            case "headers":
                return text(json.dumps(request_headers(ctx, lambda k: k.startswith("x-")), sort_keys=True))
            case "fail":
                return text("the tool failed on purpose", is_error=True)
            case "slow":
                await asyncio.sleep(float(args.get("seconds", 5)))
                return text("done")
            case "big":
                return text("x" * int(args.get("bytes", 1024)))
            case "structured":
                return types.CallToolResult(content=[], structured_content={"answer": 42})
            case "mixed":
                return types.CallToolResult(
                    content=[
                        types.TextContent(type="text", text="caption"),
                        types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
                    ]
                )
            case "change_tools":
                await ctx.session.send_tool_list_changed()
                return text("changed")
            case "leak":
                echoed = request_headers(ctx, lambda k: k == "authorization" or k.startswith("x-"))
                raise MCPError(code=-32000, message=f"rejected credentials: {' '.join(echoed.values())}")
            case name if name in generated:
                return text(name)
        return text(f"unknown tool {params.name}", is_error=True)

    return Server(
        "agentd-fixture-edge",
        version="1.0.0",
        on_list_tools=paginated_list_tools(tools, page_size),
        on_call_tool=call_tool,
    )


LOW_LEVEL_KINDS: dict[str, Callable[[int, int | None], Server]] = {
    "many": many_server,
    "edge": edge_server,
}


def low_level_app(kind: str, transport: str, log: EventLog, extra_tools: int, page_size: int | None) -> Starlette:
    server = LOW_LEVEL_KINDS[kind](extra_tools, page_size)
    server.middleware.append(mcp_event_logger(log))
    if transport == "streamable-http":
        return server.streamable_http_app()
    # The low-level server has no SSE app of its own: the SDK's documented wiring.
    sse = SseServerTransport("/messages/")
    options = server.create_initialization_options(NotificationOptions(tools_changed=kind == "edge"))

    async def handle_sse(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, options)
        return Response()

    return Starlette(
        routes=[Route("/sse", handle_sse, methods=["GET"]), Mount("/messages/", app=sse.handle_post_message)]
    )


# --- broken: answers, but not MCP -------------------------------------------------------------


async def broken_app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    body = {"status": "ok", "message": "this is not an MCP server", "items": [1, 2, 3]}
    await JSONResponse(body, status_code=200)(scope, receive, send)


# --- serving ------------------------------------------------------------------------------------


def build_app(
    kind: str,
    transport: str,
    log: EventLog,
    extra_tools: int,
    page_size: int | None,
    port: int,
    lifetime: int,
    announced: int | None = None,
    refuse_refresh: bool = False,
) -> ASGIApp:
    if kind == "oauth":
        return oauth_app(transport, log, port, lifetime, announced, refuse_refresh)
    if kind in HIGH_LEVEL_KINDS:
        return high_level_app(kind, transport, log)
    if kind in LOW_LEVEL_KINDS:
        return low_level_app(kind, transport, log, extra_tools, page_size)
    if kind == "broken":
        return broken_app
    raise SystemExit(f"fixtures.py: unknown kind {kind!r}")


def write_port_file(path: str, port: int) -> None:
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as file:
        file.write(f"{port}\n")
    os.replace(partial, path)


async def exit_with_parent() -> None:
    """Ends the process once its parent is gone (it was killed before it could kill us)."""
    parent = os.getppid()
    while os.getppid() == parent:
        await asyncio.sleep(1)
    os._exit(0)


def bind() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


async def serve(sock: socket.socket, app: ASGIApp, port_file: str) -> None:
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="auto")
    server = uvicorn.Server(config)
    watchdog = asyncio.create_task(exit_with_parent())
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            serving.result()  # raises why it stopped
            raise SystemExit("fixtures.py: uvicorn stopped before it served")
        await asyncio.sleep(0.01)
    write_port_file(port_file, port)
    await serving
    watchdog.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=[*HIGH_LEVEL_KINDS, *LOW_LEVEL_KINDS, "oauth", "broken"])
    parser.add_argument("--transport", choices=["streamable-http", "sse"], required=True)
    parser.add_argument("--port-file", required=True, help="written with the port once serving")
    parser.add_argument("--log", required=True, help="JSON lines of events are appended here")
    parser.add_argument("--token", help="answer 401 to requests without this bearer token")
    parser.add_argument("--extra-tools", type=int, default=0, help="many, edge: N more tools tool_NNNN")
    parser.add_argument("--page-size", type=int, help="many, edge: tools/list pages of N tools")
    parser.add_argument("--token-lifetime", type=int, default=3600, help="oauth: access token lifetime (seconds)")
    parser.add_argument(
        "--announced-lifetime", type=int, help="oauth: the expires_in sent (default: the real lifetime)"
    )
    parser.add_argument(
        "--refuse-refresh", action="store_true", help="oauth: every refresh token is refused (invalid_grant)"
    )
    args = parser.parse_args()
    if args.kind == "auth" and not args.token:
        parser.error("the auth kind needs --token")
    if args.kind not in LOW_LEVEL_KINDS and (args.extra_tools or args.page_size is not None):
        parser.error(f"--extra-tools and --page-size apply to {' and '.join(LOW_LEVEL_KINDS)} only")
    if args.extra_tools < 0 or (args.page_size is not None and args.page_size < 1):
        parser.error("--extra-tools must be >= 0 and --page-size >= 1")
    if args.kind == "oauth" and args.token:
        parser.error("the oauth kind issues its own tokens: no --token")
    log = EventLog(args.log)
    # Bound first: the oauth kind names its own URL in its metadata.
    sock = bind()
    port = sock.getsockname()[1]
    app = build_app(
        args.kind,
        args.transport,
        log,
        args.extra_tools,
        args.page_size,
        port,
        args.token_lifetime,
        args.announced_lifetime,
        args.refuse_refresh,
    )
    asyncio.run(serve(sock, RequestLog(app, log, args.token), args.port_file))


if __name__ == "__main__":
    sys.exit(main())
