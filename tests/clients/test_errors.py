"""Errors surface as the SDKs' exception types (spec §6), and run-level failures as
`status: "failed"` with HTTP 200 (spec §5.2)."""

from __future__ import annotations

from typing import Any

import openai
import perplexity
import pytest

from conftest import MODEL, FakeProvider


def error_body(err: Any) -> dict[str, Any]:
    """The `{message, type, code, param?}` object of an SDK status error.

    The Perplexity SDK keeps the whole JSON body (`{"error": {...}}`); the OpenAI SDK keeps the
    inner object."""
    body = err.body
    assert isinstance(body, dict), body
    return body["error"] if "error" in body else body


def test_perplexity_unknown_field_is_bad_request(pplx: perplexity.Perplexity, fake: FakeProvider) -> None:
    with pytest.raises(perplexity.BadRequestError) as raised:
        pplx.responses.create(model=MODEL, input="hi", extra_body={"frobnicate": True})
    err = raised.value
    assert err.status_code == 400
    body = error_body(err)
    assert body["type"] == "invalid_request"
    assert body["code"] == 400
    assert body["param"] == "frobnicate"
    assert "frobnicate" in body["message"]
    assert fake.requests() == []


def test_perplexity_unknown_nested_field_names_its_path(pplx: perplexity.Perplexity, fake: FakeProvider) -> None:
    tool = {
        "type": "function",
        "name": "get_order_status",
        "parameters": {"type": "object", "properties": {}},
        "frobnicate": 1,
    }
    with pytest.raises(perplexity.BadRequestError) as raised:
        pplx.responses.create(model=MODEL, input="hi", tools=[tool])
    body = error_body(raised.value)
    assert "frobnicate" in body["param"], body
    assert body["param"].startswith("tools"), body
    assert fake.requests() == []


def test_openai_unknown_field_is_bad_request(oai: openai.OpenAI, fake: FakeProvider) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        oai.responses.create(model=MODEL, input="hi", extra_body={"frobnicate": True})
    err = raised.value
    assert err.status_code == 400
    assert err.param == "frobnicate"
    assert err.type == "invalid_request"
    assert "frobnicate" in err.message
    assert fake.requests() == []


@pytest.mark.parametrize("sdk", ["perplexity", "openai"])
def test_unconfigured_provider_names_the_variable_to_set(
    sdk: str, pplx: perplexity.Perplexity, oai: openai.OpenAI, fake: FakeProvider
) -> None:
    client: Any = pplx if sdk == "perplexity" else oai
    bad_request = perplexity.BadRequestError if sdk == "perplexity" else openai.BadRequestError
    with pytest.raises(bad_request) as raised:
        client.responses.create(model="xai/x", input="hi", max_output_tokens=64)
    body = error_body(raised.value)
    assert body["type"] == "invalid_model"
    assert "XAI_API_KEY" in body["message"]
    assert fake.requests() == []


@pytest.mark.parametrize("sdk", ["perplexity", "openai"])
def test_retrieve_of_an_unknown_id_is_not_found(
    sdk: str, pplx: perplexity.Perplexity, oai: openai.OpenAI
) -> None:
    client: Any = pplx if sdk == "perplexity" else oai
    not_found = perplexity.NotFoundError if sdk == "perplexity" else openai.NotFoundError
    with pytest.raises(not_found) as raised:
        client.responses.retrieve("resp_00000000-0000-4000-8000-000000000000")
    assert raised.value.status_code == 404
    assert error_body(raised.value)["type"] == "not_found"


@pytest.mark.parametrize("status", [500, 400])
def test_perplexity_provider_error_is_a_failed_response(
    status: int, pplx: perplexity.Perplexity, fake: FakeProvider
) -> None:
    # A 5xx is retried twice before the run fails (a 400 is final): script every attempt.
    attempts = 3 if status >= 500 else 1
    fake.script(*[{"error": [status, "The upstream model is overloaded"]}] * attempts)
    response = pplx.responses.create(model=MODEL, input="hi")  # HTTP 200, no exception
    assert response.status == "failed"
    assert response.error is not None
    assert "The upstream model is overloaded" in response.error.message
    # Spec Decision 10: in-band `code` is a string.
    assert response.error.code is None or isinstance(response.error.code, str)
    assert response.output_text == ""
    assert pplx.responses.retrieve(response.id).to_dict() == response.to_dict()
    fake.assert_all_used()


def test_openai_provider_error_is_a_failed_response(oai: openai.OpenAI, fake: FakeProvider) -> None:
    fake.script(*[{"error": [500, "The upstream model is overloaded"]}] * 3)  # with 2 retries
    response = oai.responses.create(model=MODEL, input="hi")
    assert response.status == "failed"
    assert response.error is not None
    assert "The upstream model is overloaded" in response.error.message
    fake.assert_all_used()


def test_missing_input_is_bad_request(oai: openai.OpenAI, fake: FakeProvider) -> None:
    # The Perplexity SDK refuses to send a body without `input` itself; the OpenAI SDK does not.
    with pytest.raises(openai.BadRequestError) as raised:
        oai.responses.create(model=MODEL)
    assert raised.value.status_code == 400
    assert fake.requests() == []
