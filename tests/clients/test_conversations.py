"""The rest of the OpenAI Responses surface with the official `openai` SDK (strict validation):
the Conversations API (`client.conversations…`, `conversation=` on create), the OpenAI Agents
SDK's `OpenAIConversationsSession` end to end, `responses.delete` and
`responses.input_items.list` (auto-paginated), `responses.compact` and a chain continued from
its output, and WebSocket mode (`client.responses.connect()`), every WebSocket message checked
against the Open Responses document.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from agents import Agent, OpenAIConversationsSession, OpenAIResponsesModel, Runner, set_tracing_disabled

from conftest import MODEL, Agentd, FakeProvider, WithAsyncOpenAI
from openresponses import Validator
from support import check_stream_invariants

set_tracing_disabled(True)


def upstream_texts(request: dict[str, Any]) -> list[str]:
    """`role:text` of each message agentd sent the model."""
    texts = []
    for message in request["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        texts.append(f"{message['role']}:{content}")
    return texts


def test_the_conversations_api_with_the_openai_sdk(strict_oai: openai.OpenAI, fake: FakeProvider) -> None:
    conversation = strict_oai.conversations.create(
        items=[{"type": "message", "role": "user", "content": "My name is Ada."}],
        metadata={"topic": "names"},
    )
    assert conversation.id.startswith("conv_") and conversation.object == "conversation"
    assert strict_oai.conversations.retrieve(conversation.id).metadata == {"topic": "names"}
    updated = strict_oai.conversations.update(conversation.id, metadata={"topic": "ada"})
    assert updated.metadata == {"topic": "ada"}

    fake.script({"text": "Hello Ada."})
    response = strict_oai.responses.create(model=MODEL, input="Hi!", conversation=conversation.id)
    assert response.conversation is not None and response.conversation.id == conversation.id
    assert upstream_texts(fake.requests()[-1]) == ["user:My name is Ada.", "user:Hi!"]

    added = strict_oai.conversations.items.create(
        conversation.id, items=[{"type": "message", "role": "user", "content": "A note."}]
    )
    assert [item.type for item in added.data] == ["message"]
    # Auto-pagination walks `after` / `has_more` two items at a time.
    items = list(strict_oai.conversations.items.list(conversation.id, limit=2, order="asc"))
    assert [(item.type, item.role) for item in items] == [
        ("message", "user"),
        ("message", "user"),
        ("message", "assistant"),
        ("message", "user"),
    ]
    assert items[2].content[0].type == "output_text" and items[2].content[0].text == "Hello Ada."
    one = strict_oai.conversations.items.retrieve(items[3].id, conversation_id=conversation.id)
    assert one.id == items[3].id
    after_delete = strict_oai.conversations.items.delete(items[3].id, conversation_id=conversation.id)
    assert after_delete.id == conversation.id
    assert len(list(strict_oai.conversations.items.list(conversation.id))) == 3

    fake.script({"text": "x"})
    with pytest.raises(openai.BadRequestError) as refused:
        strict_oai.responses.create(
            model=MODEL, input="x", conversation=conversation.id, previous_response_id=response.id
        )
    assert refused.value.body["param"] == "conversation"

    deleted = strict_oai.conversations.delete(conversation.id)
    assert deleted.deleted is True and deleted.object == "conversation.deleted"
    with pytest.raises(openai.NotFoundError):
        strict_oai.conversations.retrieve(conversation.id)


def test_the_agents_sdk_keeps_a_session_in_an_openai_conversation(
    with_async_oai: WithAsyncOpenAI, fake: FakeProvider
) -> None:
    fake.script({"text": "Nice to meet you, Ada."}, {"text": "Your name is Ada."})

    async def body(client: openai.AsyncOpenAI) -> tuple[list[str], list[Any], list[Any]]:
        session = OpenAIConversationsSession(openai_client=client)
        agent = Agent(name="memory", instructions="Be brief.", model=OpenAIResponsesModel(MODEL, client))
        first = await Runner.run(agent, "My name is Ada.", session=session)
        second = await Runner.run(agent, "What is my name?", session=session)
        items = await session.get_items()
        last_two = await session.get_items(limit=2)
        popped = await session.pop_item()
        after_pop = await session.get_items()
        await session.clear_session()
        return [first.final_output, second.final_output], items, [last_two, popped, after_pop]

    outputs, items, (last_two, popped, after_pop) = with_async_oai(body)
    assert outputs == ["Nice to meet you, Ada.", "Your name is Ada."]
    # The second turn was sent the first from the conversation.
    assert upstream_texts(fake.requests()[1]) == [
        "system:Be brief.",
        "user:My name is Ada.",
        "assistant:Nice to meet you, Ada.",
        "user:What is my name?",
    ]
    assert [item["role"] for item in items] == ["user", "assistant", "user", "assistant"]
    assert [item["role"] for item in last_two] == ["user", "assistant"]
    assert popped is not None and popped["role"] == "assistant"
    assert len(after_pop) == 3


def test_responses_are_deleted_and_their_input_items_listed(strict_oai: openai.OpenAI, fake: FakeProvider) -> None:
    fake.script({"text": "ok"})
    response = strict_oai.responses.create(
        model=MODEL,
        input=[
            {"role": "user", "content": "one"},
            {"role": "user", "content": "two"},
            {"role": "user", "content": "three"},
        ],
    )
    items = list(strict_oai.responses.input_items.list(response.id, limit=2, order="asc"))
    assert [item.content[0].text for item in items] == ["one", "two", "three"]
    assert all(item.id.startswith("msg_") for item in items)
    deleted = strict_oai.responses.delete(response.id)
    assert deleted is None  # the SDK returns nothing for a 200 delete
    with pytest.raises(openai.NotFoundError):
        strict_oai.responses.retrieve(response.id)
    with pytest.raises(openai.NotFoundError):
        strict_oai.responses.delete(response.id)


def test_compact_and_continue_from_the_summary(oai: openai.OpenAI, fake: FakeProvider) -> None:
    # Not strict: the SDK types `CompactedResponse.output` as output items, whose message is an
    # assistant's, while the compacted output holds the user's messages (as OpenAI's does).
    fake.script({"text": "Paris is the capital."}, {"text": "Ada asked about Paris."}, {"text": "About 105 km²."})
    first = oai.responses.create(model=MODEL, input="Capital of France?")
    raw = oai.responses.with_raw_response.compact(model=MODEL, previous_response_id=first.id)
    compacted = raw.parse()
    assert compacted.object == "response.compaction"
    assert [item.type for item in compacted.output] == ["message", "compaction"]
    assert compacted.usage.total_tokens == compacted.usage.input_tokens + compacted.usage.output_tokens
    follow_up = json.loads(raw.text)["output"]
    follow_up.append({"role": "user", "content": "And its area?"})
    answer = oai.responses.create(model=MODEL, input=follow_up)
    assert answer.output_text == "About 105 km²."
    sent = upstream_texts(fake.requests()[-1])
    assert sent == [
        "user:Capital of France?",
        "user:Summary of the conversation so far:\n\nAda asked about Paris.",
        "user:And its area?",
    ]
    with pytest.raises(openai.BadRequestError) as refused:
        oai.post("/responses/compact", body={"input": "x"}, cast_to=object)
    assert refused.value.body["param"] == "model"


def test_websocket_mode_with_the_openai_sdk(agentd: Agentd, fake: FakeProvider) -> None:
    validator = Validator()
    client = openai.OpenAI(base_url=agentd.direct_url + "/v1", api_key="any", max_retries=0)
    fake.script({"text_chunks": ["Hello ", "Ada."]}, {"text": "Your name is Ada."})

    def turn(connection: Any, **body: Any) -> list[dict[str, Any]]:
        connection.response.create(**body)
        events = []
        while True:
            event = json.loads(connection.recv_bytes())
            assert event["type"] != "error", event
            events.append(event)
            failures = validator.event(event) or []
            assert not failures, failures
            if event["type"] in ("response.completed", "response.failed", "response.incomplete"):
                return events

    with client.responses.connect(max_retries=0) as connection:
        first = turn(connection, model=MODEL, input="I am Ada.", store=False)
        check_stream_invariants([connection.parse_event(json.dumps(e)) for e in first])
        assert "".join(e["delta"] for e in first if e["type"] == "response.output_text.delta") == "Hello Ada."
        first_id = first[-1]["response"]["id"]
        # The next turn on the connection continues a store: false response it made.
        second = turn(connection, model=MODEL, input="Who am I?", previous_response_id=first_id)
        assert second[-1]["response"]["output"][0]["content"][0]["text"] == "Your name is Ada."
        assert upstream_texts(fake.requests()[-1])[1] == "assistant:Hello Ada."
        # An error message keeps the connection open.
        connection.send({"type": "response.create", "model": MODEL, "input": "x", "stream": True})
        error = json.loads(connection.recv_bytes())
        assert error["type"] == "error" and error["error"]["param"] == "stream", error
        assert error["status"] == 400

    # Another connection cannot continue that store: false response.
    with client.responses.connect(max_retries=0) as other:
        other.send({"type": "response.create", "model": MODEL, "input": "x", "previous_response_id": first_id})
        error = json.loads(other.recv_bytes())
        assert error["error"]["code"] == "previous_response_not_found", error
    assert validator.validated["response.completed"] == 2
