"""The built-in tools `web_search` and `fetch_url` (spec §4.1, §4.2) through both SDKs.

The web is local (web_servers.py): agentd's `web_search` asks a SearxNG-shaped server on
loopback (`AGENTD_SEARXNG_URL`, set by conftest.py), and `fetch_url` reads pages from a page
server on loopback. Only the model is scripted: it "calls" `web_search({"queries": [...]})` or
`fetch_url({"urls": [...]})`, then answers with `[n]` markers. Covered:

- `search_results` / `fetch_url_results` items as the Perplexity SDK's own item types, under
  strict validation and with no undeclared field (spec §5.3); result ids numbered from 1;
- `usage.tool_calls_details` (`search_web`, `fetch_url`) as the SDK's usage types (spec §5.4);
- the answer's `[n]` markers as `url_citation` annotations whose `start_index`/`end_index` are
  Python string indices of the marker (the answers are non-ASCII, so character, UTF-16 and byte
  offsets all differ);
- the `response.reasoning.*` events as the SDK's typed event classes, in order (spec §7.2, §7.3);
- fetched pages cleaned to their text (no navigation or footer);
- the OpenAI SDK reading the same responses and streams with its default client (Perplexity-only
  items arrive untyped, spec §5.3; annotations are OpenAI's `AnnotationURLCitation`);
- a malformed date filter: HTTP 400 `invalid_date_format` naming the field (spec §4.1, §6).
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import openai
import perplexity
import pytest
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_output_text import AnnotationURLCitation
from perplexity.generated import api as pplx_types

from conftest import MODEL, FakeProvider
from support import (
    PPLX_EVENT_CLASSES,
    assert_in_order,
    check_classes,
    check_stream_invariants,
    exact,
    revalidated,
    text_deltas,
    tool_result_message,
)
from web_servers import (
    ARTICLE_BOILERPLATE,
    ARTICLE_PATH,
    ARTICLE_SENTENCES,
    ARTICLE_TITLE,
    NOTES_PATH,
    NOTES_TEXT,
    SEARCH_RESULTS,
    WebServers,
)

QUERY = "Rhein Basel"
QUESTION = "Wie lang ist der Rhein, und schwimmt man in Basel darin?"
# A ZWJ emoji (4 code points, 5 UTF-16 units, 13 UTF-8 bytes) and umlauts before the markers;
# `[7]` names no result and must not become a citation.
SEARCH_ANSWER = (
    "In Basel schwimmt man im Rhein 🏊‍♀️ – die halbe Stadt tut es [1]. "
    "Der Strom ist 1233 km lang [2][1]; Quelle [7] gibt es nicht."
)
FETCH_ANSWER = "Im August ist das Wasser über 22 °C warm [1]; die Fähre Horgen–Meilen fährt immer [2]."

STREAM_ORDER = [
    "response.created",
    "response.in_progress",
    "response.reasoning.started",
    "response.output_item.added",
    "response.output_item.done",
    "response.output_item.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.output_item.done",
    "response.completed",
]


# --- helpers ------------------------------------------------------------------------------------


def search_call(*queries: str) -> dict[str, Any]:
    """The fake model's first turn: one `web_search` call."""
    arguments = json.dumps({"queries": list(queries)}, ensure_ascii=False)
    return {"tool_calls": [["call_search_1", "web_search", arguments]]}


def fetch_call(*urls: str) -> dict[str, Any]:
    """The fake model's first turn: one `fetch_url` call."""
    return {"tool_calls": [["call_fetch_1", "fetch_url", json.dumps({"urls": list(urls)})]]}


def web_search_tool(**options: Any) -> pplx_types.WebSearchToolInput:
    return pplx_types.WebSearchToolInput(type="web_search", **options)


def fetch_url_tool(max_urls: int = 2) -> pplx_types.FetchUrlToolInput:
    return pplx_types.FetchUrlToolInput(type="fetch_url", max_urls=max_urls)


def expected_citations(text: str, sources: dict[int, tuple[str, str]]) -> list[tuple[str, str, int, int]]:
    """(url, title, start, end) for each `[n]` marker of `text` whose n names a source, with
    Python string indices: the marker is `text[start:end]`."""
    return [
        (*sources[int(match.group(1))], match.start(), match.end())
        for match in re.finditer(r"\[(\d+)\]", text)
        if int(match.group(1)) in sources
    ]


