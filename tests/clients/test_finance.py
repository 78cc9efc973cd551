"""`finance_search` (spec §4.4, decision 4) with its embedded offline default, through both SDKs.

A separate `agentd` process (no finance service configured: the test environment drops every
`*_API_KEY` and `AGENTD_*` variable) gets a data directory filled by `agentd finance import` from
files generated here in the SEC's own bulk shapes (`company_tickers.json`, a companyfacts file, a
`submissions.zip`) and a prices CSV; nothing is downloaded. The scripted model calls
`finance_search`; covered:

- the `finance_results` item (`{type, queries, results: [{id, symbol, name, category, title,
  data, source, as_of}]}`, no `url`): the SDKs have no type for it, so it arrives untyped;
- what the model read: compact tables, and a category nobody serves said to be unavailable;
- `usage.tool_calls_details.finance_search` as the Perplexity SDK's usage type;
- the answer's `[n]` markers as `url_citation` annotations on the SEC's pages;
- the same run streamed, and read by the OpenAI SDK.
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import perplexity
import pytest
from perplexity.generated import api as pplx_types

from conftest import CLIENT_TIMEOUT_S, MODEL, Agentd, FakeProvider, agentd_bin, start_agentd
from support import check_stream_invariants, exact, tool_result_message

CIK = 1234567
TEN_K_2024 = "0001234567-25-000010"
TEN_K_2023 = "0001234567-24-000010"
QUERY = "Acme revenue, its latest 10-K and the last earnings call"
ANSWER = "Acme's revenue reached $1.2B in 2024 [1]; the annual report is on file [2]."
INCOME_URL = f"https://www.sec.gov/Archives/edgar/data/{CIK}/{TEN_K_2024.replace('-', '')}/"
FILINGS_URL = f"https://www.sec.gov/cgi-bin/browse-edgar?action=getcompany&CIK={CIK:010}"


# --- the SEC's bulk files, generated --------------------------------------------------------------


def annual(start: str, end: str, value: float, accession: str, filed: str) -> dict[str, Any]:
    return {"start": start, "end": end, "val": value, "accn": accession, "fy": int(end[:4]),
            "fp": "FY", "form": "10-K", "filed": filed, "frame": f"CY{end[:4]}"}


def companyfacts() -> dict[str, Any]:
    """`companyfacts/CIK0001234567.json`: two fiscal years; revenue changes concept between them."""
    y23 = ("2023-01-01", "2023-12-31")
    y24 = ("2024-01-01", "2024-12-31")
    return {
        "cik": CIK,
        "entityName": "Acme Robotics Inc.",
        "facts": {"us-gaap": {
            "Revenues": {"label": "Revenues", "description": "…", "units": {"USD": [
                annual(*y23, 1.0e9, TEN_K_2023, "2024-02-15")]}},
            "RevenueFromContractWithCustomerExcludingAssessedTax": {"label": "Revenue", "units": {"USD": [
                annual(*y24, 1.2e9, TEN_K_2024, "2025-02-14")]}},
            "NetIncomeLoss": {"label": "Net income", "units": {"USD": [
                annual(*y23, 1.0e8, TEN_K_2023, "2024-02-15"),
                annual(*y24, 1.5e8, TEN_K_2024, "2025-02-14")]}},
            "EarningsPerShareDiluted": {"label": "EPS", "units": {"USD/shares": [
                annual(*y24, 1.5, TEN_K_2024, "2025-02-14")]}},
        }},
    }


def submissions() -> dict[str, Any]:
    """`submissions/CIK0001234567.json`: the profile and `filings.recent` as parallel arrays."""
    filings = [
        (TEN_K_2024, "2025-02-14", "2024-12-31", "10-K", "acme-20241231.htm"),
        ("0001234567-25-000003", "2025-01-28", "", "4", "xslF345X05/form4.xml"),
        (TEN_K_2023, "2024-02-15", "2023-12-31", "10-K", "acme-20231231.htm"),
    ]
    column = lambda i: [row[i] for row in filings]  # noqa: E731
    return {
        "cik": f"{CIK:010}", "entityType": "operating", "sic": "3569",
        "sicDescription": "General Industrial Machinery & Equipment, NEC", "name": "Acme Robotics Inc.",
        "tickers": ["ACME"], "exchanges": ["Nasdaq"], "fiscalYearEnd": "1231", "stateOfIncorporation": "DE",
        "filings": {
            "recent": {
                "accessionNumber": column(0), "filingDate": column(1), "reportDate": column(2),
                "form": column(3), "primaryDocument": column(4), "primaryDocDescription": column(3),
                "items": ["", "", ""],
            },
            "files": [],
        },
    }


@pytest.fixture(scope="module")
def finance_agentd(
    tmp_path_factory: pytest.TempPathFactory, logs_dir: Path, fake_provider: FakeProvider
) -> Iterator[Agentd]:
    """An agentd whose data directory holds the imported SEC files and prices."""
    sec = tmp_path_factory.mktemp("sec")
    (sec / "company_tickers.json").write_text(
        json.dumps({"0": {"cik_str": CIK, "ticker": "ACME", "title": "Acme Robotics Inc."}})
    )
    (sec / "CIK0001234567.json").write_text(json.dumps(companyfacts()))
    with zipfile.ZipFile(sec / "submissions.zip", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("CIK0001234567.json", json.dumps(submissions()))
    prices = sec / "prices.csv"
    prices.write_text(
        "symbol,date,open,high,low,close,volume\n"
        "ACME,2025-01-30,29.0,31.0,28.5,30.0,120000\n"
        "ACME,2025-01-31,30.0,33.0,29.5,32.5,150000\n"
    )
    data_dir = tmp_path_factory.mktemp("finance-data")
    imported = subprocess.run(
        [str(agentd_bin()), "finance", "import", "--data-dir", str(data_dir),
         str(sec / "company_tickers.json"), str(sec / "CIK0001234567.json"), str(sec / "submissions.zip"),
         "--prices", str(prices)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert imported.returncode == 0, imported.stderr
    assert (
        "imported 1 tickers, 1 companyfacts files, 1 submissions files, 0 older-filing pages, 2 price rows"
        in imported.stdout
    ), imported.stdout
    assert (data_dir / "finance.sqlite").stat().st_mode & 0o777 == 0o600
    server = start_agentd("agentd-finance", data_dir, logs_dir, fake_provider)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def finance_pplx(finance_agentd: Agentd) -> Iterator[perplexity.Perplexity]:
    client = perplexity.Perplexity(
        base_url=finance_agentd.url, api_key="any", max_retries=0, timeout=CLIENT_TIMEOUT_S
    )
    yield client
    client.close()


@pytest.fixture(scope="module")
def finance_oai(finance_agentd: Agentd) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(
        base_url=finance_agentd.url + "/v1", api_key="any", max_retries=0, timeout=CLIENT_TIMEOUT_S
    )
    yield client
    client.close()


# --- helpers ----------------------------------------------------------------------------------------


def finance_call() -> dict[str, Any]:
    """The fake model's first turn: one `finance_search` call naming the company, not the ticker."""
    arguments = {"query": QUERY, "symbols": ["Acme Robotics"],
                 "categories": ["income_statement", "filings", "transcript"]}
    return {"tool_calls": [["call_fin_1", "finance_search", json.dumps(arguments)]]}


