"""The docs' order-status function-calling example, with both SDKs and both continuation styles.

Perplexity documents the round trip on its custom-function / "Give it tools" pages (spec §8.4,
Appendix A.5): the run pauses with a `function_call` item, the caller runs the function and
continues either by replaying the conversation (user message, the `function_call`, a
`function_call_output` with the same `call_id`) or with `previous_response_id` plus the
`function_call_output` (spec Decision 3: both paths give the same result).
"""

from __future__ import annotations

import json
from typing import Any

import openai
import perplexity
from openai.types.responses import Response, ResponseFunctionToolCall
from perplexity.generated.api import FunctionCallOutputItemOutput, ResponsesResponseOutput

from conftest import FakeProvider
from support import (
    ORDER_ANSWER,
    ORDER_ARGUMENTS,
    ORDER_QUESTION,
    ORDER_TOOLS,
    get_order_status,
    order_answer,
    order_call,
    tool_result_message,
)

# The docs' model id; any `openai/<model>` reaches the fake provider.
DOCS_MODEL = "openai/gpt-5.6-sol"
CALL_ID = "call_Ku9yfMSIZWrJBGm2wqCaFF0G"


# --- Perplexity SDK, written the way the docs write it --------------------------------------


def perplexity_first_turn(client: perplexity.Perplexity) -> ResponsesResponseOutput:
    tools = ORDER_TOOLS
    response = client.responses.create(
        model=DOCS_MODEL,
        input=ORDER_QUESTION,
        tools=tools,
    )
    assert isinstance(response, ResponsesResponseOutput)
    # Spec Decision 2: a run paused for custom function calls ends "completed".
    assert response.status == "completed"
    assert response.error is None
    calls = [item for item in response.output if item.type == "function_call"]
    assert len(calls) == 1, response.output
    call = calls[0]
    assert isinstance(call, FunctionCallOutputItemOutput)
    assert call.call_id == CALL_ID
    assert call.name == "get_order_status"
    assert json.loads(call.arguments) == {"order_id": "ORD-10042"}
    assert call.id.startswith("fc_")
    assert call.status == "completed"
    assert response.output_text == ""
    return response


def perplexity_continue_by_replay(client: perplexity.Perplexity, response: Any) -> Any:
    next_input: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": ORDER_QUESTION}]
    for item in response.output:
        if item.type == "function_call":
            result = get_order_status(**json.loads(item.arguments))
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": item.call_id,
                "name": item.name,
                "arguments": item.arguments,
            }
            if item.thought_signature:
                call["thought_signature"] = item.thought_signature
            next_input.append(call)
            next_input.append(
                {"type": "function_call_output", "call_id": item.call_id, "output": json.dumps(result)}
            )
    return client.responses.create(model=DOCS_MODEL, input=next_input, tools=ORDER_TOOLS)


def perplexity_continue_by_previous_response_id(client: perplexity.Perplexity, response: Any) -> Any:
    outputs = [
        {
            "type": "function_call_output",
            "call_id": item.call_id,
            "output": json.dumps(get_order_status(**json.loads(item.arguments))),
        }
        for item in response.output
        if item.type == "function_call"
    ]
    return client.responses.create(
        model=DOCS_MODEL,
        previous_response_id=response.id,
        input=outputs,
        tools=ORDER_TOOLS,
    )


def check_final(final: Any, first: Any) -> None:
    assert final.status == "completed"
    assert final.error is None
    assert final.output_text == ORDER_ANSWER
    assert final.id != first.id
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == (40, 12)


def check_upstream(fake: FakeProvider) -> list[dict[str, Any]]:
    """Two upstream requests; the second carries the tool call and its result."""
    requests = fake.requests()
    assert len(requests) == 2, requests
    first, second = requests
    assert first["messages"] == [{"role": "user", "content": ORDER_QUESTION}]
    assert [tool["function"]["name"] for tool in second["tools"]] == ["get_order_status"]
    assistant = [m for m in second["messages"] if m.get("role") == "assistant"]
    assert len(assistant) == 1
    assert [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in assistant[0]["tool_calls"]
    ] == [(CALL_ID, "get_order_status", {"order_id": "ORD-10042"})]
    tool = tool_result_message(second)
    assert tool["tool_call_id"] == CALL_ID
    assert json.loads(tool["content"]) == get_order_status("ORD-10042")
    fake.assert_all_used()
    return requests


def test_perplexity_order_status_continued_by_replay(pplx: perplexity.Perplexity, fake: FakeProvider) -> None:
    fake.script(order_call(CALL_ID), order_answer())
    first = perplexity_first_turn(pplx)
    final = perplexity_continue_by_replay(pplx, first)
    check_final(final, first)
    check_upstream(fake)


def test_perplexity_order_status_continued_by_previous_response_id(
    pplx: perplexity.Perplexity, fake: FakeProvider
) -> None:
    fake.script(order_call(CALL_ID), order_answer())
    first = perplexity_first_turn(pplx)
    final = perplexity_continue_by_previous_response_id(pplx, first)
    check_final(final, first)
    assert final.previous_response_id == first.id
    check_upstream(fake)


def test_both_continuations_send_the_provider_identical_messages(
    pplx: perplexity.Perplexity, fake: FakeProvider
) -> None:
    fake.script(order_call(CALL_ID), order_answer())
    by_replay = perplexity_continue_by_replay(pplx, perplexity_first_turn(pplx))
    replay_requests = check_upstream(fake)

    fake.reset()
    fake.script(order_call(CALL_ID), order_answer())
    by_id = perplexity_continue_by_previous_response_id(pplx, perplexity_first_turn(pplx))
    id_requests = check_upstream(fake)

    assert by_replay.output_text == by_id.output_text == ORDER_ANSWER
    assert replay_requests[1]["messages"] == id_requests[1]["messages"]
    assert replay_requests[1]["tools"] == id_requests[1]["tools"]