def citations(annotations: list[Any] | None) -> list[tuple[str, str, int, int]]:
    """(url, title, start_index, end_index) of url_citation annotations, any SDK's type."""
    assert annotations is not None
    assert all(annotation.type == "url_citation" for annotation in annotations), annotations
    return [(a.url, a.title, a.start_index, a.end_index) for a in annotations]


def search_sources(results: list[Any]) -> dict[int, tuple[str, str]]:
    return {result.id: (result.url, result.title) for result in results}


def expected_result(url: str) -> dict[str, str]:
    """The SearxNG result (web_servers.SEARCH_RESULTS) with this URL."""
    return next(hit for hits in SEARCH_RESULTS.values() for hit in hits if hit["url"] == url)


def offered_function(request: dict[str, Any], name: str) -> dict[str, Any]:
    """The function tool `name` offered to the model in one upstream request."""
    functions = [tool["function"] for tool in request.get("tools") or []]
    matching = [function for function in functions if function["name"] == name]
    assert len(matching) == 1, [function["name"] for function in functions]
    return matching[0]


def untyped(item: Any) -> dict[str, Any]:
    """An output item the OpenAI SDK has no type for, as the JSON it carried.

    The default client hands it over without validation (a dict, or a model constructed
    loosely from the first member of its union that keeps every field)."""
    return item if isinstance(item, dict) else item.to_dict(mode="json")


# --- 1. web_search with the Perplexity SDK ------------------------------------------------------


def check_search_item(search: Any, queries: list[str]) -> list[Any]:
    """A `search_results` item exactly as the SDK types it; returns its results."""
    exact(search, pplx_types.SearchResultsOutputItemOutput)
    assert search.queries == queries
    results = [exact(result, pplx_types.SearchResultOutput) for result in search.results]
    assert [result.id for result in results] == list(range(1, len(results) + 1))
    for result in results:
        hit = expected_result(result.url)
        assert (result.title, result.snippet) == (hit["title"], hit["content"])
        # SearxNG's publishedDate, as a date (spec §4.1: output `YYYY-MM-DD`).
        assert result.date == (hit["publishedDate"][:10] if "publishedDate" in hit else None)
        assert result.last_updated is None
        assert result.source == "web"
    return results


def test_perplexity_web_search_results_usage_and_citations(
    strict_pplx: perplexity.Perplexity, fake: FakeProvider, web: WebServers
) -> None:
    fake.script(search_call(QUERY), {"text": SEARCH_ANSWER, "usage": [60, 20]})
    response = strict_pplx.responses.create(model=MODEL, input=QUESTION, tools=[web_search_tool()])
    assert type(response) is pplx_types.ResponsesResponseOutput
    assert response.status == "completed", response.error
    assert [item.type for item in response.output] == ["search_results", "message"]

    results = check_search_item(response.output[0], [QUERY])
    assert [result.url for result in results] == [hit["url"] for hit in SEARCH_RESULTS[QUERY]]
    # The search service got the model's query, as SearxNG's JSON API wants it.
    assert web.search_queries() == [QUERY]
    assert all(request.query.get("format") == ["json"] for request in web.searxng.requests())

    usage = response.usage
    assert type(usage) is pplx_types.ResponsesUsageOutput
    assert usage.tool_calls_details is not None
    assert list(usage.tool_calls_details) == ["search_web"]
    details = exact(usage.tool_calls_details["search_web"], pplx_types.ToolCallDetailsOutput)
    assert details.invocation == 1

    message = exact(response.output[1], pplx_types.MessageOutputItemOutput)
    part = message.content[0]
    # Not `exact`: output_text parts also carry OpenAI's `logprobs: []` (spec Decision 11).
    assert type(part) is pplx_types.ContentPartOutput
    assert part.text == SEARCH_ANSWER == response.output_text
    annotations = [exact(a, pplx_types.AnnotationOutput) for a in part.annotations or []]
    assert citations(annotations) == expected_citations(SEARCH_ANSWER, search_sources(results))
    assert [SEARCH_ANSWER[a.start_index : a.end_index] for a in annotations] == ["[1]", "[2]", "[1]"]

    # The model was offered web_search and read the numbered results.
    first, second = fake.requests()
    assert "queries" in json.dumps(offered_function(first, "web_search")["parameters"])
    told = tool_result_message(second)["content"]
    assert "[1]" in told and results[0].url in told and results[1].url in told
    fake.assert_all_used()
    assert strict_pplx.responses.retrieve(response.id).to_dict() == response.to_dict()


