"""Remote MCP servers (`tools: [{"type": "mcp", ...}]`) through both SDKs.

The MCP servers are real (tests/mcp/fixtures.py on loopback, official Python `mcp` package; see
mcp_servers.py); only the model is scripted. The fake model "calls" the namespaced tool name
`{server_label}__{tool}`, which agentd offered it. Covered (spec §4.8, §8):

- a call round trip: one `mcp_list_tools` item per server from discovery, an `mcp_call` item
  with the server's output, parsed into the SDKs' own item types under strict validation;
- approvals: `require_approval` pauses the run with `requires_action` and an
  `mcp_approval_request`; a continuation with `previous_response_id` and a typed
  `mcp_approval_response` runs the call once (`mcp_call.approval_request_id`), or tells the model
  about the denial;
- streaming: MCP items arrive as `response.output_item.added` / `.done` with typed items;
- `defer_loading`: the model gets only `tool_search`; a search emits `tool_search_output`;
- discovery failure: HTTP 424 `external_connector_error`, or `response.failed` in a stream;
- the `authorization` token and `headers` reach the MCP server and nowhere else.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

import httpx
import openai
import perplexity
import pytest
from openai.types.responses import (
    NamespaceTool,
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseToolSearchOutputItem,
)
from openai.types.responses import tool as oai_tool
from openai.types.responses.response_input_param import McpApprovalResponse as OpenAIApprovalResponse
from openai.types.responses.response_output_item import McpApprovalRequest, McpCall, McpListTools
from openai.types.responses.tool_param import Mcp as OpenAIMcpToolParam
from perplexity.generated import api as pplx_types

from conftest import MODEL, Agentd, FakeProvider
from mcp_servers import McpServer, McpServers
from support import (
    PPLX_EVENT_CLASSES,
    assert_in_order,
    check_classes,
    check_stream_invariants,
    exact,
    response_id,
    revalidated,
)

Sdk = Literal["perplexity", "openai"]
SDKS: list[Sdk] = ["perplexity", "openai"]

ECHO_CALL = {"tool_calls": [["call_echo_1", "srv__echo", '{"text":"hello mcp"}']]}
ECHO_ANSWER = "The server said hello mcp."

DELETE_ARGUMENTS = '{"path":"old.txt"}'
DELETE_CALL = {"tool_calls": [["call_delete_1", "files__delete_file", DELETE_ARGUMENTS]]}


# --- request and response helpers ---------------------------------------------------------------


def pplx_mcp_tool(label: str, server: McpServer, **options: Any) -> pplx_types.McpToolInput:
    """The Perplexity SDK's typed `mcp` tool (`McpToolInput`)."""
    return pplx_types.McpToolInput(type="mcp", server_label=label, server_url=server.url, **options)


def oai_mcp_tool(label: str, server: McpServer, **options: Any) -> OpenAIMcpToolParam:
    """The OpenAI SDK's typed `mcp` tool param (`tool_param.Mcp`, a TypedDict)."""
    tool = OpenAIMcpToolParam(type="mcp", server_label=label, server_url=server.url)
    tool.update(options)  # type: ignore[typeddict-item]
    return tool


def pplx_approval(
    request_id: str, approve: bool, reason: str | None = None
) -> pplx_types.McpApprovalResponseInputInput:
    """The Perplexity SDK's typed `mcp_approval_response` input item."""
    if reason is None:
        return pplx_types.McpApprovalResponseInputInput(
            type="mcp_approval_response", approval_request_id=request_id, approve=approve
        )
    return pplx_types.McpApprovalResponseInputInput(
        type="mcp_approval_response", approval_request_id=request_id, approve=approve, reason=reason
    )


def oai_approval(request_id: str, approve: bool, reason: str | None = None) -> OpenAIApprovalResponse:
    """The OpenAI SDK's typed `mcp_approval_response` input item (a TypedDict)."""
    item = OpenAIApprovalResponse(
        type="mcp_approval_response", approval_request_id=request_id, approve=approve
    )
    if reason is not None:
        item["reason"] = reason
    return item


def offered_tools(request: dict[str, Any]) -> list[str]:
    """The function names offered to the model in one upstream request."""
    return [tool["function"]["name"] for tool in request.get("tools") or []]


def tool_messages(request: dict[str, Any]) -> list[str]:
    """The contents of the `tool` messages (tool results) in one upstream request."""
    return [m["content"] for m in request["messages"] if m.get("role") == "tool"]


def sse_events(text: str) -> list[dict[str, Any]]:
    """The JSON events of a raw SSE body."""
    return [json.loads(line[len("data:") :]) for line in text.splitlines() if line.startswith("data:")]


