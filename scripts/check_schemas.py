#!/usr/bin/env python3
"""Independent check of the GABP JSON Schemas with Python's `jsonschema` package.

Every message file is validated against a schema directory (normally our generated
`SCHEMA/1.0`) and the verdict is compared with the folder the file was given in.

Usage:
    python3 scripts/check_schemas.py --schemas SCHEMA/1.0 \
        [--expect-valid PATH]... [--expect-invalid PATH]... [--index FILE]... [--explain]

    --schemas DIR          schema directory (envelope.schema.json, methods/, events/, common/)
    --expect-valid PATH    a message file, or a directory searched recursively for *.json,
                           whose messages must all be accepted
    --expect-invalid PATH  the same, for messages that must all be rejected
    --index FILE           a JSON object mapping a response file's path (relative to the
                           index file's directory) to the request method whose result it
                           carries, e.g. {"valid/012_tools_list_result.json": "tools/list"};
                           may be given several times
    --explain              also print why each rejected file was rejected

Files named `index.json` are never treated as messages.

Which schemas apply to a message:
    - always `envelope.schema.json`;
    - a request whose `method` has `methods/<method, "/" as ".">.request.json`: that schema;
    - a response listed in an index: the method's `methods/<...>.response.json`
      (`session.welcome.response.json` for `session/hello`); an error response is valid
      for any method, so these schemas must accept one (our corpus checks that they do);
    - an event whose `channel` starts with `attention/`: its `payload` against
      `events/attention.payload.schema.json`;
    - an event on `tools/changed`: its `payload` against
      `events/tools-changed.payload.schema.json`.
A message is valid iff every applicable schema accepts it; a file that is not JSON is invalid.

Validation uses Draft7Validator with format checking on. Draft 7's format checker has no
"uuid", so the draft 2020-12 "uuid" checker is added to it; "uri" needs the `rfc3987`
package and "date-time" the `rfc3339-validator` package. The script refuses to run (exit 2)
if any of the three formats is not really checked, instead of silently skipping it.
Every schema file is registered under its `$id` (and its file URI) with `referencing`, so
relative `$ref`s between schema files resolve.

Output: one line per file, `ok PATH` or `MISMATCH PATH: expected X, got Y (first error)`,
then `N passed, M failed`. Exit status: 0 when every verdict matches, 1 when any does
not, 2 on a usage, setup or I/O error.

Requirements: pip install jsonschema rfc3987 rfc3339-validator referencing
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

try:
    import jsonschema
    import referencing
    import referencing.jsonschema
    from jsonschema import Draft7Validator, Draft202012Validator, FormatChecker
    from jsonschema.exceptions import best_match
except ImportError as exc:  # pragma: no cover - environment problem
    sys.exit(f"error: {exc}; run: pip install jsonschema rfc3987 rfc3339-validator referencing")

REQUIRED_FORMATS = {
    "uri": "rfc3987",
    "date-time": "rfc3339-validator",
    "uuid": "jsonschema >= 4 (draft 2020-12 format checker)",
}


class SetupError(Exception):
    """A problem with the environment, the schemas or the arguments (exit 2)."""


def format_checker() -> FormatChecker:
    """Draft 7's format checker plus "uuid"; fails unless uri, date-time and uuid are enforced."""
    for module, package in (("rfc3987", "rfc3987"), ("rfc3339_validator", "rfc3339-validator")):
        try:
            __import__(module)
        except ImportError as exc:
            raise SetupError(f"the Python package {package!r} is missing ({exc}); "
                             f"run: pip install jsonschema rfc3987 rfc3339-validator referencing")
    checker = FormatChecker(formats=())
    checker.checkers = dict(Draft7Validator.FORMAT_CHECKER.checkers)
    if "uuid" not in checker.checkers:
        uuid_check = Draft202012Validator.FORMAT_CHECKER.checkers.get("uuid")
        if uuid_check is not None:
            checker.checkers["uuid"] = uuid_check
    missing = [f"{name} (needs {pkg})" for name, pkg in REQUIRED_FORMATS.items() if name not in checker.checkers]
    if missing:
        raise SetupError("format checker lacks: " + ", ".join(missing))
    # Prove the checks are live, not merely registered.
    probes = [
        ("uri", "gabp://game/world", True), ("uri", "world", False), ("uri", "not a uri", False),
        ("date-time", "2026-03-01T12:00:00.250Z", True), ("date-time", "2026-03-01T12:00:00", False),
        ("uuid", "c56a4180-65aa-42ec-a945-5fd21dec0538", True),
        ("uuid", "{c56a4180-65aa-42ec-a945-5fd21dec0538}", False),
        ("uuid", "urn:uuid:c56a4180-65aa-42ec-a945-5fd21dec0538", False),
        ("uuid", "c56a418065aa42eca9455fd21dec0538", False),
    ]
    for fmt, value, expected in probes:
        if checker.conforms(value, fmt) != expected:
            raise SetupError(f"format {fmt!r} is not enforced as expected on {value!r}")
    return checker


