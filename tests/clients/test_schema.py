"""agentd's objects validate against the SDKs' own types, not just parse loosely.

By default both SDKs build response models without validation, so a missing or mistyped field
goes unnoticed until a caller touches it. With `_strict_response_validation=True` the SDKs
validate every response and raise `APIResponseValidationError` on a mismatch: the check here.
Perplexity's types are the wire contract (spec "How to read this"); OpenAI's are the target of
Decision 11 (OpenAI SDKs deserialize cleanly).
"""

from __future__ import annotations

import json
from typing import Any, get_args

import httpx
import openai
import perplexity
import pytest
from openai.types.responses import ResponseStreamEvent

from conftest import MODEL, FakeProvider
from support import ORDER_QUESTION, ORDER_TOOLS, PPLX_EVENT_CLASSES, order_call


# OpenAI's stream event classes, by type (ResponseStreamEvent is Annotated[Union[...], discriminator]).
OPENAI_EVENT_CLASSES = {
    get_args(cls.model_fields["type"].annotation)[0]: cls
    for cls in get_args(get_args(ResponseStreamEvent)[0])
}

SCENARIOS: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "text": ([{"text": "Hello there.", "usage": [12, 3]}], {"input": "hi"}),
    "function_call": ([order_call()], {"input": ORDER_QUESTION, "tools": ORDER_TOOLS}),
    # Retried twice before the run fails.
    "provider_error": ([{"error": [500, "upstream down"]}] * 3, {"input": "hi"}),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_perplexity_types_accept_create_and_retrieve(
    scenario: str, strict_pplx: perplexity.Perplexity, fake: FakeProvider
) -> None:
    replies, request = SCENARIOS[scenario]
    fake.script(*replies)
    created = strict_pplx.responses.create(model=MODEL, **request)
    assert strict_pplx.responses.retrieve(created.id).id == created.id


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_openai_types_accept_create_and_retrieve(
    scenario: str, strict_oai: openai.OpenAI, fake: FakeProvider
) -> None:
    replies, request = SCENARIOS[scenario]
    fake.script(*replies)
    created = strict_oai.responses.create(model=MODEL, **request)
    assert strict_oai.responses.retrieve(created.id).id == created.id


def raw_events(http: httpx.Client, request: dict[str, Any]) -> list[dict[str, Any]]:
    with http.stream("POST", "/v1/responses", json={"model": MODEL, "stream": True, **request}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return [json.loads(line[len("data:") :]) for line in response.iter_lines() if line.startswith("data:")]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_perplexity_types_accept_every_catalogued_event(
    scenario: str, http: httpx.Client, fake: FakeProvider
) -> None:
    replies, request = SCENARIOS[scenario]
    fake.script(*replies)
    for event in raw_events(http, request):
        cls = PPLX_EVENT_CLASSES.get(event["type"])
        if cls is not None:  # other types are ignorable by spec §7.1
            cls.model_validate(event)


@pytest.mark.parametrize("scenario", ["text", "function_call"])
def test_openai_types_accept_every_event(scenario: str, http: httpx.Client, fake: FakeProvider) -> None:
    replies, request = SCENARIOS[scenario]
    fake.script(*replies)
    for event in raw_events(http, request):
        cls = OPENAI_EVENT_CLASSES.get(event["type"])
        assert cls is not None, f"OpenAI has no event type {event['type']}"
        cls.model_validate(event)
