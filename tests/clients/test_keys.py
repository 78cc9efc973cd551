"""API keys: a second agentd with its own data dir and keys made by `agentd keys create`
(operator contract). Requests without a valid key get 401 (the SDKs' AuthenticationError);
with a key they work, scoped to the key's project."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterator

import httpx
import openai
import perplexity
import pytest

from conftest import (
    CLIENT_TIMEOUT_S,
    MODEL,
    Agentd,
    FakeProvider,
    agentd_bin,
    provider_env,
    start_agentd,
)


class KeyedServer:
    def __init__(self, server: Agentd, keys: dict[str, str]) -> None:
        self.server = server
        self.url = server.url
        self.keys = keys

    def pplx(self, api_key: str) -> perplexity.Perplexity:
        return perplexity.Perplexity(base_url=self.url, api_key=api_key, max_retries=0, timeout=CLIENT_TIMEOUT_S)

    def oai(self, api_key: str) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, max_retries=0, timeout=CLIENT_TIMEOUT_S)


def create_key(data_dir: Path, project: str, fake: FakeProvider) -> str:
    done = subprocess.run(
        [str(agentd_bin()), "keys", "create", "--project", project, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env=provider_env(fake),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, f"expected the key alone on stdout, got {done.stdout!r}"
    key = lines[0].strip()
    assert len(key) >= 20, key
    assert key not in done.stderr
    return key


@pytest.fixture(scope="module")
def keyed(
    tmp_path_factory: pytest.TempPathFactory, logs_dir: Path, fake_provider: FakeProvider
) -> Iterator[KeyedServer]:
    data_dir = tmp_path_factory.mktemp("agentd-keys-data")
    keys = {project: create_key(data_dir, project, fake_provider) for project in ("p1", "p2")}
    assert keys["p1"] != keys["p2"]
    server = start_agentd("agentd-keys", data_dir, logs_dir, fake_provider)
    yield KeyedServer(server, keys)
    server.stop()


def test_no_key_is_refused(keyed: KeyedServer, fake: FakeProvider) -> None:
    response = httpx.post(f"{keyed.url}/v1/responses", json={"model": MODEL, "input": "hi"}, timeout=30)
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == 401 and error["message"]
    assert fake.requests() == []


@pytest.mark.parametrize("sdk", ["perplexity", "openai"])
def test_a_wrong_key_is_an_authentication_error(sdk: str, keyed: KeyedServer, fake: FakeProvider) -> None:
    make = keyed.pplx if sdk == "perplexity" else keyed.oai
    authentication_error = perplexity.AuthenticationError if sdk == "perplexity" else openai.AuthenticationError
    with make("sk-not-a-key-of-this-server") as client:
        with pytest.raises(authentication_error) as raised:
            client.responses.create(model=MODEL, input="hi")
        assert raised.value.status_code == 401
        with pytest.raises(authentication_error):
            client.responses.retrieve("resp_00000000-0000-4000-8000-000000000000")
    assert fake.requests() == []


@pytest.mark.parametrize("sdk", ["perplexity", "openai"])
def test_the_key_works(sdk: str, keyed: KeyedServer, fake: FakeProvider) -> None:
    make = keyed.pplx if sdk == "perplexity" else keyed.oai
    fake.script({"text": "Authorized."})
    with make(keyed.keys["p1"]) as client:
        created = client.responses.create(model=MODEL, input="hi")
        assert created.status == "completed"
        assert created.output_text == "Authorized."
        assert client.responses.retrieve(created.id).output_text == "Authorized."
    fake.assert_all_used()


def test_another_projects_response_is_not_found(keyed: KeyedServer, fake: FakeProvider) -> None:
    fake.script({"text": "Project one only."})
    with keyed.pplx(keyed.keys["p1"]) as p1, keyed.pplx(keyed.keys["p2"]) as p2:
        created = p1.responses.create(model=MODEL, input="hi")
        with pytest.raises(perplexity.NotFoundError):
            p2.responses.retrieve(created.id)
        assert p1.responses.retrieve(created.id).id == created.id


def test_models_need_no_key(keyed: KeyedServer) -> None:
    response = httpx.get(f"{keyed.url}/v1/models", timeout=30)
    assert response.status_code == 200
    assert response.json()["object"] == "list"


def test_only_the_key_hash_is_stored(keyed: KeyedServer) -> None:
    for path in keyed.server.data_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for key in keyed.keys.values():
                assert key.encode() not in data, f"plaintext API key stored in {path}"