def untyped(item: Any) -> dict[str, Any]:
    """An item the SDK has no type for, as the JSON it carried."""
    return item if isinstance(item, dict) else item.to_dict(mode="json")


def check_finance_item(item: dict[str, Any]) -> None:
    """The `finance_results` item of the run (decision 4): exactly these fields, no `url`."""
    assert item["type"] == "finance_results"
    assert set(item) == {"type", "queries", "results"}
    assert item["queries"] == [QUERY]
    income, filings = item["results"]
    assert set(income) == {"id", "symbol", "name", "category", "title", "data", "source", "as_of"}
    assert (income["id"], income["symbol"], income["name"]) == (1, "ACME", "Acme Robotics Inc.")
    assert (income["category"], income["source"], income["as_of"]) == ("income_statement", "local", "2024-12-31")
    assert income["data"]["columns"] == ["item", "2024-12-31", "2023-12-31"]
    assert income["data"]["rows"][0] == ["Revenue", 1200000000, 1000000000]
    assert income["data"]["url"] == INCOME_URL
    assert (filings["id"], filings["category"]) == (2, "filings")
    links = [row[4] for row in filings["data"]["rows"]]
    assert links[0] == f"{INCOME_URL}acme-20241231.htm"


def check_model_read(fake: FakeProvider) -> None:
    first, second = fake.requests()
    offered = [tool["function"]["name"] for tool in first.get("tools") or []]
    assert offered == ["finance_search"]
    told = tool_result_message(second)["content"]
    assert "[1] ACME: Income statement" in told and "| Revenue | 1.2B | 1B |" in told, told
    assert (
        "Not available: ACME transcript: earnings call transcript is not available from the configured sources (local)"
        in told
    ), told


