"""The official SDKs against agentd running models of every wire API: the same conversation with
an Anthropic Messages and a Gemini upstream (the fake provider speaks each by route)."""

from __future__ import annotations

import json

import openai
import perplexity
import pytest

from conftest import PROVIDER_KEY, FakeProvider
from support import ORDER_ANSWER, ORDER_ARGUMENTS, ORDER_QUESTION, ORDER_TOOLS, order_answer, order_call

MODELS = ["anthropic/claude-sonnet-4-5", "google/gemini-2.5-flash"]


def tool_result_sent(model: str, body: dict) -> str:
    """The function result as the upstream's second request carries it."""
    if model.startswith("anthropic/"):
        (result,) = [
            block
            for turn in body["messages"]
            for block in turn["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
        return result["content"]
    (part,) = [
        part for content in body["contents"] for part in content["parts"] if "functionResponse" in part
    ]
    return json.dumps(part["functionResponse"]["response"]["result"], separators=(",", ":"))


@pytest.mark.parametrize("model", MODELS)
def test_the_order_status_example_runs_on_each_upstream(
    model: str, pplx: perplexity.Perplexity, fake: FakeProvider
) -> None:
    fake.script(order_call("call_1"), order_answer())
    first = pplx.responses.create(model=model, input=ORDER_QUESTION, tools=ORDER_TOOLS)
    assert first.status == "completed"
    assert first.model == model
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_order_status"
    assert json.loads(call.arguments) == json.loads(ORDER_ARGUMENTS)

    result = json.dumps({"order_id": "ORD-10042", "status": "in_transit"}, separators=(",", ":"))
    second = pplx.responses.create(
        model=model,
        previous_response_id=first.id,
        tools=ORDER_TOOLS,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": result}],
    )
    assert second.status == "completed"
    assert second.output_text == ORDER_ANSWER
    assert second.usage.input_tokens == 40

    first_sent, second_sent = fake.requests()
    if model.startswith("anthropic/"):
        assert first_sent["model"] == "claude-sonnet-4-5" and "max_tokens" in first_sent
    else:
        assert "contents" in first_sent and "model" not in first_sent
    assert tool_result_sent(model, second_sent) == result
    for headers in fake.headers():
        assert PROVIDER_KEY in headers.values(), "the key travels in the wire's own header"
        assert "authorization" not in headers


@pytest.mark.parametrize("model", MODELS)
def test_openai_sdk_streams_from_each_upstream(model: str, oai: openai.OpenAI, fake: FakeProvider) -> None:
    fake.script({"text": "Streaming from another wire."})
    deltas = []
    with oai.responses.stream(model=model, input="hi") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()
    assert len(deltas) > 1, "the answer arrives in pieces"
    assert "".join(deltas) == "Streaming from another wire."
    assert final.output_text == "Streaming from another wire."
    assert final.model == model


def test_a_file_anthropic_cannot_read_is_a_bad_request(pplx: perplexity.Perplexity, fake: FakeProvider) -> None:
    docx = "data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64,UEsDBBQ="
    with pytest.raises(perplexity.BadRequestError) as raised:
        pplx.responses.create(
            model="anthropic/claude-sonnet-4-5",
            input=[
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "Summarise this."},
                        {"type": "input_file", "filename": "notes.docx", "file_data": docx},
                    ],
                }
            ],
        )
    assert raised.value.status_code == 400
    error = raised.value.body["error"]
    assert error["param"] == "input"
    assert "notes.docx" in error["message"]
    assert fake.requests() == []