def test_one_call_with_several_queries_numbers_all_results(
    strict_pplx: perplexity.Perplexity, fake: FakeProvider, web: WebServers
) -> None:
    """Both queries reach the search service; their results share one numbering from 1 without
    repeats. agentd bills one `search_web` invocation per search run (spec §4.1 prices per
    search; §5.4's example: 2 invocations, $0.01)."""
    queries = [QUERY, "Zürichsee Lage"]
    fake.script(search_call(*queries), {"text": "Der Zürichsee liegt südöstlich von Zürich [2]."})
    response = strict_pplx.responses.create(model=MODEL, input=QUESTION, tools=[web_search_tool()])
    assert response.status == "completed", response.error
    results = check_search_item(response.output[0], queries)
    all_urls = [hit["url"] for query in queries for hit in SEARCH_RESULTS[query]]
    assert sorted(result.url for result in results) == sorted(all_urls)
    assert sorted(web.search_queries()) == sorted(queries)
    assert response.usage is not None and response.usage.tool_calls_details is not None
    assert response.usage.tool_calls_details["search_web"].invocation == 2
    cited = response.output_text.index("[2]")
    message = exact(response.output[1], pplx_types.MessageOutputItemOutput)
    assert citations(message.content[0].annotations) == [
        (results[1].url, results[1].title, cited, cited + 3)
    ]
    fake.assert_all_used()


# --- 2. web_search streamed ---------------------------------------------------------------------


def test_perplexity_web_search_stream(pplx: perplexity.Perplexity, fake: FakeProvider, web: WebServers) -> None:
    fake.script(search_call(QUERY), {"text": SEARCH_ANSWER})
    events = list(
        pplx.responses.create(model=MODEL, input=QUESTION, tools=[web_search_tool()], stream=True)
    )
    check_classes(events, PPLX_EVENT_CLASSES)
    check_stream_invariants(events)
    for event in events:
        if event.type in PPLX_EVENT_CLASSES:
            revalidated(event)

    types = [event.type for event in events]
    assert_in_order(types, STREAM_ORDER)
    reasoning = [t for t in types if t.startswith("response.reasoning.")]
    assert reasoning == [
        "response.reasoning.started",
        "response.reasoning.search_queries",
        "response.reasoning.search_results",
        "response.reasoning.stopped",
    ]
    # The search's progress comes before the answer's text (spec §7.3).
    first_delta = types.index("response.output_text.delta")
    assert all(types.index(t) < first_delta for t in reasoning)

    by_type = {event.type: event for event in events}
    queries = exact(by_type["response.reasoning.search_queries"], pplx_types.SearchQueriesEventOutput)
    assert queries.queries == [QUERY]
    found = exact(by_type["response.reasoning.search_results"], pplx_types.SearchResultsEventOutput)
    assert [result.id for result in found.results] == [1, 2]

    done_items = [event.item for event in events if event.type == "response.output_item.done"]
    assert [item.type for item in done_items] == ["search_results", "message"]
    results = check_search_item(done_items[0], [QUERY])
    assert [r.to_dict() for r in found.results] == [r.to_dict() for r in results]
    message = exact(done_items[1], pplx_types.MessageOutputItemOutput)
    expected = expected_citations(SEARCH_ANSWER, search_sources(results))
    assert citations(message.content[0].annotations) == expected
    assert text_deltas(events) == SEARCH_ANSWER

    final = events[-1]
    assert type(final) is pplx_types.ResponseCompletedEventOutput
    assert final.response is not None and final.response.status == "completed"
    assert [item.to_dict() for item in final.response.output] == [item.to_dict() for item in done_items]
    assert final.response.usage is not None and final.response.usage.tool_calls_details is not None
    assert final.response.usage.tool_calls_details["search_web"].invocation == 1
    assert web.search_queries() == [QUERY]
    fake.assert_all_used()


# --- 3. fetch_url -------------------------------------------------------------------------------


