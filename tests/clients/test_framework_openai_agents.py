"""The OpenAI Agents SDK for Python (`openai-agents`) against agentd: an `Agent` on an
`OpenAIResponsesModel` whose `AsyncOpenAI` client points at agentd runs a function tool round
trip (the SDK runs the tool and replays the conversation, or continues with
`previous_response_id`), streams (`Runner.run_streamed`), and returns structured output
(`output_type`).

Tracing is off (`set_tracing_disabled`): it would export to OpenAI's servers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any

import openai
import pytest
from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from openai.types.responses import ResponseFunctionCallArgumentsDeltaEvent, ResponseTextDeltaEvent
from pydantic import BaseModel

from conftest import MODEL, FakeProvider, WithAsyncOpenAI
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

set_tracing_disabled(True)


class Order(BaseModel):
    status: str
    eta: str


STRUCTURED_ANSWER = '{"status":"in_transit","eta":"Friday"}'


def order_agent(client: openai.AsyncOpenAI, calls: list[str], **settings: Any) -> Agent:
    @function_tool
    def get_order_status_tool(order_id: str) -> str:
        """Look up the current status of an internal order by its order ID."""
        calls.append(order_id)
        return json.dumps(get_order_status(order_id))

    get_order_status_tool.name = "get_order_status"
    return Agent(
        name="orders",
        instructions="You answer questions about orders.",
        tools=[get_order_status_tool],
        model=OpenAIResponsesModel(MODEL, client),
        model_settings=ModelSettings(**settings),
    )


def check_second_turn(fake: FakeProvider) -> None:
    first, second = fake.requests()
    assert first["messages"][-1] == {"role": "user", "content": ORDER_QUESTION}
    assert [tool["function"]["name"] for tool in first["tools"]] == ["get_order_status"]
    assert json.loads(tool_result_message(second)["content"]) == get_order_status("ORD-10042")
    fake.assert_all_used()


def test_tool_round_trip_replaying_the_conversation(with_async_oai: WithAsyncOpenAI, fake: FakeProvider) -> None:
    fake.script(order_call(), order_answer())
    calls: list[str] = []
    result = with_async_oai(lambda client: Runner.run(order_agent(client, calls), ORDER_QUESTION))
    assert result.final_output == ORDER_ANSWER
    assert calls == ["ORD-10042"]
    check_second_turn(fake)
    # The SDK replays the whole conversation (no previous_response_id), items and all.
    first, second = sent()
    assert "previous_response_id" not in second
    kinds = [item.get("type", "message") for item in second["input"]]
    assert kinds == ["message", "function_call", "function_call_output"], second["input"]


def test_tool_round_trip_with_previous_response_id(with_async_oai: WithAsyncOpenAI, fake: FakeProvider) -> None:
    fake.script(order_call(), order_answer())
    calls: list[str] = []
    result = with_async_oai(
        lambda client: Runner.run(order_agent(client, calls), ORDER_QUESTION, auto_previous_response_id=True)
    )
    assert result.final_output == ORDER_ANSWER
    assert calls == ["ORD-10042"]
    check_second_turn(fake)
    first, second = sent()
    assert second["previous_response_id"] == result.raw_responses[0].response_id
    assert [item["type"] for item in second["input"]] == ["function_call_output"]


def test_streamed_run(with_async_oai: WithAsyncOpenAI, fake: FakeProvider) -> None:
    fake.script(order_call(), {"text_chunks": ["Order ORD-10042 ", "is in transit."]})
    calls: list[str] = []

    async def run(client: openai.AsyncOpenAI) -> tuple[Any, list[Any]]:
        result = Runner.run_streamed(order_agent(client, calls), ORDER_QUESTION)
        raw = [event.data async for event in result.stream_events() if event.type == "raw_response_event"]
        return result, raw

    result, raw = with_async_oai(run)
    assert result.final_output == "Order ORD-10042 is in transit."
    assert calls == ["ORD-10042"]
    arguments = "".join(e.delta for e in raw if isinstance(e, ResponseFunctionCallArgumentsDeltaEvent))
    assert arguments == ORDER_ARGUMENTS
    text = "".join(e.delta for e in raw if isinstance(e, ResponseTextDeltaEvent))
    assert text == "Order ORD-10042 is in transit."
    assert [e.type for e in raw].count("response.completed") == 2
    assert all(request["stream"] is True for request in sent())
    fake.assert_all_used()


def test_structured_output(with_async_oai: WithAsyncOpenAI, fake: FakeProvider) -> None:
    fake.script({"text": STRUCTURED_ANSWER})

    def run(client: openai.AsyncOpenAI) -> Awaitable[Any]:
        agent = Agent(
            name="orders",
            instructions="Answer with the order's status.",
            model=OpenAIResponsesModel(MODEL, client),
            output_type=Order,
        )
        return Runner.run(agent, "Where is order ORD-10042?")

    result = with_async_oai(run)
    assert result.final_output == Order(status="in_transit", eta="Friday")
    (request,) = sent()
    assert request["text"]["format"]["type"] == "json_schema"
    (upstream,) = fake.requests()
    schema = upstream["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == {"status", "eta"}


def test_model_settings_applied_or_refused(with_async_oai: WithAsyncOpenAI, fake: FakeProvider) -> None:
    """`ModelSettings` the Responses API takes reach the model; `truncation="auto"`, which
    agentd does not do, is refused with a 400 naming the field, which the run raises."""
    fake.script(order_call(), order_answer())
    calls: list[str] = []
    settings = {"temperature": 0.25, "top_p": 0.5, "max_tokens": 300, "store": False, "parallel_tool_calls": False}
    result = with_async_oai(lambda client: Runner.run(order_agent(client, calls, **settings), ORDER_QUESTION))
    assert result.final_output == ORDER_ANSWER
    for request in sent():
        assert (request["temperature"], request["top_p"], request["max_output_tokens"]) == (0.25, 0.5, 300)
        assert request["store"] is False
    for upstream in fake.requests():
        assert (upstream["temperature"], upstream["top_p"]) == (0.25, 0.5)
        assert upstream["parallel_tool_calls"] is False
        assert 300 in (upstream.get("max_tokens"), upstream.get("max_completion_tokens")), upstream

    fake.reset()
    with pytest.raises(openai.BadRequestError) as raised:
        with_async_oai(lambda client: Runner.run(order_agent(client, calls, truncation="auto"), ORDER_QUESTION))
    assert raised.value.param == "truncation"
    assert fake.requests() == []
