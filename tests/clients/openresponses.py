"""Validation against the Open Responses OpenAPI document (version 2026-04-24, a copy in
`openresponses-openapi.json`): response objects against `ResponseResource`, stream events
against the `…StreamingEvent` schema whose `type` enum names the event's type.

What the document does not define is not validated, and `Validator.undefined` counts it so the
test can say so:
- event types without a schema (Perplexity's `response.reasoning.*`, the MCP events, …);
- output items and tools of types the document does not define (`mcp_call`, `search_results`,
  `web_search`, `mcp`, …): `ItemField` and `Tool` also accept an object whose `type` is none of
  the defined ones. An item or tool of a defined type is validated in full.

One erratum is applied to the copy in memory (`ERRATA`), where the published document
contradicts its own source: `JsonSchemaResponseFormat.schema` is `{"type": "null"}` in the
published file, while the project's schema source (`schema/components/schemas/
JsonSchemaResponseFormat.json`) and the request side (`JsonSchemaResponseFormatParam`) have the
JSON Schema object (`object` or null): no response echoing a structured-output format could pass
the published rule.

`$ref`s resolve inside the document (`referencing`), with the JSON Schema 2020-12 dialect of
OpenAPI 3.1; the OpenAPI `discriminator` keyword is not a JSON Schema keyword and is ignored,
while the `type` enum of each branch of a `oneOf` does the same job.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOCUMENT = Path(__file__).with_name("openresponses-openapi.json")
_URI = "urn:openresponses"


def _defined_types(schemas: dict[str, Any], refs: list[dict[str, Any]]) -> list[str]:
    """The `type` enum values of the referenced object schemas."""
    types = []
    for ref in refs:
        name = ref["$ref"].rsplit("/", 1)[1]
        types.extend(schemas[name]["properties"]["type"]["enum"])
    return types


def _extension(defined: list[str]) -> dict[str, Any]:
    """An object whose `type` is a string none of `defined`."""
    return {
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"type": "string", "not": {"enum": defined}}},
    }


# (schema, property) -> the property's schema in place of the published one (see above).
ERRATA: dict[tuple[str, str], dict[str, Any]] = {
    ("JsonSchemaResponseFormat", "schema"): {"anyOf": [{"type": "object"}, {"type": "null"}]},
}


@dataclass(frozen=True)
class Failure:
    """One place where an instance breaks the document."""

    where: str  # e.g. "ResponseResource", "response.output_item.added"
    path: str  # JSON path inside the instance, e.g. "$.response.tools[0].strict"
    rule: str  # the keyword broken, its value and the schema's title, e.g. 'type: "number"'
    message: str

    def __str__(self) -> str:
        return f"{self.where} {self.path}: {self.message} ({self.rule})"


class Validator:
    """Validates response objects and events, counting what it validated and what it skipped."""

    def __init__(self, document: Path = DOCUMENT) -> None:
        doc = json.loads(document.read_text())
        schemas = doc["components"]["schemas"]
        self.schemas = schemas
        patched = copy.deepcopy(doc)
        patched_schemas = patched["components"]["schemas"]
        for (name, prop), replacement in ERRATA.items():
            patched_schemas[name]["properties"][prop] = replacement
        self.item_types = _defined_types(schemas, schemas["ItemField"]["oneOf"])
        patched_schemas["ItemField"]["oneOf"].append(_extension(self.item_types))
        self.tool_types = _defined_types(schemas, [schemas["Tool"]])
        patched_schemas["Tool"] = {
            "anyOf": [{"$ref": schemas["Tool"]["$ref"]}, _extension(self.tool_types)]
        }
        resource = Resource.from_contents(patched, default_specification=DRAFT202012)
        self._registry = Registry().with_resource(_URI, resource)
        self.event_schemas = {
            schema["properties"]["type"]["enum"][0]: name
            for name, schema in schemas.items()
            if name.endswith("StreamingEvent") and not name.startswith("WebSocket")
        }
        self._validators: dict[str, jsonschema.Draft202012Validator] = {}
        # What was seen but is not in the document: event types, item types, tool types.
        self.undefined: dict[str, Counter[str]] = {
            "event": Counter(),
            "item": Counter(),
            "tool": Counter(),
        }
        self.validated: Counter[str] = Counter()

    def _validator(self, name: str) -> jsonschema.Draft202012Validator:
        if name not in self._validators:
            self._validators[name] = jsonschema.Draft202012Validator(
                {"$ref": f"{_URI}#/components/schemas/{name}"}, registry=self._registry
            )
        return self._validators[name]

    def response(self, response: Any) -> list[Failure]:
        """A response object against `ResponseResource`."""
        self._note_undefined(response)
        self.validated["ResponseResource"] += 1
        return self._check("ResponseResource", "ResponseResource", response)

    def compaction(self, resource: Any) -> list[Failure]:
        """A `/responses/compact` answer against `CompactResource`."""
        self._note_undefined(resource)
        self.validated["CompactResource"] += 1
        return self._check("CompactResource", "CompactResource", resource)

    def event(self, event: Any) -> list[Failure] | None:
        """A stream event against its `…StreamingEvent` schema; None when the document defines
        no event of its type."""
        kind = event.get("type") if isinstance(event, dict) else None
        name = self.event_schemas.get(kind) if isinstance(kind, str) else None
        if name is None:
            self.undefined["event"][str(kind)] += 1
            return None
        self._note_undefined(event.get("response"))
        self._note_undefined({"output": [event["item"]]} if isinstance(event.get("item"), dict) else None)
        self.validated[kind] += 1
        return self._check(kind, name, event)

    def _note_undefined(self, response: Any) -> None:
        if not isinstance(response, dict):
            return
        for item in response.get("output") or []:
            if isinstance(item, dict) and item.get("type") not in self.item_types:
                self.undefined["item"][str(item.get("type"))] += 1
        for tool in response.get("tools") or []:
            if isinstance(tool, dict) and tool.get("type") not in self.tool_types:
                self.undefined["tool"][str(tool.get("type"))] += 1

    def _check(self, where: str, name: str, instance: Any) -> list[Failure]:
        failures = []
        for error in self._validator(name).iter_errors(instance):
            for leaf in _leaves(error):
                failures.append(
                    Failure(
                        where,
                        leaf.json_path,
                        f"{leaf.validator}: {_schema_location(leaf)}",
                        _message(leaf),
                    )
                )
        return failures


def _branch_errors(error: jsonschema.ValidationError) -> dict[int, list[jsonschema.ValidationError]]:
    branches: dict[int, list[jsonschema.ValidationError]] = {}
    for sub in error.context or []:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    return branches


def _wrong_kind(errors: list[jsonschema.ValidationError]) -> bool:
    """The branch is about another kind of value: its `type` field (the discriminator) or the
    JSON type of the value itself does not match."""
    for sub in errors:
        if sub.validator in ("enum", "const") and list(sub.relative_path) == ["type"]:
            return True
        if sub.validator == "not" and list(sub.relative_path) == ["type"]:
            return True
        if sub.validator == "type" and not sub.relative_path:
            return True
    return False


def _leaves(error: jsonschema.ValidationError) -> Iterator[jsonschema.ValidationError]:
    """The errors that say what is wrong: through a `oneOf` / `anyOf`, the errors of the one
    branch the value was meant for (the branch whose `type` matches), when there is one."""
    if error.validator in ("oneOf", "anyOf") and error.context:
        meant = [errs for errs in _branch_errors(error).values() if not _wrong_kind(errs)]
        if len(meant) == 1:
            for sub in meant[0]:
                yield from _leaves(sub)
            return
    yield error


def _schema_location(error: jsonschema.ValidationError) -> str:
    """The rule broken: the keyword, its value, and the title of the schema holding it."""
    value = json.dumps(error.validator_value)
    if len(value) > 120:
        value = value[:117] + "..."
    title = error.schema.get("title") if isinstance(error.schema, dict) else None
    return f"{value}" + (f" in {title!r}" if title else "")


def _message(error: jsonschema.ValidationError) -> str:
    instance = json.dumps(error.instance)
    if len(instance) > 160:
        instance = instance[:157] + "..."
    if error.validator == "required":
        return error.message
    return f"{instance}: {error.message[-200:]}"