def listed_names(tools: list[Any]) -> list[str]:
    """The names of an `mcp_list_tools` item's tools."""
    return [tool.name for tool in tools]


# --- 1. a call round trip -----------------------------------------------------------------------


def check_echo_upstream(fake: FakeProvider) -> None:
    """The model was offered `srv__echo` with the server's schema and got the call's output."""
    requests = fake.requests()
    assert len(requests) == 2, requests
    assert "srv__echo" in offered_tools(requests[0])
    echo = next(t for t in requests[0]["tools"] if t["function"]["name"] == "srv__echo")
    assert echo["function"]["parameters"]["properties"]["text"]["type"] == "string"
    assert any("hello mcp" in content for content in tool_messages(requests[1])), requests[1]["messages"]
    fake.assert_all_used()


def test_perplexity_mcp_call_round_trip(
    strict_pplx: perplexity.Perplexity, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    server = mcp_servers.start("basic")
    fake.script(ECHO_CALL, {"text": ECHO_ANSWER})
    response = strict_pplx.responses.create(
        model=MODEL, input="Echo 'hello mcp'.", tools=[pplx_mcp_tool("srv", server)]
    )
    assert type(response) is pplx_types.ResponsesResponseOutput
    assert response.status == "completed", response.error
    assert [item.type for item in response.output] == ["mcp_list_tools", "mcp_call", "message"]

    listing = exact(response.output[0], pplx_types.McpListToolsOutputItemOutput)
    assert listing.id.startswith("mcpl_")
    assert listing.server_label == "srv"
    assert listing.error is None
    assert sorted(listed_names(listing.tools)) == ["add", "echo", "slow"]
    echo = next(exact(tool, pplx_types.McpToolDefOutput) for tool in listing.tools if tool.name == "echo")
    assert echo.description == "Echo the given text back unchanged."
    assert echo.input_schema["properties"]["text"]["type"] == "string"
    assert echo.annotations is not None
    assert exact(echo.annotations, pplx_types.McpToolDefAnnotationsOutput).read_only is True

    call = exact(response.output[1], pplx_types.McpCallOutputItemOutput)
    assert call.server_label == "srv"
    assert call.name == "echo"
    assert json.loads(call.arguments) == {"text": "hello mcp"}
    assert call.output is not None and "hello mcp" in call.output
    assert call.error is None
    assert call.approval_request_id is None
    message = exact(response.output[2], pplx_types.MessageOutputItemOutput)
    assert len({listing.id, call.id, message.id}) == 3

    assert response.output_text == ECHO_ANSWER
    assert server.calls() == [("echo", {"text": "hello mcp"})]
    assert server.list_count() == 1
    check_echo_upstream(fake)
    assert strict_pplx.responses.retrieve(response.id).to_dict() == response.to_dict()


def test_openai_mcp_call_round_trip(
    strict_oai: openai.OpenAI, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    server = mcp_servers.start("basic")
    fake.script(ECHO_CALL, {"text": ECHO_ANSWER})
    response = strict_oai.responses.create(
        model=MODEL, input="Echo 'hello mcp'.", tools=[oai_mcp_tool("srv", server)]
    )
    assert type(response) is Response
    assert response.status == "completed", response.error
    listing, call, message = response.output
    assert type(listing) is McpListTools
    assert listing.server_label == "srv"
    assert sorted(tool.name for tool in listing.tools) == ["add", "echo", "slow"]
    echo = next(tool for tool in listing.tools if tool.name == "echo")
    assert echo.input_schema["properties"]["text"]["type"] == "string"  # type: ignore[index]
    assert echo.annotations == {"read_only": True}

    assert type(call) is McpCall
    assert (call.server_label, call.name) == ("srv", "echo")
    assert json.loads(call.arguments) == {"text": "hello mcp"}
    assert call.output is not None and "hello mcp" in call.output
    assert call.error is None
    assert type(message) is ResponseOutputMessage
    assert response.output_text == ECHO_ANSWER

    # The echoed tool is OpenAI's `mcp` tool type, without credentials.
    assert len(response.tools) == 1
    echoed = response.tools[0]
    assert type(echoed) is oai_tool.Mcp
    assert (echoed.server_label, echoed.server_url) == ("srv", server.url)

    assert server.calls() == [("echo", {"text": "hello mcp"})]
    check_echo_upstream(fake)


def test_perplexity_failing_mcp_call_goes_back_to_the_model(
    strict_pplx: perplexity.Perplexity, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    """Spec §8.3: a failing tool call does not fail the run; the error is on the `mcp_call` item
    (`error` set, no output) and goes back to the model in-band."""
    server = mcp_servers.start("failing")
    fake.script(
        {"tool_calls": [["call_x", "f__explode", '{"reason":"disk on fire"}']]},
        {"text": "Sorry, the tool failed."},
    )
    response = strict_pplx.responses.create(model=MODEL, input="Explode.", tools=[pplx_mcp_tool("f", server)])
    assert response.status == "completed", response.error
    call = exact(response.output[1], pplx_types.McpCallOutputItemOutput)
    assert call.name == "explode"
    assert call.error is not None and "disk on fire" in call.error
    assert not call.output
    assert server.calls() == [("explode", {"reason": "disk on fire"})]
    assert any("disk on fire" in content for content in tool_messages(fake.requests()[1]))
    fake.assert_all_used()


def test_openai_failing_mcp_call_error_is_a_string(
    oai: openai.OpenAI, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    """`mcp_call.error` is a string (Perplexity's `McpCallOutputItem`, spec §4.8). OpenAI's
    `McpCall.error` is an object (`McpToolCallError`), so the strict OpenAI client refuses a failed
    call; the default client hands the string over unchanged."""
    server = mcp_servers.start("failing")
    fake.script(
        {"tool_calls": [["call_x", "f__explode", '{"reason":"disk on fire"}']]},
        {"text": "Sorry, the tool failed."},
    )
    response = oai.responses.create(model=MODEL, input="Explode.", tools=[oai_mcp_tool("f", server)])
    assert response.status == "completed", response.error
    call = response.output[1]
    assert type(call) is McpCall
    assert isinstance(call.error, str) and "disk on fire" in call.error
    assert server.calls() == [("explode", {"reason": "disk on fire"})]
    fake.assert_all_used()


# --- 2. approvals -------------------------------------------------------------------------------


def test_perplexity_approval_flow(
    strict_pplx: perplexity.Perplexity, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    server = mcp_servers.start("annotated")
    tools = [pplx_mcp_tool("files", server, require_approval="always")]
    fake.script(DELETE_CALL)
    paused = strict_pplx.responses.create(model=MODEL, input="Delete old.txt.", tools=tools)

    # Spec Decision 2: a run paused for an approval ends `requires_action`; nothing ran.
    assert paused.status == "requires_action"
    assert [item.type for item in paused.output] == ["mcp_list_tools", "mcp_approval_request"]
    request = exact(paused.output[1], pplx_types.McpApprovalRequestOutputItemOutput)
    assert (request.server_label, request.name) == ("files", "delete_file")
    assert json.loads(request.arguments) == {"path": "old.txt"}
    assert server.calls() == [], "the tool ran before it was approved"
    assert strict_pplx.responses.retrieve(paused.id).status == "requires_action"

    fake.script({"text": "Deleted old.txt."})
    done = strict_pplx.responses.create(
        model=MODEL,
        previous_response_id=paused.id,
        input=[pplx_approval(request.id, approve=True)],
        tools=tools,
    )
    assert done.status == "completed", done.error
    assert done.previous_response_id == paused.id
    assert [item.type for item in done.output] == ["mcp_call", "message"]
    call = exact(done.output[0], pplx_types.McpCallOutputItemOutput)
    assert call.approval_request_id == request.id
    assert (call.server_label, call.name, call.arguments) == ("files", "delete_file", request.arguments)
    assert call.output is not None and "old.txt" in call.output
    assert call.error is None
    assert done.output_text == "Deleted old.txt."
    assert server.calls() == [("delete_file", {"path": "old.txt"})]

    # The model saw its call and the result only after the approval.
    first, second = fake.requests()
    assert tool_messages(first) == []
    assert any("old.txt" in content for content in tool_messages(second))
    fake.assert_all_used()


def test_openai_approval_flow(
    oai: openai.OpenAI, strict_oai: openai.OpenAI, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    """The paused response is read with the default OpenAI client: OpenAI's `ResponseStatus`
    has no `requires_action` (agentd follows Perplexity here, spec Decision 2), so the strict
    client would refuse it. Everything after it validates strictly."""
    server = mcp_servers.start("annotated")
    tools = [oai_mcp_tool("files", server, require_approval="always")]
    fake.script(DELETE_CALL)
    paused = oai.responses.create(model=MODEL, input="Delete old.txt.", tools=tools)
    assert paused.status == "requires_action"
    request = paused.output[1]
    assert type(request) is McpApprovalRequest
    McpApprovalRequest.model_validate(request.to_dict())
    assert (request.server_label, request.name) == ("files", "delete_file")
    assert json.loads(request.arguments) == {"path": "old.txt"}
    assert server.calls() == []

    fake.script({"text": "Deleted old.txt."})
    done = strict_oai.responses.create(
        model=MODEL,
        previous_response_id=paused.id,
        input=[oai_approval(request.id, approve=True)],
        tools=tools,
    )
    assert done.status == "completed", done.error
    call = done.output[0]
    assert type(call) is McpCall
    assert call.approval_request_id == request.id
    assert call.output is not None and "old.txt" in call.output
    assert done.output_text == "Deleted old.txt."
    assert server.calls() == [("delete_file", {"path": "old.txt"})]
    fake.assert_all_used()


def test_perplexity_approval_by_replay_without_previous_response_id(
    pplx: perplexity.Perplexity, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    """Spec §8.3, zero data retention: `input` carries the user message, the
    `mcp_approval_request` item and the `mcp_approval_response`, all as the SDK's input types;
    replaying the resulting `mcp_call` as history does not run the tool again."""
    server = mcp_servers.start("annotated")
    tools = [pplx_mcp_tool("files", server, require_approval="always")]
    question = pplx_types.InputMessageInput(type="message", role="user", content="Delete old.txt.")
    fake.script(DELETE_CALL)
    paused = pplx.responses.create(model=MODEL, input=[question], tools=tools, store=False)
    assert paused.status == "requires_action"
    request = exact(paused.output[1], pplx_types.McpApprovalRequestOutputItemOutput)

    history: list[Any] = [
        question,
        pplx_types.McpApprovalRequestInputInput.model_validate(request.to_dict()),
        pplx_approval(request.id, approve=True),
    ]
    fake.script({"text": "Deleted old.txt."})
    done = pplx.responses.create(model=MODEL, input=history, tools=tools, store=False)
    assert done.status == "completed", done.error
    # No `mcp_list_tools` in this input, so the run lists the server's tools again.
    assert [item.type for item in done.output] == ["mcp_list_tools", "mcp_call", "message"]
    call = exact(done.output[1], pplx_types.McpCallOutputItemOutput)
    assert call.approval_request_id == request.id
    assert server.calls() == [("delete_file", {"path": "old.txt"})]

    history.append(pplx_types.McpCallInputInput.model_validate(call.to_dict()))
    history.append(pplx_types.InputMessageInput(type="message", role="user", content="Thanks."))
    fake.script({"text": "You're welcome."})
    again = pplx.responses.create(model=MODEL, input=history, tools=tools, store=False)
    assert again.status == "completed", again.error
    assert again.output_text == "You're welcome."
    assert server.calls() == [("delete_file", {"path": "old.txt"})], "the replayed mcp_call ran again"
    fake.assert_all_used()


def test_openai_approval_by_replaying_the_output(
    oai: openai.OpenAI, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    """OpenAI's documented loop without stored state: `input += response.output` (the
    `mcp_list_tools` and `mcp_approval_request` objects as the SDK parsed them), then the typed
    `mcp_approval_response`; replaying the `mcp_call` afterwards does not run it again."""
    server = mcp_servers.start("annotated")
    tools = [oai_mcp_tool("files", server, require_approval="always")]
    fake.script(DELETE_CALL)
    input_list: list[Any] = [{"role": "user", "content": "Delete old.txt."}]
    paused = oai.responses.create(model=MODEL, input=input_list, tools=tools, store=False)
    assert paused.status == "requires_action"
    request = paused.output[1]
    assert type(request) is McpApprovalRequest

    input_list += paused.output
    input_list.append(oai_approval(request.id, approve=True))
    fake.script({"text": "Deleted old.txt."})
    done = oai.responses.create(model=MODEL, input=input_list, tools=tools, store=False)
    assert done.status == "completed", done.error
    assert [item.type for item in done.output] == ["mcp_call", "message"]
    call = done.output[0]
    assert type(call) is McpCall
    assert call.approval_request_id == request.id
    assert server.calls() == [("delete_file", {"path": "old.txt"})]

    input_list += done.output
    input_list.append({"role": "user", "content": "Thanks."})
    fake.script({"text": "You're welcome."})
    again = oai.responses.create(model=MODEL, input=input_list, tools=tools, store=False)
    assert again.status == "completed", again.error
    assert server.calls() == [("delete_file", {"path": "old.txt"})], "the replayed mcp_call ran again"
    fake.assert_all_used()


@pytest.mark.parametrize("sdk", SDKS)
def test_a_denial_skips_the_call_and_tells_the_model(
    sdk: Sdk, pplx: perplexity.Perplexity, oai: openai.OpenAI, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    server = mcp_servers.start("annotated")
    reason = "that file is still needed"
    fake.script(DELETE_CALL, {"text": "I will not delete it."})
    if sdk == "perplexity":
        tools: list[Any] = [pplx_mcp_tool("files", server, require_approval="always")]
        paused: Any = pplx.responses.create(model=MODEL, input="Delete old.txt.", tools=tools)
        decision: Any = pplx_approval(paused.output[1].id, approve=False, reason=reason)
        client: Any = pplx
    else:
        tools = [oai_mcp_tool("files", server, require_approval="always")]
        paused = oai.responses.create(model=MODEL, input="Delete old.txt.", tools=tools)
        decision = oai_approval(paused.output[1].id, approve=False, reason=reason)
        client = oai
    assert paused.status == "requires_action"
    assert paused.output[1].type == "mcp_approval_request"

    done = client.responses.create(model=MODEL, previous_response_id=paused.id, input=[decision], tools=tools)
    assert done.status == "completed", done.error
    assert [item.type for item in done.output] == ["message"]
    assert done.output_text == "I will not delete it."
    assert server.calls() == [], "a denied call ran"
    told = tool_messages(fake.requests()[1])
    assert len(told) == 1 and reason in told[0], told
    fake.assert_all_used()


# --- 3. streaming -------------------------------------------------------------------------------


def test_perplexity_stream_of_an_mcp_run(
    pplx: perplexity.Perplexity, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    server = mcp_servers.start("basic")
    fake.script(ECHO_CALL, {"text": ECHO_ANSWER})
    events = list(
        pplx.responses.create(
            model=MODEL, input="Echo 'hello mcp'.", tools=[pplx_mcp_tool("srv", server)], stream=True
        )
    )
    check_classes(events, PPLX_EVENT_CLASSES)
    check_stream_invariants(events)
    for event in events:
        if event.type in PPLX_EVENT_CLASSES:
            revalidated(event)

    item_events = [
        (event.type, event.item.type)
        for event in events
        if event.type in ("response.output_item.added", "response.output_item.done")
    ]
    assert item_events == [
        ("response.output_item.added", "mcp_list_tools"),
        ("response.output_item.done", "mcp_list_tools"),
        ("response.output_item.added", "mcp_call"),
        ("response.output_item.done", "mcp_call"),
        ("response.output_item.added", "message"),
        ("response.output_item.done", "message"),
    ]
    items = {
        (event.type, event.item.type): event
        for event in events
        if event.type in ("response.output_item.added", "response.output_item.done")
    }
    exact(items["response.output_item.added", "mcp_list_tools"].item, pplx_types.McpListToolsOutputItemOutput)
    listing = exact(
        items["response.output_item.done", "mcp_list_tools"].item, pplx_types.McpListToolsOutputItemOutput
    )
    added_call = exact(
        items["response.output_item.added", "mcp_call"].item, pplx_types.McpCallOutputItemOutput
    )
    done_call = exact(items["response.output_item.done", "mcp_call"].item, pplx_types.McpCallOutputItemOutput)
    assert added_call.id == done_call.id
    assert (added_call.name, added_call.arguments) == ("echo", '{"text":"hello mcp"}')
    assert done_call.output is not None and "hello mcp" in done_call.output
    assert done_call.error is None
    indices = [
        items["response.output_item.done", kind].output_index
        for kind in ("mcp_list_tools", "mcp_call", "message")
    ]
    assert indices == [0, 1, 2]

    final = events[-1]
    assert type(final) is pplx_types.ResponseCompletedEventOutput
    assert final.response is not None and final.response.status == "completed"
    assert final.response.output[0].to_dict() == listing.to_dict()
    assert final.response.output[1].to_dict() == done_call.to_dict()
    assert final.response.output_text == ECHO_ANSWER
    assert server.calls() == [("echo", {"text": "hello mcp"})]
    fake.assert_all_used()


def test_perplexity_stream_pausing_for_approval(
    pplx: perplexity.Perplexity, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    """A stream paused for an approval ends with `response.completed` whose status is
    `requires_action`; the request is streamed as output_item.added/done."""
    server = mcp_servers.start("annotated")
    fake.script(DELETE_CALL)
    events = list(
        pplx.responses.create(
            model=MODEL,
            input="Delete old.txt.",
            tools=[pplx_mcp_tool("files", server, require_approval="always")],
            stream=True,
        )
    )
    check_classes(events, PPLX_EVENT_CLASSES)
    check_stream_invariants(events)
    for event in events:
        revalidated(event)
    assert_in_order(
        [event.type for event in events],
        [
            "response.created",
            "response.output_item.added",
            "response.output_item.done",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed",
        ],
    )
    done_items = [event.item for event in events if event.type == "response.output_item.done"]
    request = exact(done_items[-1], pplx_types.McpApprovalRequestOutputItemOutput)
    assert request.name == "delete_file"
    final = events[-1]
    assert type(final) is pplx_types.ResponseCompletedEventOutput
    assert final.response is not None and final.response.status == "requires_action"
    assert final.response.output[-1].to_dict() == request.to_dict()
    assert "response.output_text.delta" not in [event.type for event in events]
    assert server.calls() == []
    fake.assert_all_used()


def test_openai_stream_of_an_mcp_run(
    strict_oai: openai.OpenAI, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    """The strict OpenAI client validates every event against OpenAI's discriminated event union."""
    server = mcp_servers.start("basic")
    fake.script(ECHO_CALL, {"text": ECHO_ANSWER})
    events = list(
        strict_oai.responses.create(
            model=MODEL, input="Echo 'hello mcp'.", tools=[oai_mcp_tool("srv", server)], stream=True
        )
    )
    check_stream_invariants(events)
    assert type(events[0]) is ResponseCreatedEvent
    added = [event for event in events if isinstance(event, ResponseOutputItemAddedEvent)]
    done = [event for event in events if isinstance(event, ResponseOutputItemDoneEvent)]
    assert [type(event.item) for event in added] == [McpListTools, McpCall, ResponseOutputMessage]
    assert [type(event.item) for event in done] == [McpListTools, McpCall, ResponseOutputMessage]
    call = done[1].item
    assert isinstance(call, McpCall)
    assert call.output is not None and "hello mcp" in call.output
    final = events[-1]
    assert type(final) is ResponseCompletedEvent
    assert final.response.output_text == ECHO_ANSWER
    assert server.calls() == [("echo", {"text": "hello mcp"})]
    fake.assert_all_used()


# --- 4. defer_loading and tool search -----------------------------------------------------------

SEARCH_ARGUMENTS = '{"query":"weather forecast for a city","server_label":"cat"}'


def script_deferred_run(fake: FakeProvider) -> None:
    """The model searches the catalog, calls a found tool, then answers."""
    fake.script(
        {"tool_calls": [["call_search_1", "tool_search", SEARCH_ARGUMENTS]]},
        {"tool_calls": [["call_weather_1", "cat__weather_forecast", '{"city":"Paris"}']]},
        {"text": "Sunny in Paris."},
    )


def check_deferred_upstream(fake: FakeProvider) -> None:
    """Only `tool_search` at first (no deferred schema); the found tool after the search."""
    requests = fake.requests()
    assert len(requests) == 3, requests
    assert offered_tools(requests[0]) == ["tool_search"]
    assert "weather_forecast" not in json.dumps(requests[0]["tools"])
    assert "cat__weather_forecast" in offered_tools(requests[1])
    fake.assert_all_used()


def test_perplexity_defer_loading_emits_tool_search_output(
    strict_pplx: perplexity.Perplexity, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    server = mcp_servers.start("many")
    script_deferred_run(fake)
    response = strict_pplx.responses.create(
        model=MODEL, input="Weather in Paris?", tools=[pplx_mcp_tool("cat", server, defer_loading=True)]
    )
    assert response.status == "completed", response.error
    assert [item.type for item in response.output] == [
        "mcp_list_tools",
        "tool_search_output",
        "mcp_call",
        "message",
    ]
    # Discovery still listed the whole catalog (three pages of 25).
    listing = exact(response.output[0], pplx_types.McpListToolsOutputItemOutput)
    assert len(listing.tools) == 60

    search = exact(response.output[1], pplx_types.ToolSearchOutputItemOutput)
    # Spec Decision 5.
    assert search.id
    assert search.call_id == "call_search_1"
    assert (search.execution, search.status) == ("server", "completed")
    assert search.arguments is not None and json.loads(search.arguments) == json.loads(SEARCH_ARGUMENTS)
    assert len(search.tools) == 1
    namespace = exact(search.tools[0], pplx_types.NamespaceToolOutput)
    assert (namespace.type, namespace.name) == ("namespace", "cat")
    found = [exact(tool, pplx_types.NamespaceToolDefOutput) for tool in namespace.tools]
    assert "weather_forecast" in [tool.name for tool in found]
    weather = next(tool for tool in found if tool.name == "weather_forecast")
    assert weather.type == "function"
    assert weather.parameters is not None and "city" in weather.parameters["properties"]

    call = exact(response.output[2], pplx_types.McpCallOutputItemOutput)
    assert (call.server_label, call.name) == ("cat", "weather_forecast")
    assert server.calls() == [("weather_forecast", {"city": "Paris"})]
    check_deferred_upstream(fake)


def test_openai_defer_loading_emits_tool_search_output(
    strict_oai: openai.OpenAI, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    server = mcp_servers.start("many")
    script_deferred_run(fake)
    response = strict_oai.responses.create(
        model=MODEL, input="Weather in Paris?", tools=[oai_mcp_tool("cat", server, defer_loading=True)]
    )
    assert response.status == "completed", response.error
    search = response.output[1]
    assert type(search) is ResponseToolSearchOutputItem
    assert (search.call_id, search.execution, search.status) == ("call_search_1", "server", "completed")
    namespace = search.tools[0]
    assert type(namespace) is NamespaceTool
    assert namespace.name == "cat"
    assert "weather_forecast" in [tool.name for tool in namespace.tools]
    assert type(response.output[2]) is McpCall
    check_deferred_upstream(fake)


# --- 5. discovery failure -----------------------------------------------------------------------


def closed_port_url() -> str:
    """An MCP URL on loopback where nothing listens (port 1 needs root to bind)."""
    return "http://127.0.0.1:1/mcp"


@pytest.fixture(params=["connection_refused", "not_mcp"])
def unusable_server_url(request: pytest.FixtureRequest, mcp_servers: McpServers) -> str:
    """A server agentd cannot list tools from: nothing listening, or a 200 that is not MCP."""
    if request.param == "connection_refused":
        return closed_port_url()
    return mcp_servers.start("broken").url


def test_perplexity_discovery_failure_is_http_424(
    pplx: perplexity.Perplexity, fake: FakeProvider, unusable_server_url: str
) -> None:
    with pytest.raises(perplexity.APIStatusError) as raised:
        pplx.responses.create(
            model=MODEL,
            input="x",
            tools=[pplx_types.McpToolInput(type="mcp", server_label="down", server_url=unusable_server_url)],
        )
    err = raised.value
    assert err.status_code == 424
    assert isinstance(err.body, dict)
    error = err.body["error"]
    assert error["type"] == "external_connector_error"
    assert error["code"] == 424
    assert '"down"' in error["message"]
    assert fake.requests() == [], "the model was asked despite the failed discovery"


def test_openai_discovery_failure_is_http_424(
    oai: openai.OpenAI, fake: FakeProvider, unusable_server_url: str
) -> None:
    tool = OpenAIMcpToolParam(type="mcp", server_label="down", server_url=unusable_server_url)
    with pytest.raises(openai.APIStatusError) as raised:
        oai.responses.create(model=MODEL, input="x", tools=[tool])
    err = raised.value
    assert err.status_code == 424
    assert err.type == "external_connector_error"
    assert '"down"' in err.message
    assert fake.requests() == []


def test_perplexity_stream_discovery_failure_is_response_failed(
    pplx: perplexity.Perplexity, fake: FakeProvider, unusable_server_url: str
) -> None:
    tool = pplx_types.McpToolInput(type="mcp", server_label="down", server_url=unusable_server_url)
    events = list(pplx.responses.create(model=MODEL, input="x", tools=[tool], stream=True))
    check_classes(events, PPLX_EVENT_CLASSES)
    check_stream_invariants(events)
    failed = revalidated(events[-1])
    assert type(failed) is pplx_types.ResponseFailedEventOutput
    assert failed.error.code == "external_connector_error"
    assert failed.error.type == "external_connector_error"
    assert '"down"' in failed.error.message
    stored = pplx.responses.retrieve(response_id(events[0]))
    assert stored.status == "failed"
    assert stored.error is not None and stored.error.code == "external_connector_error"
    assert fake.requests() == []


def test_openai_stream_discovery_failure_raises(
    oai: openai.OpenAI, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    """The OpenAI SDK raises `APIError` on a frame with a top-level `error` (see test_streaming)."""
    tool = OpenAIMcpToolParam(type="mcp", server_label="down", server_url=closed_port_url())
    seen: list[Any] = []
    with pytest.raises(openai.APIError) as raised:
        for event in oai.responses.create(model=MODEL, input="x", tools=[tool], stream=True):
            seen.append(event)
    assert '"down"' in raised.value.message
    # The failed listing is an `mcp_list_tools` item with its error, as OpenAI sends it.
    assert [event.type for event in seen] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.failed",
        "response.output_item.done",
    ]
    assert seen[-1].item.type == "mcp_list_tools"
    assert '"down"' in (seen[-1].item.error or "")
    assert fake.requests() == []


def test_perplexity_background_discovery_failure_ends_failed(
    pplx: perplexity.Perplexity, fake: FakeProvider
) -> None:
    tool = pplx_types.McpToolInput(type="mcp", server_label="down", server_url=closed_port_url())
    queued = pplx.responses.create(model=MODEL, input="x", tools=[tool], background=True)
    assert queued.status in ("queued", "in_progress")
    deadline = time.monotonic() + 30
    final = pplx.responses.retrieve(queued.id)
    while final.status in ("queued", "in_progress") and time.monotonic() < deadline:
        time.sleep(0.05)
        final = pplx.responses.retrieve(queued.id)
    assert final.status == "failed"
    assert final.error is not None and final.error.code == "external_connector_error"
    assert fake.requests() == []


# --- 6. credentials stay secret -----------------------------------------------------------------

MCP_TOKEN = "mcp-token-client-suite-7c41d2"
MCP_HEADER_SECRET = "mcp-header-client-suite-93be0a"


def test_the_mcp_token_reaches_the_server_and_nowhere_else(
    pplx: perplexity.Perplexity,
    http: httpx.Client,
    agentd: Agentd,
    fake: FakeProvider,
    mcp_servers: McpServers,
) -> None:
    """Spec §4.8, Decision 12: `authorization` and `headers` are never stored, logged or echoed.
    Checked in agentd's debug log, the create bodies (plain and streamed), the stored response,
    its stored event log, its data directory and the model's requests; the server got both."""
    server = mcp_servers.start("auth", token=MCP_TOKEN)
    tool = pplx_mcp_tool("sec", server, authorization=MCP_TOKEN, headers={"X-Api-Key": MCP_HEADER_SECRET})
    fake.script(
        {"tool_calls": [["call_sec_1", "sec__echo", '{"text":"secret run"}']]},
        {"text": "done"},
        {"tool_calls": [["call_sec_2", "sec__echo", '{"text":"secret stream"}']]},
        {"text": "done"},
    )
    plain = pplx.responses.with_raw_response.create(model=MODEL, input="go", tools=[tool])
    plain_response = plain.parse()
    assert plain_response.status == "completed", plain_response.error
    streamed = http.post(
        "/v1/responses",
        json={"model": MODEL, "input": "go", "stream": True, "tools": [tool.to_dict(mode="json")]},
    )
    assert streamed.status_code == 200
    assert '"response.completed"' in streamed.text
    stream_id = sse_events(streamed.text)[0]["response"]["id"]

    # The server saw the token and the header on every request, and ran both calls.
    assert [args["text"] for _, args in server.calls()] == ["secret run", "secret stream"]
    requests = server.requests()
    assert requests
    for request in requests:
        assert request["authorization"] == f"Bearer {MCP_TOKEN}"
        assert request["headers"].get("x-api-key") == MCP_HEADER_SECRET

    places: dict[str, str] = {
        "plain body": plain.http_response.text,
        "stream body": streamed.text,
        "model requests": json.dumps(fake.requests()),
    }
    for stored_id in (plain_response.id, stream_id):
        for path in ("/v1/responses", "/v1/agent"):
            stored = http.get(f"{path}/{stored_id}")
            assert stored.status_code == 200
            places[f"GET {path}/{stored_id}"] = stored.text
        replay = http.get(f"/v1/responses/{stored_id}", params={"stream": "true"})
        assert replay.status_code == 200
        assert sse_events(replay.text)[-1]["type"] == "response.completed"
        places[f"stored events of {stored_id}"] = replay.text
    stored_tools = http.get(f"/v1/responses/{plain_response.id}").json()["tools"]
    assert [(t["type"], t["server_label"]) for t in stored_tools] == [("mcp", "sec")]

    log = agentd.stderr_path.read_text(errors="replace")
    assert "label=sec" in log, "agentd logged nothing about this MCP server: the check would prove nothing"
    places["agentd stderr"] = log
    places["agentd stdout"] = agentd.process.stdout_path.read_text(errors="replace")

    for what, text in places.items():
        assert MCP_TOKEN not in text, f"the MCP token leaked into {what}"
        assert MCP_HEADER_SECRET not in text, f"the MCP header value leaked into {what}"
    for file in agentd.data_dir.rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            assert MCP_TOKEN.encode() not in data, f"the MCP token is stored in {file}"
            assert MCP_HEADER_SECRET.encode() not in data, f"the MCP header value is stored in {file}"


def test_a_wrong_mcp_token_fails_discovery_without_echoing_it(
    pplx: perplexity.Perplexity, agentd: Agentd, fake: FakeProvider, mcp_servers: McpServers
) -> None:
    server = mcp_servers.start("auth", token=MCP_TOKEN)
    wrong = "wrong-mcp-token-client-suite-5d0f"
    with pytest.raises(perplexity.APIStatusError) as raised:
        pplx.responses.create(
            model=MODEL, input="go", tools=[pplx_mcp_tool("sec", server, authorization=wrong)]
        )
    assert raised.value.status_code == 424
    body = json.dumps(raised.value.body)
    assert "external_connector_error" in body
    assert "401" in body
    assert wrong not in body and MCP_TOKEN not in body
    assert wrong not in agentd.stderr_path.read_text(errors="replace")
    assert server.calls() == []
    assert fake.requests() == []
