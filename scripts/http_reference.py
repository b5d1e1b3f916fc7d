#!/usr/bin/env python3
"""Write docs/http-api.md, the HTTP API's reference, from its OpenAPI description.

python scripts/http_reference.py           regenerate it
python scripts/http_reference.py --check   fail when it is stale (tests/test_http.py runs this check)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "http-api.md"


def render(spec: dict[str, Any]) -> str:
    schemas = spec.get("components", {}).get("schemas", {})
    out = [
        "# HTTP API reference",
        "",
        "Generated from the app's OpenAPI description (`/openapi.json`) by `scripts/http_reference.py`;",
        "do not edit. How to run it, keys and examples: the README's *HTTP API* section.",
        "",
        f"{spec['info']['description']}",
        "",
        "Every `/v1` call sends `Authorization: Bearer sbk_…`. Errors are JSON: "
        + _fields(schemas["Problem"], schemas),
        "",
    ]
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            out += [f"## {method.upper()} `{path}`", "", op.get("summary", ""), ""]
            if op.get("description"):
                out += [op["description"].strip(), ""]
            params = [p for p in op.get("parameters", []) if p["name"] != "authorization"]
            if params:
                out.append("| parameter | in | required | type |")
                out.append("| --- | --- | --- | --- |")
                for p in params:
                    needed = "yes" if p.get("required") else "no"
                    out.append(f"| `{p['name']}` | {p['in']} | {needed} | {_type(p.get('schema', {}))} |")
                out.append("")
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body:
                out += ["Body (JSON): " + _fields(_resolve(body, schemas), schemas), ""]
            out += ["| status | answer |", "| --- | --- |"]
            for status, answer in op.get("responses", {}).items():
                content = answer.get("content", {})
                kinds = ", ".join(f"`{c}`" for c in content)
                schema = content.get("application/json", {}).get("schema")
                shape = f" {_name(schema)}" if schema and "$ref" in schema else ""
                out.append(
                    f"| {status} | {answer.get('description', '')}{shape} {kinds} |".replace("  ", " ")
                )
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def _resolve(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    return schemas[_name(schema)] if "$ref" in schema else schema


def _name(schema: dict[str, Any]) -> str:
    return str(schema["$ref"]).rsplit("/", 1)[-1]


def _type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    if "$ref" in schema:
        return _name(schema)
    if schema.get("type") == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if "enum" in schema:
        return " / ".join(f"`{v}`" for v in schema["enum"])
    return str(schema.get("type", "any"))


def _fields(schema: dict[str, Any], schemas: dict[str, Any]) -> str:
    required = set(schema.get("required", []))
    parts = []
    for name, field in schema.get("properties", {}).items():
        note = f" ({field['description']})" if field.get("description") else ""
        limit = f", at most {field['maxLength']} characters" if "maxLength" in field else ""
        parts.append(f"`{name}` {_type(field)}{'' if name in required else ', optional'}{limit}{note}")
    return "; ".join(parts) + "."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from supportbot.config import Settings
    from supportbot.http import create_app

    spec = create_app(settings=Settings(database_url="postgresql://unused")).openapi()
    text = render(json.loads(json.dumps(spec)))
    if args.check:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text:
            print("docs/http-api.md is stale: run scripts/http_reference.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