class Schemas:
    """The schema directory: a referencing registry and the validators we need."""

    def __init__(self, root: Path, checker: FormatChecker):
        if not (root / "envelope.schema.json").is_file():
            raise SetupError(f"{root}: no envelope.schema.json")
        self.root = root
        self.checker = checker
        self.uri_of: dict[Path, str] = {}
        registry = referencing.Registry()
        draft7 = referencing.jsonschema.DRAFT7
        for path in sorted(root.rglob("*.json")):
            try:
                contents = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise SetupError(f"{path}: cannot read schema: {exc}")
            try:
                Draft7Validator.check_schema(contents)
            except jsonschema.SchemaError as exc:
                raise SetupError(f"{path}: not a valid draft-07 schema: {exc.message}")
            resource = draft7.create_resource(contents)
            file_uri = path.resolve().as_uri()
            uris = [file_uri]
            declared = contents.get("$id") if isinstance(contents, dict) else None
            if isinstance(declared, str) and declared:
                uris.insert(0, declared.rstrip("#"))
            for uri in uris:
                registry = registry.with_resource(uri, resource)
            self.uri_of[path.resolve()] = uris[0]
        self.registry = registry.crawl()
        self._validators: dict[Path, Draft7Validator] = {}

    def validator(self, rel: str) -> Draft7Validator | None:
        path = (self.root / rel).resolve()
        if path not in self.uri_of:
            return None
        if path not in self._validators:
            # Validate through a $ref so the schema's base URI comes from the registry,
            # which also works for a root that carries $ref beside $id.
            self._validators[path] = Draft7Validator(
                {"$ref": self.uri_of[path]}, registry=self.registry, format_checker=self.checker)
        return self._validators[path]

    @staticmethod
    def method_file(method: str, kind: str) -> str | None:
        if not isinstance(method, str) or not method or "." in method or "\\" in method:
            return None
        parts = method.split("/")
        if any(p in ("", ".", "..") for p in parts):
            return None
        if kind == "response" and method == "session/hello":
            return "methods/session.welcome.response.json"
        return f"methods/{'.'.join(parts)}.{kind}.json"


def narrow(error):
    """For a failed oneOf/anyOf, follow the branch whose `type` discriminator matched."""
    while error.validator in ("oneOf", "anyOf") and error.context:
        branches: dict = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        matching = [errs for errs in branches.values()
                    if not any(list(e.relative_path) == ["type"] for e in errs)]
        if len(matching) != 1:
            break
        error = best_match(matching[0])
    return error


def first_error(validator: Draft7Validator, instance, label: str) -> str | None:
    error = best_match(validator.iter_errors(instance))
    if error is None:
        return None
    error = narrow(error)
    pointer = "/" + "/".join(str(p) for p in error.absolute_path)
    message = error.message
    if error.validator == "not":
        message = f"must not be valid under {json.dumps(error.validator_value)}"
    if len(message) > 160:
        message = message[:157] + "..."
    return f"{label} at {pointer}: {message}"


