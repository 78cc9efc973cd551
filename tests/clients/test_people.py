"""The built-in `people_search` tool (spec §4.3, decision 4) through the SDKs, on agentd's
embedded directory: refused (400 naming what to set) before anything is configured; after
`agentd people import` (the real binary, while the server runs) the directory answers.

Covered: the Perplexity SDK's typed tool (`PeopleSearchToolInput`); the refusal as the SDK's
`BadRequestError`; the `people_search_results` item (agentd's, in the `search_results` entry
shape: the SDK has no type for it, so its entries are checked against `SearchResultOutput`);
the streamed `response.reasoning.search_results` event under the SDK's strict types;
`usage.tool_calls_details.search_people`; citations; the OpenAI SDK reading the same response;
and privacy: no sensitive column of the import and no query text in any answer or in agentd's
log (which runs at debug level).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import openai
import perplexity
import pytest
from perplexity.generated import api as pplx_types

from conftest import MODEL, Agentd, FakeProvider, agentd_bin
from support import check_stream_invariants, exact, revalidated, tool_result_message

CSV = (
    "id,name,title,company,department,location,education,skills,profile_url,summary,updated_at,"
    "personal_email,mobile,home_address,birth_date,gender\n"
    "p-1,Lise Meitner,Physicist,Kaiser Wilhelm Institute,Radiochemistry,Berlin,University of Vienna,"
    "nuclear physics; fission,https://people.example/lise,Explained fission (home +43 1 555 01 99),"
    "2025-01-15,lise.home@example.com,+43 1 555 01 99,Hidden Gasse 7,1878-11-07,female\n"
    "p-2,Otto Hahn,Chemist,Kaiser Wilhelm Institute,Radiochemistry,Berlin,University of Marburg,"
    "chemistry,,,2024-12-01,,,,,\n"
)
SENSITIVE = ["lise.home@example.com", "555 01 99", "Hidden Gasse", "1878-11-07", "female"]
QUERY = "fission physicist"
ANSWER = "Lise Meitner explained fission [1]."


def people_call() -> dict[str, Any]:
    arguments = json.dumps({"queries": [QUERY], "location": "Berlin", "limit": 1})
    return {"tool_calls": [["call_people_1", "people_search", arguments]]}


def people_tool() -> pplx_types.PeopleSearchToolInput:
    return pplx_types.PeopleSearchToolInput(type="people_search")


def import_directory(agentd: Agentd, tmp_path: Path) -> None:
    """`agentd people import` into the running server's data directory (project "default")."""
    path = tmp_path / "staff.csv"
    path.write_text(CSV)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTD_")}
    done = subprocess.run(
        [str(agentd_bin()), "people", "import", str(path), "--data-dir", str(agentd.data_dir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'imported 2 people into project "default"' in done.stdout, done.stdout


def check_result(result: dict[str, Any], first_id: int = 1) -> None:
    entry = pplx_types.SearchResultOutput.model_validate(result, strict=True)
    assert set(result) <= set(pplx_types.SearchResultOutput.model_fields), result
    assert entry.id == first_id
    assert entry.url == "https://people.example/lise"
    assert entry.title == "Lise Meitner — Physicist, Kaiser Wilhelm Institute"
    assert entry.last_updated == "2025-01-15"
    assert "Location: Berlin" in entry.snippet and "Source: directory" in entry.snippet


def test_people_search_is_refused_then_answers_from_the_imported_directory(
    pplx: perplexity.Perplexity,
    oai: openai.OpenAI,
    http: httpx.Client,
    fake: FakeProvider,
    agentd: Agentd,
    tmp_path: Path,
) -> None:
    # 1. Nothing configured: the SDK's BadRequestError, naming the tool and what to set.
    if not (agentd.data_dir / "people.sqlite").exists():
        with pytest.raises(perplexity.BadRequestError) as raised:
            pplx.responses.create(model=MODEL, input="Who explained fission?", tools=[people_tool()])
        assert raised.value.status_code == 400
        assert isinstance(raised.value.body, dict)
        error = raised.value.body["error"]
        assert error["type"] == "invalid_request" and error["param"] == "tools[0]"
        assert "people_search" in error["message"] and "agentd people import" in error["message"]
        assert fake.requests() == []

    # 2. The operator imports a directory; the same server answers from it.
    import_directory(agentd, tmp_path)
    fake.script(people_call(), {"text": ANSWER})
    response = pplx.responses.create(model=MODEL, input="Who explained fission?", tools=[people_tool()])
    assert response.status == "completed", response.error
    raw = http.get(f"/v1/responses/{response.id}").json()
    assert [item["type"] for item in raw["output"]] == ["people_search_results", "message"]
    item = raw["output"][0]
    assert item["queries"] == [f"{QUERY} (location: Berlin)"]
    assert len(item["results"]) == 1
    check_result(item["results"][0])

    usage = response.usage
    assert usage is not None and usage.tool_calls_details is not None
    details = exact(usage.tool_calls_details["search_people"], pplx_types.ToolCallDetailsOutput)
    assert details.invocation == 1
    message = exact(response.output[1], pplx_types.MessageOutputItemOutput)
    annotations = message.content[0].annotations or []
    assert [(a.url, ANSWER[a.start_index : a.end_index]) for a in annotations] == [
        ("https://people.example/lise", "[1]")
    ]
    first, second = fake.requests()
    offered = [t["function"] for t in first["tools"] if t["function"]["name"] == "people_search"]
    assert offered and offered[0]["parameters"]["properties"]["queries"]["maxItems"] == 5
    told = tool_result_message(second)["content"]
    assert "[1] Lise Meitner" in told and "Otto Hahn" not in told
    fake.assert_all_used()

    # 3. Streamed: the search's events are the SDK's own strictly typed classes.
    fake.script(people_call(), {"text": ANSWER})
    events = list(
        pplx.responses.create(
            model=MODEL, input="Who explained fission?", tools=[people_tool()], stream=True
        )
    )
    check_stream_invariants(events)
    found = [e for e in events if e.type == "response.reasoning.search_results"]
    assert len(found) == 1
    typed = revalidated(found[0])
    assert type(typed) is pplx_types.SearchResultsEventOutput
    check_result(found[0].results[0].to_dict())
    fake.assert_all_used()

    # 4. The OpenAI SDK reads the same response (the item arrives untyped, every field kept).
    fake.script(people_call(), {"text": ANSWER})
    read = oai.responses.create(model=MODEL, input="Who explained fission?", tools=[{"type": "people_search"}])  # type: ignore[list-item]
    assert read.status == "completed"
    untyped = read.output[0]
    as_dict = untyped if isinstance(untyped, dict) else untyped.to_dict(mode="json")
    assert as_dict == http.get(f"/v1/responses/{read.id}").json()["output"][0]
    fake.assert_all_used()

    # 5. Privacy: nothing sensitive in any answer; neither that nor the query in the log.
    bodies = json.dumps([raw, http.get(f"/v1/responses/{read.id}").json(), fake.requests()])
    log = agentd.stderr_path.read_text(errors="replace")
    for secret in SENSITIVE:
        assert secret not in bodies, secret
        assert secret not in log, secret
    assert QUERY not in log
