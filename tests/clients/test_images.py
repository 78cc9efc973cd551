"""The built-in `image_search` tool (spec §4.5) through the SDKs, on the SearxNG stand-in's
image category (web_servers.py).

Covered: the Perplexity SDK's typed tool (`ImageSearchToolInput` with filters); the
`image_search_results` item and its `ImageResultOutput` entries exactly as the SDK types them
(strict validation, no undeclared field); a size SearxNG does not give, measured by reading
the image through the network guard; an image URL on the metadata address left out and never
fetched; the `response.reasoning.image_search_*` events as the SDK's strict classes;
`usage.tool_calls_details.image_search`; an unknown `format_filter` entry as a 400 naming it.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import perplexity
from perplexity.generated import api as pplx_types

from conftest import MODEL, FakeProvider
from support import check_stream_invariants, exact, revalidated, tool_result_message
from web_servers import IMAGE_PATH, IMAGE_SIZE, WebServers

QUERY = "Fähre Horgen"
ANSWER = "Die Fähre fährt rund um die Uhr [1]."


def image_call() -> dict[str, Any]:
    return {"tool_calls": [["call_img_1", "image_search", json.dumps({"queries": [QUERY]}, ensure_ascii=False)]]}


def image_tool(**filters: Any) -> pplx_types.ImageSearchToolInput:
    return pplx_types.ImageSearchToolInput(
        type="image_search",
        max_results=5,
        filters=pplx_types.ImageSearchFiltersInput(**filters) if filters else None,
    )


def check_results(item: Any, web: WebServers) -> None:
    exact(item, pplx_types.ImageSearchResultsOutputItemOutput)
    assert item.queries == [QUERY] and item.error is None
    results = [exact(result, pplx_types.ImageResultOutput) for result in item.results]
    assert [(r.image_url, r.origin_url, r.title, r.width, r.height) for r in results] == [
        ("https://bilder.example.org/faehre-gross.jpg", "https://zuerich.example.org/faehre",
         "Die Fähre Horgen–Meilen", 1600, 900),
        (web.page_url(IMAGE_PATH), "https://zuerich.example.org/see", "Zürichsee", *IMAGE_SIZE),
    ]


def test_perplexity_image_search(strict_pplx: perplexity.Perplexity, fake: FakeProvider, web: WebServers) -> None:
    fake.script(image_call(), {"text": ANSWER})
    response = strict_pplx.responses.create(model=MODEL, input="Zeig mir die Fähre.", tools=[image_tool()])
    assert response.status == "completed", response.error
    assert [item.type for item in response.output] == ["image_search_results", "message"]
    check_results(response.output[0], web)
    # SearxNG was asked for images, safe search on by default.
    asked = [r.query for r in web.searxng.requests()]
    assert asked and asked[0].get("categories") == ["images"] and asked[0].get("safesearch") == ["2"]
    # The unmeasured image was read once; nothing else was fetched from the page server.
    assert web.page_hits(IMAGE_PATH) == 1
    usage = response.usage
    assert usage is not None and usage.tool_calls_details is not None
    assert exact(usage.tool_calls_details["image_search"], pplx_types.ToolCallDetailsOutput).invocation == 1
    message = exact(response.output[1], pplx_types.MessageOutputItemOutput)
    cited = [(a.url, ANSWER[a.start_index : a.end_index]) for a in message.content[0].annotations or []]
    assert cited == [("https://zuerich.example.org/faehre", "[1]")]
    told = tool_result_message(fake.requests()[1])["content"]
    assert "[1] Die Fähre Horgen–Meilen" in told and "169.254" not in told
    fake.assert_all_used()


def test_perplexity_image_search_stream(pplx: perplexity.Perplexity, fake: FakeProvider, web: WebServers) -> None:
    fake.script(image_call(), {"text": ANSWER})
    events = list(
        pplx.responses.create(model=MODEL, input="Zeig mir die Fähre.", tools=[image_tool()], stream=True)
    )
    check_stream_invariants(events)
    by_type = {event.type: event for event in events}
    asked = revalidated(by_type["response.reasoning.image_search_queries"])
    assert type(asked) is pplx_types.ImageSearchQueriesEventOutput
    assert asked.queries == [QUERY] and asked.call_id == "call_img_1"
    found = revalidated(by_type["response.reasoning.image_search_results"])
    assert type(found) is pplx_types.ImageSearchResultsEventOutput
    done = [e.item for e in events if e.type == "response.output_item.done"]
    check_results(done[0], web)
    assert [r.to_dict() for r in found.results] == [r.to_dict() for r in done[0].results]
    fake.assert_all_used()


def test_an_unknown_image_format_is_bad_request(http: httpx.Client, fake: FakeProvider) -> None:
    # The SDK refuses "tiff" itself (its type names the six formats): sent as plain JSON.
    tool = {"type": "image_search", "filters": {"format_filter": ["png", "tiff"]}}
    answer = http.post("/v1/responses", json={"model": MODEL, "input": "x", "tools": [tool]})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["type"] == "invalid_request"
    assert error["param"] == "tools[0].filters.format_filter[1]" and "tiff" in error["message"]
    assert fake.requests() == []