def check_message(schemas: Schemas, msg, method: str | None) -> str | None:
    """Returns None if the message is valid, else the first reason it is not."""
    checks = [("envelope.schema.json", msg, "envelope")]
    if isinstance(msg, dict):
        kind = msg.get("type")
        if kind == "request":
            rel = Schemas.method_file(msg.get("method"), "request")
            if rel:
                checks.append((rel, msg, rel))
        elif kind == "response" and method is not None:
            rel = Schemas.method_file(method, "response")
            if rel is None or schemas.validator(rel) is None:
                print(f"note: no response schema for {method!r}; envelope only", file=sys.stderr)
            else:
                checks.append((rel, msg, rel))
        elif kind == "event":
            channel = msg.get("channel")
            if isinstance(channel, str) and channel.startswith("attention/") and "payload" in msg:
                checks.append(("events/attention.payload.schema.json", msg["payload"], "attention payload"))
            elif channel == "tools/changed" and "payload" in msg:
                checks.append(("events/tools-changed.payload.schema.json", msg["payload"], "tools-changed payload"))
    for rel, instance, label in checks:
        validator = schemas.validator(rel)
        if validator is None:
            if rel in ("envelope.schema.json", "events/attention.payload.schema.json"):
                raise SetupError(f"{schemas.root}: missing {rel}")
            continue
        reason = first_error(validator, instance, label)
        if reason:
            return reason
    return None


def message_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        return sorted(p for p in path.rglob("*.json") if p.name != "index.json" and p.is_file())
    raise SetupError(f"{path}: no such file or directory")


def load_indexes(paths: list[Path]) -> dict[Path, str]:
    methods: dict[Path, str] = {}
    for index in paths:
        try:
            data = json.loads(index.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SetupError(f"{index}: cannot read index: {exc}")
        if not isinstance(data, dict):
            raise SetupError(f"{index}: an index must be a JSON object")
        for rel, method in data.items():
            target = (index.parent / rel).resolve()
            if not isinstance(method, str):
                raise SetupError(f"{index}: {rel}: method must be a string")
            if not target.is_file():
                raise SetupError(f"{index}: {rel}: no such file")
            if methods.get(target, method) != method:
                raise SetupError(f"{index}: {rel}: indexed twice with different methods")
            methods[target] = method
    return methods


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schemas", required=True, type=Path, help="schema directory, e.g. SCHEMA/1.0")
    parser.add_argument("--expect-valid", action="append", default=[], type=Path, metavar="PATH")
    parser.add_argument("--expect-invalid", action="append", default=[], type=Path, metavar="PATH")
    parser.add_argument("--index", action="append", default=[], type=Path, metavar="FILE")
    parser.add_argument("--explain", action="store_true", help="print why each rejected file was rejected")
    args = parser.parse_args(argv)
    if not args.expect_valid and not args.expect_invalid:
        parser.error("give at least one --expect-valid or --expect-invalid")

    try:
        schemas = Schemas(args.schemas, format_checker())
        methods = load_indexes(args.index)
        cases = [(p, True) for d in args.expect_valid for p in message_files(d)]
        cases += [(p, False) for d in args.expect_invalid for p in message_files(d)]
        if not cases:
            raise SetupError("no message files found")
        passed = failed = 0
        for path, expect_valid in cases:
            try:
                msg = json.loads(path.read_text(encoding="utf-8"))
            except UnicodeDecodeError as exc:
                reason = f"not UTF-8: {exc}"
            except ValueError as exc:
                reason = f"not JSON: {exc}"
            else:
                reason = check_message(schemas, msg, methods.get(path.resolve()))
            is_valid = reason is None
            if is_valid == expect_valid:
                passed += 1
                extra = f" (rejected: {reason})" if args.explain and reason else ""
                print(f"ok {path}{extra}")
            else:
                failed += 1
                want, got = ("valid", "invalid") if expect_valid else ("invalid", "valid")
                why = reason or "every applicable schema accepted it"
                print(f"MISMATCH {path}: expected {want}, got {got} ({why})")
    except (SetupError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