def check_fetched(item: Any, web: WebServers) -> list[Any]:
    """A `fetch_url_results` item for the article and the notes, exactly as the SDK types it."""
    exact(item, pplx_types.FetchUrlResultsOutputItemOutput)
    contents = [exact(content, pplx_types.UrlContentOutput) for content in item.contents]
    assert [content.url for content in contents] == [web.page_url(ARTICLE_PATH), web.page_url(NOTES_PATH)]
    article, notes = contents
    assert article.title == ARTICLE_TITLE
    for sentence in ARTICLE_SENTENCES:
        assert sentence in article.snippet, article.snippet
    for boilerplate in ARTICLE_BOILERPLATE:
        assert boilerplate not in article.snippet, f"boilerplate {boilerplate!r} kept: {article.snippet}"
    assert "<" not in article.snippet, article.snippet
    assert notes.snippet == NOTES_TEXT.strip()
    return contents


def fetch_sources(contents: list[Any]) -> dict[int, tuple[str, str]]:
    return {number: (content.url, content.title) for number, content in enumerate(contents, start=1)}


def test_perplexity_fetch_url_results(
    strict_pplx: perplexity.Perplexity, fake: FakeProvider, web: WebServers
) -> None:
    fake.script(fetch_call(web.page_url(ARTICLE_PATH), web.page_url(NOTES_PATH)), {"text": FETCH_ANSWER})
    response = strict_pplx.responses.create(
        model=MODEL, input="Lies die beiden Seiten.", tools=[fetch_url_tool()]
    )
    assert response.status == "completed", response.error
    assert [item.type for item in response.output] == ["fetch_url_results", "message"]
    contents = check_fetched(response.output[0], web)
    assert (web.page_hits(ARTICLE_PATH), web.page_hits(NOTES_PATH)) == (1, 1)
    assert web.search_queries() == []

    assert response.usage is not None and response.usage.tool_calls_details is not None
    assert list(response.usage.tool_calls_details) == ["fetch_url"]
    details = exact(response.usage.tool_calls_details["fetch_url"], pplx_types.ToolCallDetailsOutput)
    # One per page fetched (spec §4.2 prices per fetch).
    assert details.invocation == 2

    message = exact(response.output[1], pplx_types.MessageOutputItemOutput)
    annotations = [exact(a, pplx_types.AnnotationOutput) for a in message.content[0].annotations or []]
    assert citations(annotations) == expected_citations(FETCH_ANSWER, fetch_sources(contents))

    first, second = fake.requests()
    assert "urls" in json.dumps(offered_function(first, "fetch_url")["parameters"])
    told = tool_result_message(second)["content"]
    assert ARTICLE_SENTENCES[1] in told and "Horgen–Meilen" in told
    fake.assert_all_used()


def test_perplexity_fetch_url_stream(pplx: perplexity.Perplexity, fake: FakeProvider, web: WebServers) -> None:
    urls = [web.page_url(ARTICLE_PATH), web.page_url(NOTES_PATH)]
    fake.script(fetch_call(*urls), {"text": FETCH_ANSWER})
    events = list(
        pplx.responses.create(model=MODEL, input="Lies die beiden Seiten.", tools=[fetch_url_tool()], stream=True)
    )
    check_classes(events, PPLX_EVENT_CLASSES)
    check_stream_invariants(events)
    for event in events:
        if event.type in PPLX_EVENT_CLASSES:
            revalidated(event)

    types = [event.type for event in events]
    assert_in_order(types, STREAM_ORDER)
    assert [t for t in types if t.startswith("response.reasoning.")] == [
        "response.reasoning.started",
        "response.reasoning.fetch_url_queries",
        "response.reasoning.fetch_url_results",
        "response.reasoning.stopped",
    ]
    assert types.index("response.reasoning.stopped") < types.index("response.output_text.delta")
    by_type = {event.type: event for event in events}
    asked = exact(by_type["response.reasoning.fetch_url_queries"], pplx_types.FetchUrlQueriesEventOutput)
    assert asked.urls == urls
    got = exact(by_type["response.reasoning.fetch_url_results"], pplx_types.FetchUrlResultsEventOutput)

    done_items = [event.item for event in events if event.type == "response.output_item.done"]
    assert [item.type for item in done_items] == ["fetch_url_results", "message"]
    contents = check_fetched(done_items[0], web)
    assert [c.to_dict() for c in got.contents] == [c.to_dict() for c in contents]
    expected = expected_citations(FETCH_ANSWER, fetch_sources(contents))
    message = exact(done_items[1], pplx_types.MessageOutputItemOutput)
    assert citations(message.content[0].annotations) == expected
    final = events[-1]
    assert type(final) is pplx_types.ResponseCompletedEventOutput
    assert final.response is not None and final.response.output_text == FETCH_ANSWER
    fake.assert_all_used()


