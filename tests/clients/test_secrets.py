"""The provider key never leaves agentd: not in its logs, not in stored data, not in any body it
returns. Marked `last`: it checks what every earlier test of the session left behind."""

from __future__ import annotations

import json

import httpx
import pytest

from conftest import MODEL, PROVIDER_KEY, Agentd, FakeProvider

pytestmark = pytest.mark.last

# What OpenAI answers for a bad key, and what some gateways echo: the key in the error text.
ECHOING_ERROR = f"Incorrect API key provided: {PROVIDER_KEY}. You can find your API key at example."


def test_the_key_is_what_agentd_sends_upstream(http: httpx.Client, fake: FakeProvider) -> None:
    """Makes the checks below meaningful: agentd really holds and uses this key."""
    fake.script({"text": "ok"})
    assert http.post("/v1/responses", json={"model": MODEL, "input": "hi"}).status_code == 200
    assert fake.headers()[0]["authorization"] == f"Bearer {PROVIDER_KEY}"


@pytest.mark.parametrize("status", [401, 500])
def test_an_upstream_error_echoing_the_key_does_not_leak_it(
    status: int, http: httpx.Client, fake: FakeProvider
) -> None:
    # Two requests; a 500 is retried twice before the run fails, a 401 is final.
    attempts = 2 * (3 if status >= 500 else 1)
    fake.script(*[{"error": [status, ECHOING_ERROR]}] * attempts)

    created = http.post("/v1/responses", json={"model": MODEL, "input": "hi"})
    assert created.status_code == 200
    assert PROVIDER_KEY not in created.text
    body = created.json()
    assert body["status"] == "failed"
    assert "Incorrect API key provided" in body["error"]["message"]

    streamed = http.post("/v1/responses", json={"model": MODEL, "input": "hi", "stream": True})
    assert streamed.status_code == 200
    assert PROVIDER_KEY not in streamed.text
    assert '"response.failed"' in streamed.text

    first_event = next(line for line in streamed.text.splitlines() if line.startswith("data:"))
    streamed_id = json.loads(first_event[len("data:") :])["response"]["id"]
    for response_id in (body["id"], streamed_id):
        for path in ("/v1/responses", "/v1/agent"):
            stored = http.get(f"{path}/{response_id}")
            assert stored.status_code == 200
            assert PROVIDER_KEY not in stored.text
    fake.assert_all_used()


def test_no_key_in_logs_or_stored_data(agentd: Agentd) -> None:
    log = agentd.stderr_path.read_text(errors="replace")
    assert log, "agentd wrote no log at all; the check would prove nothing"
    assert PROVIDER_KEY not in log
    assert PROVIDER_KEY not in agentd.process.stdout_path.read_text(errors="replace")
    for path in agentd.data_dir.rglob("*"):
        if path.is_file():
            assert PROVIDER_KEY.encode() not in path.read_bytes(), f"provider key stored in {path}"


def test_no_key_in_any_agentd_log_of_the_session(agentd: Agentd) -> None:
    """Every agentd of the session (the keys test starts a second one) logs to this directory."""
    logs = list(agentd.stderr_path.parent.glob("agentd*.std*"))
    assert logs
    for path in logs:
        assert PROVIDER_KEY not in path.read_text(errors="replace"), f"provider key in {path}"