def citations(annotations: list[Any] | None) -> list[tuple[str, str]]:
    assert annotations is not None
    return [(a.url, ANSWER[a.start_index : a.end_index]) for a in annotations]


# --- tests ------------------------------------------------------------------------------------------


def test_perplexity_finance_search_offline(finance_pplx: perplexity.Perplexity, fake: FakeProvider) -> None:
    fake.script(finance_call(), {"text": ANSWER, "usage": [80, 20]})
    response = finance_pplx.responses.create(
        model=MODEL, input="How did Acme do last year?",
        tools=[pplx_types.FinanceSearchToolInput(type="finance_search")],
    )
    assert response.status == "completed", response.error
    assert [untyped(item)["type"] for item in response.output] == ["finance_results", "message"]
    check_finance_item(untyped(response.output[0]))
    check_model_read(fake)

    assert response.usage is not None and response.usage.tool_calls_details is not None
    assert list(response.usage.tool_calls_details) == ["finance_search"]
    details = exact(response.usage.tool_calls_details["finance_search"], pplx_types.ToolCallDetailsOutput)
    assert details.invocation == 1

    message = exact(response.output[1], pplx_types.MessageOutputItemOutput)
    assert message.content[0].text == ANSWER
    annotations = [exact(a, pplx_types.AnnotationOutput) for a in message.content[0].annotations or []]
    assert citations(annotations) == [(INCOME_URL, "[1]"), (FILINGS_URL, "[2]")]
    fake.assert_all_used()


def test_perplexity_finance_search_stream(finance_pplx: perplexity.Perplexity, fake: FakeProvider) -> None:
    fake.script(finance_call(), {"text": ANSWER})
    events = list(
        finance_pplx.responses.create(
            model=MODEL, input="How did Acme do last year?",
            tools=[pplx_types.FinanceSearchToolInput(type="finance_search")], stream=True,
        )
    )
    check_stream_invariants(events)
    done = [untyped(event.item) for event in events if event.type == "response.output_item.done"]
    assert [item["type"] for item in done] == ["finance_results", "message"]
    check_finance_item(done[0])
    final = events[-1]
    assert final.type == "response.completed"
    fake.assert_all_used()


def test_openai_reads_finance_results(finance_oai: openai.OpenAI, fake: FakeProvider) -> None:
    fake.script(finance_call(), {"text": ANSWER})
    response = finance_oai.responses.create(
        model=MODEL, input="How did Acme do last year?", tools=[{"type": "finance_search"}],  # type: ignore[list-item]
    )
    assert response.status == "completed", response.error
    check_finance_item(untyped(response.output[0]))
    message = response.output[1]
    assert message.type == "message"
    assert [(a.url, ANSWER[a.start_index : a.end_index]) for a in message.content[0].annotations] == [
        (INCOME_URL, "[1]"),
        (FILINGS_URL, "[2]"),
    ]
    check_model_read(fake)
    fake.assert_all_used()