def test_sources_are_numbered_across_the_calls_of_a_run(
    strict_pplx: perplexity.Perplexity, fake: FakeProvider, web: WebServers
) -> None:
    """A search, then a fetch: the fetched page is source [3] after search results [1] and [2]
    (the model read it as such), so each marker of the answer cites exactly one source."""
    page = web.page_url(ARTICLE_PATH)
    answer = "Schwimmen [1], Länge [2], Einstieg beim Tinguely-Museum [3]."
    fake.script(search_call(QUERY), fetch_call(page), {"text": answer})
    response = strict_pplx.responses.create(
        model=MODEL, input=QUESTION, tools=[web_search_tool(), fetch_url_tool()]
    )
    assert response.status == "completed", response.error
    assert [item.type for item in response.output] == ["search_results", "fetch_url_results", "message"]
    results = check_search_item(response.output[0], [QUERY])
    fetched = exact(response.output[1], pplx_types.FetchUrlResultsOutputItemOutput)
    assert [content.url for content in fetched.contents] == [page]
    sources = {**search_sources(results), 3: (page, ARTICLE_TITLE)}
    message = exact(response.output[2], pplx_types.MessageOutputItemOutput)
    assert citations(message.content[0].annotations) == expected_citations(answer, sources)
    tool_results = [m["content"] for m in fake.requests()[2]["messages"] if m.get("role") == "tool"]
    assert len(tool_results) == 2 and "[3]" in tool_results[1], tool_results
    assert response.usage is not None and response.usage.tool_calls_details is not None
    invocations = {key: d.invocation for key, d in response.usage.tool_calls_details.items()}
    assert invocations == {"search_web": 1, "fetch_url": 1}
    fake.assert_all_used()


# --- 4. the OpenAI SDK reads the same responses -------------------------------------------------


def check_openai_message(message: Any, text: str, expected: list[tuple[str, str, int, int]]) -> None:
    """A message whose annotations are OpenAI's `AnnotationURLCitation`, strictly valid."""
    assert type(message) is ResponseOutputMessage
    part = message.content[0]
    assert type(part) is ResponseOutputText
    assert part.text == text
    for annotation in part.annotations:
        assert type(annotation) is AnnotationURLCitation
        AnnotationURLCitation.model_validate(annotation.to_dict())
    assert citations(part.annotations) == expected


def test_openai_reads_web_search_responses(
    oai: openai.OpenAI, http: httpx.Client, fake: FakeProvider, web: WebServers
) -> None:
    fake.script(search_call(QUERY), {"text": SEARCH_ANSWER})
    response = oai.responses.create(model=MODEL, input=QUESTION, tools=[{"type": "web_search"}])
    assert response.status == "completed", response.error
    assert [item.type for item in response.output] == ["search_results", "message"]
    search = untyped(response.output[0])
    # Every field of the item survives the SDK.
    assert search == http.get(f"/v1/responses/{response.id}").json()["output"][0]
    assert search["queries"] == [QUERY]
    assert [result["id"] for result in search["results"]] == [1, 2]
    sources = {r["id"]: (r["url"], r["title"]) for r in search["results"]}
    check_openai_message(response.output[1], SEARCH_ANSWER, expected_citations(SEARCH_ANSWER, sources))
    assert response.output_text == SEARCH_ANSWER
    fake.assert_all_used()


