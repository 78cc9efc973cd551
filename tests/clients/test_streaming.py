"""Streaming (`stream=True`) with both SDKs: every event parses into the SDK's typed classes,
the order and invariants of spec §7 hold, and the deltas add up to the final text.

The suite runs with `-W error`, so any warning raised while the SDKs parse an event fails here.
"""

from __future__ import annotations

import json
import time
from typing import Any

import openai
import perplexity
import pytest
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseFailedEvent,
    ResponseFunctionToolCall,
    ResponseInProgressEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)
from perplexity.generated import api as pplx_types

from conftest import MODEL, FakeProvider
from support import (
    ORDER_ANSWER,
    ORDER_ARGUMENTS,
    ORDER_QUESTION,
    ORDER_TOOLS,
    PPLX_EVENT_CLASSES,
    assert_in_order,
    check_classes,
    check_stream_invariants,
    get_order_status,
    order_answer,
    order_call,
    text_deltas,
)

CHUNKS = ["The ", "order ", "is ", "in ", "transit."]
TEXT = "".join(CHUNKS)

TEXT_STREAM_ORDER = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.output_item.done",
    "response.completed",
]


OPENAI_EVENT_CLASSES = {
    "response.created": ResponseCreatedEvent,
    "response.in_progress": ResponseInProgressEvent,
    "response.output_item.added": ResponseOutputItemAddedEvent,
    "response.output_item.done": ResponseOutputItemDoneEvent,
    "response.output_text.delta": ResponseTextDeltaEvent,
    "response.output_text.done": ResponseTextDoneEvent,
    "response.completed": ResponseCompletedEvent,
    "response.failed": ResponseFailedEvent,
}


def test_perplexity_text_stream(pplx: perplexity.Perplexity, fake: FakeProvider) -> None:
    fake.script({"text_chunks": CHUNKS, "usage": [21, 5]})
    stream = pplx.responses.create(model=MODEL, input="Where is my order?", stream=True)
    events = list(stream)

    check_classes(events, PPLX_EVENT_CLASSES)
    check_stream_invariants(events)
    types = [event.type for event in events]
    assert_in_order(types, TEXT_STREAM_ORDER)
    assert types.count("response.output_text.delta") == len(CHUNKS)

    created = events[0]
    assert created.response is not None
    assert created.response.status in ("queued", "in_progress")
    assert created.response.output == []

    message_id = events[types.index("response.output_item.added")].item.id
    for event in events:
        if event.type.startswith("response.output_text."):
            assert event.item_id == message_id
            assert (event.output_index, event.content_index) == (0, 0)

    assert text_deltas(events) == TEXT
    assert events[types.index("response.output_text.done")].text == TEXT
    done_item = events[types.index("response.output_item.done")].item
    assert isinstance(done_item, pplx_types.MessageOutputItemOutput)
    assert done_item.status == "completed"

    final = events[-1].response
    assert isinstance(final, pplx_types.ResponsesResponseOutput)
    assert final.status == "completed"
    assert final.output_text == TEXT
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == (21, 5)
    assert fake.requests()[0]["stream"] is True
    fake.assert_all_used()


def test_openai_text_stream(oai: openai.OpenAI, fake: FakeProvider) -> None:
    fake.script({"text_chunks": CHUNKS, "usage": [21, 5]})
    stream = oai.responses.create(model=MODEL, input="Where is my order?", stream=True)
    events = list(stream)

    check_classes(events, OPENAI_EVENT_CLASSES)
    check_stream_invariants(events)
    types = [event.type for event in events]
    assert_in_order(types, TEXT_STREAM_ORDER)

    assert text_deltas(events) == TEXT
    assert events[types.index("response.output_text.done")].text == TEXT
    done_item = events[types.index("response.output_item.done")].item
    assert isinstance(done_item, ResponseOutputMessage)
    final = events[-1].response
    assert final.status == "completed"
    assert final.output_text == TEXT
    assert final.usage is not None and final.usage.output_tokens == 5
    fake.assert_all_used()


