"""Shared pieces of the client tests: the docs' order-status tool and stream checks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from perplexity.generated import api as pplx_types
from pydantic import BaseModel

from recorder import RECORDINGS

# The function tool of the Perplexity docs' custom-function example (agent-api/tools/custom-functions,
# the "Give it tools" page), verbatim.
ORDER_TOOLS = [
    {
        "type": "function",
        "name": "get_order_status",
        "description": "Look up the current status of an internal order by its order ID.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
        "strict": True,
    }
]

ORDER_QUESTION = "What's the status of order ORD-10042?"
ORDER_ARGUMENTS = '{"order_id":"ORD-10042"}'
ORDER_ANSWER = "Order ORD-10042 is in transit and should arrive on Friday."


def get_order_status(order_id: str) -> dict[str, str]:
    """The caller's own function, which the service never runs."""
    return {"order_id": order_id, "status": "in_transit", "eta": "Friday"}


def order_call(call_id: str = "call_Ku9yfMSIZWrJBGm2wqCaFF0G") -> dict[str, Any]:
    """The fake model's first turn: one get_order_status call."""
    return {"tool_calls": [[call_id, "get_order_status", ORDER_ARGUMENTS]]}


def order_answer() -> dict[str, Any]:
    """The fake model's second turn: the final text."""
    return {"text": ORDER_ANSWER, "usage": [40, 12]}


def sent(path: str = "/v1/responses") -> list[dict[str, Any]]:
    """The create requests the running test sent (through the recording proxy), as sent."""
    return [
        exchange.request
        for exchange in RECORDINGS.exchanges()
        if exchange.test == RECORDINGS.current_test and exchange.method == "POST" and exchange.path == path
    ]


TERMINAL = {"response.completed", "response.failed", "response.incomplete", "response.cancelled"}


def check_stream_invariants(events: Sequence[Any]) -> None:
    """design.md §7 invariants on a parsed event list (SDK objects with `.type`, `.sequence_number`)."""
    types = [event.type for event in events]
    assert types, "empty stream"
    assert types[0] == "response.created", types
    numbers = [event.sequence_number for event in events]
    assert all(a < b for a, b in pairwise(numbers)), f"sequence numbers not increasing: {numbers}"
    terminal = [t for t in types if t in TERMINAL]
    assert len(terminal) == 1, f"expected exactly one terminal event, got {terminal}"
    assert types[-1] in TERMINAL, f"the terminal event is not last: {types}"
    ids = {response_id(event) for event in events if getattr(event, "response", None) is not None}
    assert len(ids) == 1, f"more than one response id in one stream: {ids}"


def response_id(event: Any) -> str:
    """The id of an event's `response` snapshot (a dict where the SDK types no `response`, as on
    Perplexity's `response.failed`)."""
    response = event.response
    return response["id"] if isinstance(response, dict) else response.id


def assert_in_order(types: Sequence[str], expected: Iterable[str]) -> None:
    """`expected` occurs in `types` as a subsequence (other events may come between)."""
    position = 0
    for wanted in expected:
        try:
            position = types.index(wanted, position) + 1
        except ValueError:
            raise AssertionError(f"{wanted!r} missing or out of order in {list(types)}") from None


def text_deltas(events: Sequence[Any]) -> str:
    return "".join(event.delta for event in events if event.type == "response.output_text.delta")


def tool_result_message(request: dict[str, Any]) -> dict[str, Any]:
    """The `tool` message of an upstream request (exactly one expected)."""
    tools = [m for m in request["messages"] if m.get("role") == "tool"]
    assert len(tools) == 1, request["messages"]
    return tools[0]