def test_openai_reads_web_search_streams(oai: openai.OpenAI, fake: FakeProvider, web: WebServers) -> None:
    """OpenAI has no `response.reasoning.*` events: the default client hands them over with their
    `type` intact, and everything OpenAI does type parses as usual."""
    fake.script(search_call(QUERY), {"text": SEARCH_ANSWER})
    events = list(
        oai.responses.create(model=MODEL, input=QUESTION, tools=[{"type": "web_search"}], stream=True)
    )
    check_stream_invariants(events)
    types = [event.type for event in events]
    assert_in_order(types, STREAM_ORDER)
    assert "response.reasoning.search_results" in types
    done = [event for event in events if event.type == "response.output_item.done"]
    assert type(done[1]) is ResponseOutputItemDoneEvent
    assert untyped(done[0].item)["type"] == "search_results"
    sources = {r["id"]: (r["url"], r["title"]) for r in untyped(done[0].item)["results"]}
    check_openai_message(done[1].item, SEARCH_ANSWER, expected_citations(SEARCH_ANSWER, sources))
    assert text_deltas(events) == SEARCH_ANSWER
    final = events[-1]
    assert type(final) is ResponseCompletedEvent
    assert final.response.output_text == SEARCH_ANSWER
    fake.assert_all_used()


def test_openai_reads_fetch_url_responses(oai: openai.OpenAI, fake: FakeProvider, web: WebServers) -> None:
    urls = [web.page_url(ARTICLE_PATH), web.page_url(NOTES_PATH)]
    fake.script(fetch_call(*urls), {"text": FETCH_ANSWER})
    # `fetch_url` is not an OpenAI tool type: sent as a plain dict.
    tool: Any = {"type": "fetch_url", "max_urls": 2}
    response = oai.responses.create(model=MODEL, input="Lies die beiden Seiten.", tools=[tool])
    assert response.status == "completed", response.error
    assert [item.type for item in response.output] == ["fetch_url_results", "message"]
    fetched = untyped(response.output[0])
    assert [content["url"] for content in fetched["contents"]] == urls
    sources = {n: (c["url"], c["title"]) for n, c in enumerate(fetched["contents"], start=1)}
    check_openai_message(response.output[1], FETCH_ANSWER, expected_citations(FETCH_ANSWER, sources))
    fake.assert_all_used()


# --- 5. a malformed date filter -----------------------------------------------------------------

BAD_DATES = ["2025-01-31", "02/30/2025", "yesterday"]


@pytest.mark.parametrize("value", BAD_DATES)
def test_perplexity_malformed_date_filter_is_invalid_date_format(
    value: str, pplx: perplexity.Perplexity, fake: FakeProvider, web: WebServers
) -> None:
    tool = web_search_tool(filters=pplx_types.WebSearchFiltersInput(search_after_date_filter=value))
    with pytest.raises(perplexity.BadRequestError) as raised:
        pplx.responses.create(model=MODEL, input="x", tools=[tool])
    err = raised.value
    assert err.status_code == 400
    assert isinstance(err.body, dict)
    error = err.body["error"]
    assert error["type"] == "invalid_date_format"
    assert error["param"] == "tools[0].filters.search_after_date_filter"
    assert error["code"] == 400
    assert value in error["message"]
    assert fake.requests() == [] and web.search_queries() == []


def test_perplexity_malformed_date_filter_names_the_tool_and_field(
    pplx: perplexity.Perplexity, fake: FakeProvider, web: WebServers
) -> None:
    tool = web_search_tool(filters=pplx_types.WebSearchFiltersInput(last_updated_before_filter="31.01.2025"))
    with pytest.raises(perplexity.BadRequestError) as raised:
        pplx.responses.create(model=MODEL, input="x", tools=[fetch_url_tool(), tool])
    assert isinstance(raised.value.body, dict)
    error = raised.value.body["error"]
    assert error["type"] == "invalid_date_format"
    assert error["param"] == "tools[1].filters.last_updated_before_filter"
    assert fake.requests() == [] and web.search_queries() == []


def test_openai_malformed_date_filter_is_invalid_date_format(
    oai: openai.OpenAI, fake: FakeProvider, web: WebServers
) -> None:
    # Perplexity's filters are not OpenAI's (`allowed_domains` only): sent as a plain dict.
    tool: Any = {"type": "web_search", "filters": {"search_after_date_filter": "2025-01-31"}}
    with pytest.raises(openai.BadRequestError) as raised:
        oai.responses.create(model=MODEL, input="x", tools=[tool])
    err = raised.value
    assert err.status_code == 400
    assert err.type == "invalid_date_format"
    assert err.param == "tools[0].filters.search_after_date_filter"
    assert fake.requests() == [] and web.search_queries() == []
