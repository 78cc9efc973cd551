"""Saved connectors (`tools: [{"type": "connector", "id": ...}]`) through both SDKs.

A second agentd with its own data dir: in open mode an admin key is made with the admin API
(`POST /v1/admin/keys`), which closes open mode; the admin key saves a token-protected MCP fixture
server as a connector; a member key of the same project then uses it through the Perplexity and
OpenAI SDKs without ever sending the token. Covered: the `mcp_list_tools` / `mcp_call` items carry
`connector_id` and parse under strict validation; connectors are deferred by default, so the
model finds the tool with `tool_search` first (`tool_search_output`), as the connectors page says; `GET /v1/connectors` for the member key; a
member key refused on the admin API; an unknown connector is a 400 naming `tools[0].id`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import httpx
import openai
import perplexity
import pytest
from perplexity.generated import api as pplx_types

from conftest import CLIENT_TIMEOUT_S, MODEL, Agentd, FakeProvider, start_agentd
from mcp_servers import McpServers

TOKEN = "tok-client-connector-5e1b"


class Saved:
    def __init__(self, server: Agentd, admin: str, member: str) -> None:
        self.server = server
        self.url = server.url
        self.admin = admin
        self.member = member


@pytest.fixture(scope="module")
def saved(
    tmp_path_factory: pytest.TempPathFactory, logs_dir: Path, fake_provider: FakeProvider
) -> Iterator[Saved]:
    data_dir = tmp_path_factory.mktemp("agentd-connectors-data")
    mcp_dir = tmp_path_factory.mktemp("connector-mcp")
    servers = McpServers(mcp_dir)
    mcp = servers.start("basic", token=TOKEN)
    server = start_agentd("agentd-connectors", data_dir, logs_dir, fake_provider)
    keys = {}
    for role in ("admin", "member"):
        headers = {"Authorization": f"Bearer {keys['admin']}"} if "admin" in keys else {}
        made = httpx.post(f"{server.url}/v1/admin/keys", json={"role": role}, headers=headers, timeout=30)
        assert made.status_code == 201, made.text
        keys[role] = made.json()["key"]
    created = httpx.post(
        f"{server.url}/v1/admin/connectors",
        json={"id": "connector_docs", "server_label": "docs", "server_url": mcp.url, "authorization": TOKEN},
        headers={"Authorization": f"Bearer {keys['admin']}"},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    assert TOKEN not in created.text
    yield Saved(server, keys["admin"], keys["member"])
    server.stop()
    servers.close()


def connector_tool() -> dict[str, object]:
    return {"type": "connector", "id": "connector_docs", "server_label": "docs"}


def test_every_key_of_the_project_lists_the_connector(saved: Saved) -> None:
    listed = httpx.get(
        f"{saved.url}/v1/connectors", headers={"Authorization": f"Bearer {saved.member}"}, timeout=30
    )
    assert listed.status_code == 200
    assert [c["id"] for c in listed.json()["data"]] == ["connector_docs"]
    refused = httpx.get(
        f"{saved.url}/v1/admin/connectors", headers={"Authorization": f"Bearer {saved.member}"}, timeout=30
    )
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "permission_denied"


@pytest.mark.parametrize("sdk", ["perplexity", "openai"])
def test_a_member_key_uses_the_connector(sdk: str, saved: Saved, fake: FakeProvider) -> None:
    fake.script(
        {"tool_calls": [["call_search_1", "tool_search", '{"query":"echo text"}']]},
        {"tool_calls": [["call_echo_1", "docs__echo", '{"text":"from a connector"}']]},
        {"text": "It said: from a connector."},
    )
    if sdk == "perplexity":
        client = perplexity.Perplexity(
            base_url=saved.url, api_key=saved.member, max_retries=0, timeout=CLIENT_TIMEOUT_S,
            _strict_response_validation=True,
        )
        tool = pplx_types.ConnectorToolInput(type="connector", id="connector_docs", server_label="docs")
        response = client.responses.create(model=MODEL, input="echo", tools=[tool], max_steps=5)
        items = [item.model_dump() for item in response.output]
    else:
        oai = openai.OpenAI(
            base_url=saved.url + "/v1", api_key=saved.member, max_retries=0, timeout=CLIENT_TIMEOUT_S,
        )
        response = oai.responses.create(
            model=MODEL, input="echo", tools=[connector_tool()], extra_body={"max_steps": 5}  # type: ignore[list-item]
        )
        items = [item.model_dump() for item in response.output]
    assert response.status == "completed"
    kinds = [item["type"] for item in items]
    assert kinds == ["mcp_list_tools", "tool_search_output", "mcp_call", "message"], kinds
    assert items[0]["connector_id"] == "connector_docs"
    assert items[0]["server_label"] == "docs"
    assert items[2]["connector_id"] == "connector_docs"
    assert "from a connector" in items[2]["output"]
    # The token went to the MCP server only: never to the model, never back to the client.
    assert TOKEN not in str(fake.requests())
    assert TOKEN not in str(items)


def test_an_unknown_connector_is_a_400_naming_the_field(saved: Saved, fake: FakeProvider) -> None:
    client = openai.OpenAI(base_url=saved.url + "/v1", api_key=saved.member, max_retries=0, timeout=CLIENT_TIMEOUT_S)
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(
            model=MODEL, input="x", tools=[{"type": "connector", "id": "connector_nope"}]  # type: ignore[list-item]
        )
    assert caught.value.body["param"] == "tools[0].id"  # type: ignore[index]
    assert fake.requests() == []


def test_the_token_is_in_no_log_and_no_store_file(saved: Saved) -> None:
    """After the scenarios above (agentd logs at debug level): no log line, recorded answer or
    file of the data directory (the database with its WAL) holds the token."""
    token = TOKEN.encode()
    logs = [saved.server.process.stdout_path, saved.server.stderr_path]
    for path in logs + [p for p in saved.server.data_dir.rglob("*") if p.is_file()]:
        assert token not in path.read_bytes(), f"{path} holds the connector token"
    assert saved.server.stderr_path.stat().st_size > 0
