"""Schemathesis against agentd's own `/openapi.json` (generated from the wire types,
crates/server/src/openapi): every operation of the document, with requests generated from its
schemas (valid ones and, for the request bodies, invalid ones too), sent to a dedicated agentd
whose models reach the fake provider.

What must hold for every answer:
- no 5xx (`not_a_server_error`);
- the status code, the content type, the headers and the body are the ones the document
  declares for that operation (`status_code_conformance`, `content_type_conformance`,
  `response_headers_conformance`, `response_schema_conformance`);
- an error (4xx) is the JSON error envelope `{"error": {"message", "type", ...}}`
  (`error_envelope` below), whatever was wrong with the request;
- a request the document forbids is not accepted (`negative_data_rejection`).

Not checked: that every request the document allows is accepted (`positive_data_acceptance`).
The document gives the shapes of the wire types; the limits the server checks after parsing
(protocol/src/validate.rs: `input` not empty, `models` 1 to 5 entries, `max_steps` 1 to 100,
one of `model`/`models`/`preset`/`effort`, search filters, ...) are refused with a 400 naming
the field, which the envelope check covers. So are integers written with a fraction (`5.0`),
which JSON Schema counts as integers and agentd's strict parser refuses.

Bounded for CI: a fixed number of examples per operation and a derandomized (seeded) Hypothesis
run, so every run sends the same requests; `AGENTD_SCHEMATHESIS_EXAMPLES=N` sends more.

The dedicated agentd has the fake provider configured with `max_retries = 0`: a generated
request that passes validation reaches the fake, which (queue empty) answers 500; the run then
ends `failed` at once, an answer the document describes, instead of waiting on retries.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from schemathesis import GenerationMode
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import checks
from schemathesis.checks import CheckContext

from conftest import Agentd, FakeProvider, start_agentd

EXAMPLES = int(os.environ.get("AGENTD_SCHEMATHESIS_EXAMPLES", "30"))

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
]


@schemathesis.check
def error_envelope(ctx: CheckContext, response: schemathesis.Response, case: schemathesis.Case) -> bool | None:
    """Every 4xx/5xx answer is the JSON error envelope with a message and a type."""
    if response.status_code < 400:
        return None
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.startswith("application/json"), (
        f"a {response.status_code} answered as {content_type!r}: {response.text[:200]!r}"
    )
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), f"not the envelope: {body}"
    error = body["error"]
    assert isinstance(error.get("message"), str) and error["message"], f"no message: {body}"
    assert isinstance(error.get("type"), str) and error["type"], f"no type: {body}"
    return True


@pytest.fixture(scope="module")
def schema_agentd(
    tmp_path_factory: pytest.TempPathFactory, logs_dir: Path, fake_provider: FakeProvider
) -> Iterator[Agentd]:
    config = tmp_path_factory.mktemp("schemathesis-config") / "agentd.toml"
    # A section with only these lines applies to the provider the environment configures.
    config.write_text("[providers.openai]\nmax_retries = 0\n")
    server = start_agentd(
        "agentd-schemathesis",
        tmp_path_factory.mktemp("agentd-schemathesis-data"),
        logs_dir,
        fake_provider,
        extra_env={"AGENTD_CONFIG": str(config)},
    )
    yield server
    server.stop()


def operations(agentd: Agentd) -> list[schemathesis.APIOperation]:
    document = httpx.get(f"{agentd.direct_url}/openapi.json", timeout=30).raise_for_status().json()
    schema = schemathesis.openapi.from_dict(document)
    found = [result.ok() for result in schema.get_all_operations()]
    assert len(found) >= 10, f"the document has only {len(found)} operations"
    return found


def exercise(operation: schemathesis.APIOperation, mode: GenerationMode, base_url: str) -> list[str]:
    """Sends `EXAMPLES` generated requests for one operation; the distinct failures, each with
    a request that shows it (generation goes on after a failure, so one run lists them all)."""
    failures: dict[str, str] = {}

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        # No shrinking: each example is an HTTP round trip; the failing request is reported.
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: schemathesis.Case) -> None:
        try:
            case.call_and_validate(
                base_url=base_url, checks=CHECKS, additional_checks=[error_envelope], timeout=60
            )
        except (Exception, BaseExceptionGroup) as err:  # noqa: BLE001 - reported below
            text = str(err)
            key = "\n".join(line for line in text.splitlines() if line.strip().startswith(("-", "`{")))
            failures.setdefault(key or text, f"{text.strip()}\n  request: {case.as_curl_command()}")

    try:
        run()
    except Unsatisfiable:
        # Nothing to negate: an operation without parameters or body has no invalid request.
        assert mode is GenerationMode.NEGATIVE, f"{operation.label}: no request could be generated"
    return list(failures.values())


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
def test_every_answer_matches_the_document(
    mode: GenerationMode, schema_agentd: Agentd, fake_provider: FakeProvider
) -> None:
    fake_provider.reset()
    failures = []
    for operation in operations(schema_agentd):
        for found in exercise(operation, mode, schema_agentd.direct_url):
            failures.append(f"{operation.label}: {found}")
    assert not failures, "\n\n".join(failures)