# --- OpenAI SDK, the way OpenAI documents function calling with the Responses API ------------


def openai_first_turn(client: openai.OpenAI, input_list: list[Any]) -> Any:
    response = client.responses.create(model=DOCS_MODEL, tools=ORDER_TOOLS, input=input_list)
    assert isinstance(response, Response)
    assert response.status == "completed"
    calls = [item for item in response.output if item.type == "function_call"]
    assert len(calls) == 1, response.output
    assert isinstance(calls[0], ResponseFunctionToolCall)
    assert calls[0].call_id == CALL_ID
    assert json.loads(calls[0].arguments) == json.loads(ORDER_ARGUMENTS)
    return response


def test_openai_order_status_continued_by_replay(oai: openai.OpenAI, fake: FakeProvider) -> None:
    fake.script(order_call(CALL_ID), order_answer())
    input_list: list[Any] = [{"role": "user", "content": ORDER_QUESTION}]
    response = openai_first_turn(oai, input_list)

    # OpenAI's documented loop: append the model's output items as they are, then the results.
    input_list += response.output
    for item in response.output:
        if item.type == "function_call":
            result = get_order_status(**json.loads(item.arguments))
            input_list.append(
                {"type": "function_call_output", "call_id": item.call_id, "output": json.dumps(result)}
            )
    final = oai.responses.create(model=DOCS_MODEL, tools=ORDER_TOOLS, input=input_list)
    check_final(final, response)
    check_upstream(fake)


def test_openai_order_status_continued_by_previous_response_id(oai: openai.OpenAI, fake: FakeProvider) -> None:
    fake.script(order_call(CALL_ID), order_answer())
    response = openai_first_turn(oai, [{"role": "user", "content": ORDER_QUESTION}])
    call = next(item for item in response.output if item.type == "function_call")
    final = oai.responses.create(
        model=DOCS_MODEL,
        tools=ORDER_TOOLS,
        previous_response_id=response.id,
        input=[
            {
                "type": "function_call_output",
                "call_id": call.call_id,
                "output": json.dumps(get_order_status(**json.loads(call.arguments))),
            }
        ],
    )
    check_final(final, response)
    assert final.previous_response_id == response.id
    check_upstream(fake)


def test_openai_and_perplexity_replays_send_the_same_messages(
    oai: openai.OpenAI, pplx: perplexity.Perplexity, fake: FakeProvider
) -> None:
    fake.script(order_call(CALL_ID), order_answer())
    perplexity_continue_by_replay(pplx, perplexity_first_turn(pplx))
    pplx_requests = check_upstream(fake)

    fake.reset()
    fake.script(order_call(CALL_ID), order_answer())
    input_list: list[Any] = [{"role": "user", "content": ORDER_QUESTION}]
    response = openai_first_turn(oai, input_list)
    input_list += response.output
    input_list.append(
        {
            "type": "function_call_output",
            "call_id": CALL_ID,
            "output": json.dumps(get_order_status("ORD-10042")),
        }
    )
    oai.responses.create(model=DOCS_MODEL, tools=ORDER_TOOLS, input=input_list)
    oai_requests = check_upstream(fake)
    assert pplx_requests[1]["messages"] == oai_requests[1]["messages"]


def test_openai_replay_of_text_and_call_in_one_turn(oai: openai.OpenAI, fake: FakeProvider) -> None:
    """The model says something, then calls the tool: `input += response.output` replays an
    assistant `message` item (output_text parts, ids, status) next to the `function_call`."""
    fake.script(
        {"text": "Let me look that up.", "then_tool_calls": [[CALL_ID, "get_order_status", ORDER_ARGUMENTS]]},
        order_answer(),
    )
    input_list: list[Any] = [{"role": "user", "content": ORDER_QUESTION}]
    response = oai.responses.create(model=DOCS_MODEL, tools=ORDER_TOOLS, input=input_list)
    assert [item.type for item in response.output] == ["message", "function_call"]
    assert response.output_text == "Let me look that up."

    input_list += response.output
    input_list.append(
        {
            "type": "function_call_output",
            "call_id": CALL_ID,
            "output": json.dumps(get_order_status("ORD-10042")),
        }
    )
    final = oai.responses.create(model=DOCS_MODEL, tools=ORDER_TOOLS, input=input_list)
    assert final.output_text == ORDER_ANSWER

    second = fake.requests()[1]
    assistant = [m for m in second["messages"] if m.get("role") == "assistant"]
    assert len(assistant) == 1, second["messages"]
    assert "Let me look that up." in json.dumps(assistant[0]["content"])
    assert assistant[0]["tool_calls"][0]["id"] == CALL_ID
    fake.assert_all_used()


def test_openai_manual_conversation_history(oai: openai.OpenAI, fake: FakeProvider) -> None:
    """OpenAI's conversation-state guide: carry the history by appending the output messages."""
    fake.script({"text": "Knock knock."}, {"text": "Orange you glad?"})
    history: list[Any] = [{"role": "user", "content": "tell me a joke"}]
    response = oai.responses.create(model=DOCS_MODEL, input=history, store=False)
    assert response.output_text == "Knock knock."
    history += [{"role": item.role, "content": item.content} for item in response.output]
    history.append({"role": "user", "content": "Who's there?"})
    second = oai.responses.create(model=DOCS_MODEL, input=history, store=False)
    assert second.output_text == "Orange you glad?"
    upstream = fake.requests()[1]["messages"]
    assert [m["role"] for m in upstream] == ["user", "assistant", "user"]
    assert "Knock knock." in json.dumps(upstream[1]["content"])
    fake.assert_all_used()