# The typed class each Perplexity event type must parse into (spec §7.2; the SDK falls back to a
# dict or a loosely constructed model when an event does not match its declared type).
PPLX_EVENT_CLASSES: dict[str, type[BaseModel]] = {
    "response.created": pplx_types.ResponseCreatedEventOutput,
    "response.in_progress": pplx_types.ResponseInProgressEventOutput,
    "response.output_item.added": pplx_types.OutputItemAddedEventOutput,
    "response.output_item.done": pplx_types.OutputItemDoneEventOutput,
    "response.output_text.delta": pplx_types.TextDeltaEventOutput,
    "response.output_text.done": pplx_types.TextDoneEventOutput,
    "response.completed": pplx_types.ResponseCompletedEventOutput,
    "response.failed": pplx_types.ResponseFailedEventOutput,
    # The built-in tools' progress events (web_search, people_search, fetch_url, image_search).
    "response.reasoning.started": pplx_types.ReasoningStartedEventOutput,
    "response.reasoning.search_queries": pplx_types.SearchQueriesEventOutput,
    "response.reasoning.search_results": pplx_types.SearchResultsEventOutput,
    "response.reasoning.fetch_url_queries": pplx_types.FetchUrlQueriesEventOutput,
    "response.reasoning.fetch_url_results": pplx_types.FetchUrlResultsEventOutput,
    "response.reasoning.stopped": pplx_types.ReasoningStoppedEventOutput,
    "response.reasoning.image_search_queries": pplx_types.ImageSearchQueriesEventOutput,
    "response.reasoning.image_search_results": pplx_types.ImageSearchResultsEventOutput,
}

# OpenAI-parity events outside Perplexity's catalogue (spec §7.2) that a stream may carry; the
# Perplexity SDK must still hand them over with their `type` intact (spec §7.1: ignorable).
EXTRA_EVENT_TYPES = {
    "response.content_part.added",
    "response.content_part.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.mcp_call_arguments.delta",
    "response.mcp_call_arguments.done",
    "response.mcp_call.in_progress",
    "response.mcp_call.completed",
    "response.mcp_call.failed",
    "response.mcp_list_tools.in_progress",
    "response.mcp_list_tools.completed",
    "response.mcp_list_tools.failed",
}

# OpenAI-parity fields the Perplexity SDK does not declare on an item (spec decision 11): a
# message's `phase` (`commentary` / `final_answer`, Open Responses 2026-04-24).
OPENAI_PARITY_FIELDS: Mapping[str, set[str]] = {
    "MessageOutputItemOutput": {"phase"},
}


def check_classes(events: Sequence[Any], classes: Mapping[str, type]) -> None:
    """Each event parsed into the class `classes` gives for its type (or is a known extra)."""
    for event in events:
        expected = classes.get(event.type)
        if expected is None:
            assert event.type in EXTRA_EVENT_TYPES, f"unexpected event type {event.type}"
            continue
        assert type(event) is expected, f"{event.type} parsed as {type(event).__name__}"


def exact(item: Any, cls: type[BaseModel]) -> Any:
    """`item` parsed into exactly `cls` and carries no field that `cls` does not declare.

    The SDK models allow unknown fields, so strict validation alone would let a misspelt or extra
    field through; the spec lists every field of the items (§4.1, §4.2, §4.8, §5.3)."""
    assert type(item) is cls, (
        f"{getattr(item, 'type', '?')} parsed as {type(item).__name__}, not {cls.__name__}"
    )
    undeclared = set(item.model_extra or {}) - OPENAI_PARITY_FIELDS.get(cls.__name__, set())
    assert not undeclared, f"{cls.__name__} has fields the SDK does not declare: {item.model_extra}"
    return item


def revalidated(event: Any) -> Any:
    """A Perplexity stream event validated strictly against its catalogued class.

    The strict Perplexity client cannot read a stream with OpenAI-parity events outside its
    catalogue (`response.content_part.*`, spec §7.1: ignorable), so streams are read with the
    default client and each catalogued event is validated here; the known extras are handed back
    as they came."""
    if event.type in EXTRA_EVENT_TYPES:
        return event
    cls = PPLX_EVENT_CLASSES[event.type]
    return cls.model_validate(event.to_dict(mode="json"))
