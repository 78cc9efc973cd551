"""langchain-openai against agentd: `ChatOpenAI(use_responses_api=True, base_url=<agentd>/v1)`
runs a function tool round trip (`bind_tools`; the caller runs the tool and sends the history
back, or LangChain continues with `previous_response_id` when `use_previous_response_id=True`),
streams (`.stream()`, tool-call chunks and text chunks), and returns structured output
(`with_structured_output(..., method="json_schema")`: `text.format`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from conftest import CLIENT_TIMEOUT_S, MODEL, Agentd, FakeProvider
from support import (
    ORDER_ANSWER,
    ORDER_ARGUMENTS,
    ORDER_QUESTION,
    get_order_status,
    order_answer,
    order_call,
    sent,
    tool_result_message,
)


class Order(BaseModel):
    """An order's status."""

    status: str
    eta: str


STRUCTURED_ANSWER = '{"status":"in_transit","eta":"Friday"}'


@tool("get_order_status")
def get_order_status_tool(order_id: str) -> str:
    """Look up the current status of an internal order by its order ID."""
    return json.dumps(get_order_status(order_id))


@pytest.fixture
def http_client() -> Iterator[httpx.Client]:
    """LangChain's sync OpenAI client rides on this one, closed after the test."""
    with httpx.Client(timeout=CLIENT_TIMEOUT_S) as client:
        yield client


def chat(agentd: Agentd, http_client: httpx.Client, **options: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model=MODEL,
        base_url=agentd.url + "/v1",
        api_key="any",  # type: ignore[arg-type]
        max_retries=0,
        use_responses_api=True,
        http_client=http_client,
        **options,
    )


def run_tools(message: AIMessage) -> list[ToolMessage]:
    return [
        ToolMessage(content=get_order_status_tool.invoke(call["args"]), tool_call_id=call["id"])
        for call in message.tool_calls
    ]


def check_round_trip(fake: FakeProvider) -> None:
    first, second = fake.requests()
    assert first["messages"][-1] == {"role": "user", "content": ORDER_QUESTION}
    assert [tool["function"]["name"] for tool in first["tools"]] == ["get_order_status"]
    assert json.loads(tool_result_message(second)["content"]) == get_order_status("ORD-10042")
    fake.assert_all_used()


def test_tool_round_trip_sending_the_history(agentd: Agentd, http_client: httpx.Client, fake: FakeProvider) -> None:
    fake.script(order_call(), order_answer())
    llm = chat(agentd, http_client).bind_tools([get_order_status_tool])
    history: list[BaseMessage] = [HumanMessage(ORDER_QUESTION)]
    reply = llm.invoke(history)
    assert isinstance(reply, AIMessage)
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("get_order_status", {"order_id": "ORD-10042"})]
    history += [reply, *run_tools(reply)]
    final = llm.invoke(history)
    assert final.text == ORDER_ANSWER
    assert final.usage_metadata is not None
    assert (final.usage_metadata["input_tokens"], final.usage_metadata["output_tokens"]) == (40, 12)
    check_round_trip(fake)
    first, second = sent()
    assert "previous_response_id" not in second


def test_tool_round_trip_with_previous_response_id(
    agentd: Agentd, http_client: httpx.Client, fake: FakeProvider
) -> None:
    fake.script(order_call(), order_answer())
    llm = chat(agentd, http_client, use_previous_response_id=True).bind_tools([get_order_status_tool])
    history: list[BaseMessage] = [HumanMessage(ORDER_QUESTION)]
    reply = llm.invoke(history)
    history += [reply, *run_tools(reply)]
    assert llm.invoke(history).text == ORDER_ANSWER
    check_round_trip(fake)
    first, second = sent()
    assert second["previous_response_id"] == reply.response_metadata["id"]
    assert [item["type"] for item in second["input"]] == ["function_call_output"]


def test_streaming(agentd: Agentd, http_client: httpx.Client, fake: FakeProvider) -> None:
    fake.script(order_call(), {"text_chunks": ["Order ORD-10042 ", "is in transit."]})
    llm = chat(agentd, http_client, streaming=True).bind_tools([get_order_status_tool])
    history: list[BaseMessage] = [HumanMessage(ORDER_QUESTION)]
    chunks = list(llm.stream(history))
    reply = chunks[0]
    for chunk in chunks[1:]:
        reply = reply + chunk
    # The arguments arrive in pieces (argument delta events) and add up.
    pieces = [c["args"] for chunk in chunks for c in chunk.tool_call_chunks if c.get("args")]
    assert "".join(pieces) == ORDER_ARGUMENTS
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("get_order_status", {"order_id": "ORD-10042"})]

    history += [AIMessage(content=reply.content, tool_calls=reply.tool_calls, id=reply.id), *run_tools(reply)]
    texts = [chunk.text for chunk in llm.stream(history)]
    assert "".join(texts) == "Order ORD-10042 is in transit."
    assert sum(1 for text in texts if text) >= 2
    assert all(request["stream"] is True for request in sent())
    check_round_trip(fake)


def test_structured_output(agentd: Agentd, http_client: httpx.Client, fake: FakeProvider) -> None:
    fake.script({"text": STRUCTURED_ANSWER})
    llm = chat(agentd, http_client).with_structured_output(Order, method="json_schema", strict=True)
    assert llm.invoke("Where is order ORD-10042?") == Order(status="in_transit", eta="Friday")
    (request,) = sent()
    assert request["text"]["format"]["type"] == "json_schema"
    (upstream,) = fake.requests()
    assert set(upstream["response_format"]["json_schema"]["schema"]["properties"]) == {"status", "eta"}
