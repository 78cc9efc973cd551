"""pydantic-ai against agentd: an `Agent` on `OpenAIResponsesModel` with an `OpenAIProvider`
whose `AsyncOpenAI` client points at agentd runs a function tool round trip (pydantic-ai runs the
tool and sends the whole message history back, or continues with `previous_response_id` when
`openai_previous_response_id="auto"`), streams (`run_stream`), and returns structured output
(`NativeOutput`: `text.format` with a JSON schema; the default tool-call output mode works on
plain function calls).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any

import openai
import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models.openai import OpenAIResponsesModel, OpenAIResponsesModelSettings
from pydantic_ai.providers.openai import OpenAIProvider

from conftest import MODEL, FakeProvider, WithAsyncOpenAI
from support import (
    ORDER_ANSWER,
    ORDER_QUESTION,
    get_order_status,
    order_answer,
    order_call,
    sent,
    tool_result_message,
)


class Order(BaseModel):
    status: str
    eta: str


STRUCTURED_ANSWER = '{"status":"in_transit","eta":"Friday"}'


def model(client: openai.AsyncOpenAI, **settings: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        MODEL,
        provider=OpenAIProvider(openai_client=client),
        settings=OpenAIResponsesModelSettings(**settings),  # type: ignore[typeddict-item]
    )


def order_agent(client: openai.AsyncOpenAI, calls: list[str], **settings: Any) -> Agent[None, str]:
    agent = Agent(model(client, **settings), instructions="You answer questions about orders.")

    @agent.tool_plain(name="get_order_status")
    def lookup(order_id: str) -> str:
        """Look up the current status of an internal order by its order ID."""
        calls.append(order_id)
        return json.dumps(get_order_status(order_id))

    return agent


def check_round_trip(fake: FakeProvider, calls: list[str]) -> None:
    assert calls == ["ORD-10042"]
    first, second = fake.requests()
    assert first["messages"][-1] == {"role": "user", "content": ORDER_QUESTION}
    assert [tool["function"]["name"] for tool in first["tools"]] == ["get_order_status"]
    assert json.loads(tool_result_message(second)["content"]) == get_order_status("ORD-10042")
    fake.assert_all_used()


def test_tool_round_trip_replaying_the_history(with_async_oai: WithAsyncOpenAI, fake: FakeProvider) -> None:
    fake.script(order_call(), order_answer())
    calls: list[str] = []
    result = with_async_oai(lambda client: order_agent(client, calls).run(ORDER_QUESTION))
    assert result.output == ORDER_ANSWER
    check_round_trip(fake, calls)
    first, second = sent()
    assert "previous_response_id" not in second
    # Easy input messages (no `type`), then the call and its output.
    assert [item.get("type", "message") for item in second["input"]] == [
        "message",
        "function_call",
        "function_call_output",
    ]


def test_tool_round_trip_with_previous_response_id(with_async_oai: WithAsyncOpenAI, fake: FakeProvider) -> None:
    fake.script(order_call(), order_answer())
    calls: list[str] = []
    result = with_async_oai(
        lambda client: order_agent(client, calls, openai_previous_response_id="auto").run(ORDER_QUESTION)
    )
    assert result.output == ORDER_ANSWER
    check_round_trip(fake, calls)
    first, second = sent()
    assert second["previous_response_id"].startswith("resp_")
    assert [item["type"] for item in second["input"]] == ["function_call_output"]


def test_streamed_run(with_async_oai: WithAsyncOpenAI, fake: FakeProvider) -> None:
    fake.script(order_call(), {"text_chunks": ["Order ORD-10042 ", "is in transit."]})
    calls: list[str] = []

    async def run(client: openai.AsyncOpenAI) -> list[str]:
        async with order_agent(client, calls).run_stream(ORDER_QUESTION) as result:
            return [delta async for delta in result.stream_text(delta=True)]

    deltas = with_async_oai(run)
    assert "".join(deltas) == "Order ORD-10042 is in transit."
    check_round_trip(fake, calls)
    assert all(request["stream"] is True for request in sent())


def test_structured_output_native(with_async_oai: WithAsyncOpenAI, fake: FakeProvider) -> None:
    fake.script({"text": STRUCTURED_ANSWER})

    def run(client: openai.AsyncOpenAI) -> Awaitable[Any]:
        agent = Agent(model(client), output_type=NativeOutput(Order))
        return agent.run("Where is order ORD-10042?")

    assert with_async_oai(run).output == Order(status="in_transit", eta="Friday")
    (request,) = sent()
    assert request["text"]["format"]["type"] == "json_schema"
    (upstream,) = fake.requests()
    schema = upstream["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == {"status", "eta"}


def test_structured_output_by_tool_call(with_async_oai: WithAsyncOpenAI, fake: FakeProvider) -> None:
    """pydantic-ai's default output mode: the model calls its `final_result` tool."""
    fake.script({"tool_calls": [["call_final", "final_result", STRUCTURED_ANSWER]]})

    def run(client: openai.AsyncOpenAI) -> Awaitable[Any]:
        return Agent(model(client), output_type=Order).run("Where is order ORD-10042?")

    assert with_async_oai(run).output == Order(status="in_transit", eta="Friday")
    (upstream,) = fake.requests()
    assert [tool["function"]["name"] for tool in upstream["tools"]] == ["final_result"]


def test_truncation_auto_is_refused(with_async_oai: WithAsyncOpenAI, fake: FakeProvider) -> None:
    with pytest.raises(ModelHTTPError) as raised:
        with_async_oai(lambda client: order_agent(client, [], openai_truncation="auto").run(ORDER_QUESTION))
    assert raised.value.status_code == 400
    assert "truncation" in json.dumps(raised.value.body)
    assert fake.requests() == []