def test_openai_stream_helper_accumulates_the_text(oai: openai.OpenAI, fake: FakeProvider) -> None:
    """`client.responses.stream(...)`, the OpenAI SDK's documented streaming helper, rebuilds
    the response from the events; it needs `response.content_part.added` before the first
    `response.output_text.delta` of a message (OpenAI's event order)."""
    fake.script({"text_chunks": CHUNKS})
    with oai.responses.stream(model=MODEL, input="Where is my order?") as stream:
        snapshots = [event.snapshot for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert snapshots[-1] == TEXT
    assert final.output_text == TEXT
    fake.assert_all_used()


@pytest.mark.parametrize("sdk", ["perplexity", "openai"])
def test_function_call_stream_then_streamed_continuation(
    sdk: str, pplx: perplexity.Perplexity, oai: openai.OpenAI, fake: FakeProvider
) -> None:
    client: Any = pplx if sdk == "perplexity" else oai
    fake.script(order_call(), order_answer())

    events = list(client.responses.create(model=MODEL, input=ORDER_QUESTION, tools=ORDER_TOOLS, stream=True))
    check_stream_invariants(events)
    types = [event.type for event in events]
    assert_in_order(
        types,
        ["response.created", "response.output_item.added", "response.output_item.done", "response.completed"],
    )
    assert "response.output_text.delta" not in types
    added = events[types.index("response.output_item.added")].item
    assert added.type == "function_call"
    # [migration-notes] (spec §4.7): output_item.added for a function_call already carries these;
    # the arguments follow as `response.function_call_arguments.delta` events (OpenAI's order).
    assert (added.call_id, added.name) == ("call_Ku9yfMSIZWrJBGm2wqCaFF0G", "get_order_status")
    streamed = "".join(
        e.delta for e in events if e.type == "response.function_call_arguments.delta"
    )
    assert json.loads(streamed) == json.loads(ORDER_ARGUMENTS)
    arguments_done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert json.loads(arguments_done.arguments) == json.loads(ORDER_ARGUMENTS)
    assert arguments_done.item_id == added.id
    done = events[types.index("response.output_item.done")].item
    if sdk == "openai":
        assert isinstance(done, ResponseFunctionToolCall)
    else:
        assert isinstance(done, pplx_types.FunctionCallOutputItemOutput)
    first = events[-1].response
    assert first.status == "completed"
    assert [item.type for item in first.output] == ["function_call"]

    second = list(
        client.responses.create(
            model=MODEL,
            previous_response_id=first.id,
            tools=ORDER_TOOLS,
            input=[
                {
                    "type": "function_call_output",
                    "call_id": done.call_id,
                    "output": json.dumps(get_order_status("ORD-10042")),
                }
            ],
            stream=True,
        )
    )
    check_stream_invariants(second)
    assert text_deltas(second) == ORDER_ANSWER
    assert second[-1].response.output_text == ORDER_ANSWER
    assert second[-1].response.previous_response_id == first.id
    fake.assert_all_used()


def test_perplexity_provider_error_while_streaming_ends_in_response_failed(
    pplx: perplexity.Perplexity, fake: FakeProvider
) -> None:
    fake.script({"error": [400, "The model refused the request"]})
    events = list(pplx.responses.create(model=MODEL, input="hi", stream=True))
    check_stream_invariants(events)
    failed = events[-1]
    assert failed.type == "response.failed"
    # Spec §6/§7.2: the error sits at the top of the frame; ErrorInfo.code is a string.
    assert isinstance(failed, pplx_types.ResponseFailedEventOutput)
    assert "The model refused the request" in failed.error.message
    assert failed.error.code is None or isinstance(failed.error.code, str)
    stored = pplx.responses.retrieve(events[0].response.id)
    assert stored.status == "failed"
    assert stored.error is not None and stored.error.message == failed.error.message
    fake.assert_all_used()


def test_openai_provider_error_while_streaming_raises_api_error(oai: openai.OpenAI, fake: FakeProvider) -> None:
    """Perplexity's `response.failed` frame has `error` at the top level (spec §6, Appendix A.4).
    The OpenAI SDK raises `openai.APIError` for any stream frame with a top-level `error`
    (openai/_streaming.py, `Stream.__stream__`), so OpenAI SDK users get an exception carrying the
    message instead of a `ResponseFailedEvent`; the events before it still parse, and the stored
    response says `failed`."""
    fake.script({"error": [400, "The model refused the request"]})
    stream = oai.responses.create(model=MODEL, input="hi", stream=True)
    seen: list[Any] = []
    with pytest.raises(openai.APIError) as raised:
        for event in stream:
            seen.append(event)
    assert type(raised.value) is openai.APIError
    assert "The model refused the request" in raised.value.message
    assert [event.type for event in seen][:1] == ["response.created"]
    check_classes(seen, OPENAI_EVENT_CLASSES)
    stored = oai.responses.retrieve(seen[0].response.id)
    assert stored.status == "failed"
    assert stored.error is not None and "The model refused the request" in stored.error.message
    fake.assert_all_used()


def test_perplexity_resume_a_stored_stream(pplx: perplexity.Perplexity, fake: FakeProvider) -> None:
    """Spec decision 7: `retrieve(id, stream=True, starting_after=N)` replays the events after N."""
    fake.script({"text_chunks": CHUNKS})
    events = list(pplx.responses.create(model=MODEL, input="Where is my order?", stream=True))
    cut = events[3].sequence_number
    resumed = list(pplx.responses.retrieve(events[0].response.id, stream=True, starting_after=cut))
    check_classes(resumed, PPLX_EVENT_CLASSES)
    assert [e.sequence_number for e in resumed] == [e.sequence_number for e in events if e.sequence_number > cut]
    assert [e.to_dict() for e in resumed] == [e.to_dict() for e in events[4:]]
    fake.assert_all_used()


def test_background_run_polled_and_cancelled_through_the_sdks(
    pplx: perplexity.Perplexity, oai: openai.OpenAI, fake: FakeProvider
) -> None:
    """Background runs: created `queued`, cancelled with the SDK's cancel call, ending `cancelled`."""
    fake.script({"text_chunks": CHUNKS, "delay_ms": 3000})
    created = pplx.responses.create(model=MODEL, input="Where is my order?", background=True)
    assert created.status == "queued"
    # Spec decision 8: the answer is the response object (plus `response_id`), with its final
    # status once the run has stopped, which both SDK families read.
    ack = pplx.responses.cancel(created.id)
    assert ack.status == "cancelled"
    assert ack.response_id == created.id
    final = oai.responses.retrieve(created.id)
    assert final.status == "cancelled"
    # Cancelling again answers the same response, through the OpenAI SDK's Response type too.
    again = oai.responses.cancel(created.id)
    assert again.id == created.id
    assert again.status == "cancelled"
    assert again.object == "response"
    # A run that completed cannot be cancelled.
    fake.reset()
    fake.script({"text": "done"})
    done = pplx.responses.create(model=MODEL, input="Where is my order?")
    with pytest.raises(perplexity.BadRequestError):
        pplx.responses.cancel(done.id)
    with pytest.raises(openai.BadRequestError):
        oai.responses.cancel(done.id)
    with pytest.raises(perplexity.NotFoundError):
        pplx.responses.cancel("resp_does_not_exist")
    # The run may have been cancelled before or after it reached the model.
    fake.reset()
