"""The published JSON schemas (spec/schema) applied to a value, without a JSON Schema library at run time.

`conform --smoke` checks every answer an adapter gives against `answer.schema.json`. jsonschema is
a test dependency only (it holds the schemas themselves to the draft in tests/), and the oracle's
core install should not grow a validator with its own dependency tree (referencing, rpds-py: a
compiled extension) for the dozen keywords these schemas use. So this module reads the schemas'
few shapes (draft 2020-12's `type`, `const`, `enum`, `required`, `properties`,
`additionalProperties`, `items`, `uniqueItems`, `oneOf`, `anyOf`, `$ref` within and across the
published files, `minimum`, `minLength`, and boolean schemas) and refuses any other keyword by name, so a schema
edited to use one fails loudly instead of being half-checked. `tests/test_10_smoke.py` holds it to
jsonschema's verdicts on every answer of every vector.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Final

from sessionspec.resources import shipped

KNOWN: Final = frozenset({"$schema", "$id", "$defs", "title", "description", "type", "const", "enum", "required",
                          "properties", "additionalProperties", "items", "uniqueItems", "oneOf", "anyOf", "$ref",
                          "minimum", "minLength", "format", "examples"})
"""The keywords this validator reads (annotations among them: `title`, `description`, `format`, `examples`)."""
TYPES: Final = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


class SchemaError(ValueError):
    """A schema uses a keyword this validator does not read: the schema changed, and this must follow it."""


@cache
def schema(name: str) -> dict[str, Any]:
    """A published schema by file name (`answer.schema.json`), from the checkout or the installed copy."""
    loaded: dict[str, Any] = json.loads((shipped("schema") / name).read_text(encoding="utf-8"))
    return loaded


def problems(value: Any, name: str, *, directory: Path | None = None) -> list[str]:
    """Where `value` breaks the schema `name` (empty when it is valid), each as `PATH: what`; bounded to the first
    few, since one wrong answer is enough to say the adapter is wrong."""
    root = schema(name) if directory is None else json.loads((directory / name).read_text(encoding="utf-8"))
    out: list[str] = []
    _check(value, root, root, name, "$", out)
    return out[:8]


def _resolve(ref: str, root: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    target, _, pointer = ref.partition("#")
    if target and target != name:
        root, name = schema(target), target
    node: Any = root
    for part in [p for p in pointer.split("/") if p]:
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node, root, name


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[kind])


def _check(value: Any, node: Any, root: dict[str, Any], name: str, path: str, out: list[str]) -> None:
    if node is True:
        return
    if node is False:
        out.append(f"{path}: no value is allowed here")
        return
    unknown = set(node) - KNOWN
    if unknown:
        raise SchemaError(f"{name} uses {sorted(unknown)}, which sessionspec.conformance.schemacheck does not read")
    if "$ref" in node:
        target, root, name = _resolve(node["$ref"], root, name)
        _check(value, target, root, name, path, out)
    kinds = node.get("type")
    if kinds is not None:
        listed = kinds if isinstance(kinds, list) else [kinds]
        if not any(_is(value, kind) for kind in listed):
            out.append(f"{path}: expected {' or '.join(listed)}, found {type(value).__name__}")
            return
    if "const" in node and not _same(value, node["const"]):
        out.append(f"{path}: expected {json.dumps(node['const'])}")
    if "enum" in node and not any(_same(value, option) for option in node["enum"]):
        out.append(f"{path}: {str(value)[:40]!r} is none of {len(node['enum'])} allowed values")
    if "minimum" in node and _is(value, "number") and value < node["minimum"]:
        out.append(f"{path}: {value} is below {node['minimum']}")
    if "minLength" in node and isinstance(value, str) and len(value) < node["minLength"]:
        out.append(f"{path}: shorter than {node['minLength']}")
    if isinstance(value, dict):
        _object(value, node, root, name, path, out)
    if isinstance(value, list) and "items" in node:
        for index, item in enumerate(value):
            _check(item, node["items"], root, name, f"{path}[{index}]", out)
    if isinstance(value, list) and node.get("uniqueItems") is True:
        twice = [index for index, item in enumerate(value) if any(_same(item, seen) for seen in value[:index])]
        out.extend(f"{path}[{index}]: {str(value[index])[:40]!r} is there twice" for index in twice[:1])
    for keyword in ("oneOf", "anyOf"):
        if keyword in node:
            _alternatives(value, node[keyword], keyword, root, name, path, out)


def _object(value: dict[str, Any], node: dict[str, Any], root: dict[str, Any], name: str, path: str,
            out: list[str]) -> None:
    out.extend(f"{path}: {key!r} is missing" for key in node.get("required", ()) if key not in value)
    properties = node.get("properties", {})
    for key, item in value.items():
        if key in properties:
            _check(item, properties[key], root, name, f"{path}.{key}", out)
        elif node.get("additionalProperties") is False:
            out.append(f"{path}: {key!r} is not allowed")
        elif isinstance(node.get("additionalProperties"), dict):
            _check(item, node["additionalProperties"], root, name, f"{path}.{key}", out)


def _alternatives(value: Any, options: list[Any], keyword: str, root: dict[str, Any], name: str, path: str,
                  out: list[str]) -> None:
    results: list[list[str]] = []
    for option in options:
        found: list[str] = []
        _check(value, option, root, name, path, found)
        results.append(found)
    valid = sum(not found for found in results)
    fewest: list[str] = sorted(results, key=len)[0] if results else []
    if keyword == "oneOf" and valid != 1:
        out.extend(fewest if valid == 0 else [f"{path}: matches {valid} of the oneOf alternatives"])
    elif keyword == "anyOf" and valid == 0:
        out.extend(fewest)


def _same(left: Any, right: Any) -> bool:
    """JSON equality: a boolean is never a number (Python's True == 1 is not JSON's)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)
