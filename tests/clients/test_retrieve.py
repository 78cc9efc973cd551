"""`client.responses.retrieve(id)` returns the stored object, equal to what create returned."""

from __future__ import annotations

import httpx
import openai
import perplexity
import pytest

from conftest import MODEL, FakeProvider
from support import ORDER_QUESTION, ORDER_TOOLS, order_call


def test_perplexity_retrieve_equals_create(pplx: perplexity.Perplexity, fake: FakeProvider) -> None:
    fake.script({"text": "Stored answer.", "usage": [7, 2]})
    created = pplx.responses.create(model=MODEL, input="remember this")
    retrieved = pplx.responses.retrieve(created.id)
    assert type(retrieved) is type(created)
    assert retrieved.to_dict() == created.to_dict()
    assert retrieved.output_text == "Stored answer."
    assert retrieved.store is not False
    fake.assert_all_used()


def test_perplexity_retrieve_of_a_paused_function_call(pplx: perplexity.Perplexity, fake: FakeProvider) -> None:
    fake.script(order_call())
    created = pplx.responses.create(model=MODEL, input=ORDER_QUESTION, tools=ORDER_TOOLS)
    retrieved = pplx.responses.retrieve(created.id)
    assert retrieved.to_dict() == created.to_dict()
    assert [item.type for item in retrieved.output] == ["function_call"]


def test_perplexity_retrieve_equals_the_streamed_final_snapshot(
    pplx: perplexity.Perplexity, fake: FakeProvider
) -> None:
    fake.script({"text": "Streamed and stored."})
    events = list(pplx.responses.create(model=MODEL, input="hi", stream=True))
    final = events[-1].response
    retrieved = pplx.responses.retrieve(final.id)
    assert retrieved.to_dict() == final.to_dict()


def test_openai_retrieve_equals_create(oai: openai.OpenAI, fake: FakeProvider) -> None:
    fake.script({"text": "Stored answer.", "usage": [7, 2]})
    created = oai.responses.create(model=MODEL, input="remember this")
    retrieved = oai.responses.retrieve(created.id)
    assert type(retrieved) is type(created)
    assert retrieved.to_dict() == created.to_dict()
    assert retrieved.output_text == "Stored answer."
    fake.assert_all_used()


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/agent"])
def test_both_paths_serve_the_same_stored_object(
    path: str, pplx: perplexity.Perplexity, http: httpx.Client, fake: FakeProvider
) -> None:
    """Spec Decision 1: `/v1/agent` and `/v1/responses` are one API."""
    fake.script({"text": "Same either way."})
    created = pplx.responses.with_raw_response.create(model=MODEL, input="hi")
    body = created.http_response.json()
    raw = http.get(f"{path}/{body['id']}")
    assert raw.status_code == 200
    assert raw.json() == body


def test_store_false_is_not_retrievable(pplx: perplexity.Perplexity, fake: FakeProvider) -> None:
    """Spec §3: `store: false` responses are not visible to retrieve (404)."""
    fake.script({"text": "Forget me."})
    created = pplx.responses.create(model=MODEL, input="hi", store=False)
    assert created.store is False
    with pytest.raises(perplexity.NotFoundError):
        pplx.responses.retrieve(created.id)
