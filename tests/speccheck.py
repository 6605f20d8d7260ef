"""Check HTTP requests against the official Gitea / Forgejo OpenAPI (Swagger 2.0) specs.

The fake forge calls :meth:`SpecChecker.check` on every request it receives, so a
request that a real server's published API does not allow fails the test that
sent it, even when the fake itself answers it.

The spec files are data owned by the project's shared folder, never copied
into the project: they are read from ``../shared/forge-specs`` next to the
repository (or the folder named by ``MADTEA_FORGE_SPECS``).  When they are
absent (a user's own clone), every check is skipped with a clear reason.

What is checked, per request:

- an operation exists for the method and path (``{param}`` templates under the
  spec's ``basePath``);
- path parameters have the declared type (integer vs string, enums);
- every query parameter is declared by the operation (or is an API-key
  security parameter such as Gitea's deprecated ``token``) and has the
  declared type; arrays honour ``collectionFormat``; required ones are present;
- a JSON body is allowed, has an accepted ``Content-Type``, parses, and matches
  the ``in: body`` schema (``$ref`` resolved): required fields, property types,
  enums, date-time strings, and no property the schema does not declare;
- a ``multipart/form-data`` body is checked against the ``formData`` parameters.

Swagger 2.0 schemas are read with Go's decoding rules in mind rather than fed
to a generic JSON-Schema validator: Go accepts ``null`` for any optional field,
silently drops undeclared fields (which is why they are reported here: the
server would ignore them without a word), and a declared property name is the
exact wire name (Gitea's ``MergePullRequestOption`` really is ``Do``,
``MergeTitleField``, ``MergeMessageField``).
"""
from __future__ import annotations

__all__ = [
    "SPECS_ENV",
    "FLAVOURS",
    "SpecChecker",
    "Operation",
    "specs_dir",
    "spec_path",
    "spec_skip_reason",
    "load_spec",
    "checker_for",
    "undeclared_keys",
]

import email.parser
import email.policy
import json
import os
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import unquote

SPECS_ENV = "MADTEA_FORGE_SPECS"
FLAVOURS = ("gitea", "forgejo")
_SPEC_FILES = {"gitea": "gitea-swagger-v1.json", "forgejo": "forgejo-swagger-v1.json"}

# Go's strconv.ParseBool, which Gitea's form binding uses for boolean parameters.
_GO_BOOLS = {"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"}
_INT_RE = re.compile(r"^[+-]?\d+$")
_NUMBER_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
# RFC 3339 as Go's time.Parse(time.RFC3339, ...) accepts it.
_DATETIME_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)
_COLLECTION_SEPARATORS = {"csv": ",", "ssv": " ", "tsv": "\t", "pipes": "|"}
# Parameters that Gitea routes with a wildcard, so a client may send them with
# unescaped slashes ("feature/x") and the real server still matches.
_GREEDY_PARAMS = frozenset({"branch", "tag", "filepath"})
_MAX_REF_DEPTH = 32


# --------------------------------------------------------------------------- locating and loading

# Read once at import: the test seal scrubs MADTEA_* variables from each test's
# environment, and a user's override must survive that.
_SPECS_AT_IMPORT = os.environ.get(SPECS_ENV)


def specs_dir() -> Path:
    """The folder holding the spec files: ``$MADTEA_FORGE_SPECS`` or ``<repo>/../shared/forge-specs``.

    The variable is read now (so a test can point it elsewhere) and, failing
    that, as it was when this module was imported.
    """
    override = os.environ.get(SPECS_ENV) or _SPECS_AT_IMPORT
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "shared" / "forge-specs"


def spec_path(flavour: str) -> Path:
    """The spec file for *flavour* ("gitea" or "forgejo")."""
    if flavour not in _SPEC_FILES:
        raise ValueError(f"unknown forge flavour {flavour!r}; expected one of {FLAVOURS}")
    return specs_dir() / _SPEC_FILES[flavour]


def spec_skip_reason(flavour: str) -> str | None:
    """Why spec checks for *flavour* cannot run, or None when they can."""
    path = spec_path(flavour)
    if not path.is_file():
        return (
            f"spec checks skipped: {path} is absent (the official {flavour} OpenAPI spec "
            f"lives outside the project; set {SPECS_ENV} to the folder holding it)"
        )
    return None


@lru_cache(maxsize=None)
def _load_spec_file(path: str, mtime_ns: int) -> dict[str, Any]:
    # Keyed by path and mtime so that a test pointing MADTEA_FORGE_SPECS elsewhere
    # gets that folder, while the ~800 KB default files are parsed once per process.
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def load_spec(flavour: str) -> dict[str, Any]:
    """The parsed spec for *flavour*; raises FileNotFoundError when absent."""
    path = spec_path(flavour)
    return _load_spec_file(str(path), path.stat().st_mtime_ns)


_checker_lock = threading.Lock()
_checkers: dict[tuple[str, str, int], "SpecChecker"] = {}


def checker_for(flavour: str) -> "SpecChecker | None":
    """A cached checker for *flavour*, or None when its spec file is absent."""
    if spec_skip_reason(flavour) is not None:
        return None
    path = spec_path(flavour)
    key = (flavour, str(path), path.stat().st_mtime_ns)
    with _checker_lock:
        checker = _checkers.get(key)
        if checker is None:
            checker = SpecChecker(load_spec(flavour), flavour)
            _checkers[key] = checker
        return checker


# --------------------------------------------------------------------------- operations

@dataclass(frozen=True)
class Operation:
    """One spec operation: method, path template and its parameters by location."""

    method: str
    template: str
    operation_id: str
    path_params: Mapping[str, Mapping[str, Any]]
    query_params: Mapping[str, Mapping[str, Any]]
    form_params: Mapping[str, Mapping[str, Any]]
    body_param: Mapping[str, Any] | None
    consumes: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.method} {self.template} ({self.operation_id})"


@dataclass
class _Template:
    template: str
    regex: re.Pattern[str]
    rank: tuple[float, ...]
    operations: dict[str, Operation] = field(default_factory=dict)


def _segment_regex(segment: str) -> tuple[str, float]:
    """Regex for one template segment and its rank (0 literal, 1 parameter, between for mixed)."""
    parts = re.split(r"(\{[^}]+\})", segment)
    out = []
    params = 0
    for part in parts:
        if not part:
            continue
        if part.startswith("{"):
            name = part[1:-1]
            params += 1
            out.append(f"(?P<{_group(name)}>[^/]+?)")
        else:
            out.append(re.escape(part))
    if params == 0:
        return "".join(out), 0.0
    if len(parts) == 3 and not parts[0] and not parts[2]:
        return "".join(out), 1.0
    return "".join(out), 0.5


def _group(name: str) -> str:
    """A regex group name for a parameter name (Swagger names may contain '-')."""
    return "p_" + re.sub(r"\W", "_", name)


def _compile_template(template: str) -> tuple[re.Pattern[str], tuple[float, ...]]:
    segments = template.strip("/").split("/")
    pieces: list[str] = []
    rank: list[float] = []
    for index, segment in enumerate(segments):
        piece, weight = _segment_regex(segment)
        last = index == len(segments) - 1
        name = segment[1:-1] if weight == 1.0 else ""
        if last and name in _GREEDY_PARAMS:
            piece = f"(?P<{_group(name)}>.+?)"
        pieces.append(piece)
        rank.append(weight)
    return re.compile("^/" + "/".join(pieces) + "$"), tuple(rank)


def _is_greedy(template: str) -> bool:
    last = template.rstrip("/").rsplit("/", 1)[-1]
    return last.startswith("{") and last.endswith("}") and last[1:-1] in _GREEDY_PARAMS


# --------------------------------------------------------------------------- the checker

class SpecChecker:
    """Matches requests to operations of one spec and reports what the spec does not allow."""

    def __init__(self, spec: Mapping[str, Any], flavour: str) -> None:
        self.flavour = flavour
        self.spec = spec
        self.version = str(spec.get("info", {}).get("version", "?"))
        self.base_path = str(spec.get("basePath", "")).rstrip("/")
        self.definitions: Mapping[str, Any] = spec.get("definitions", {})
        self._global_consumes = tuple(spec.get("consumes", ("application/json",)))
        # API-key security schemes passed in the query string (Gitea's deprecated
        # ?token= / ?access_token=, and ?sudo=) are valid on every operation.
        self.security_query = frozenset(
            scheme["name"]
            for scheme in spec.get("securityDefinitions", {}).values()
            if scheme.get("type") == "apiKey" and scheme.get("in") == "query"
        )
        self._templates = self._build_templates(spec.get("paths", {}))

    # ----------------------------------------------------------------- building

    def _build_templates(self, paths: Mapping[str, Any]) -> list[_Template]:
        templates = []
        for template, item in paths.items():
            regex, rank = _compile_template(template)
            entry = _Template(template, regex, rank)
            shared = item.get("parameters", [])
            for method, op in item.items():
                if method == "parameters" or not isinstance(op, dict):
                    continue
                entry.operations[method.upper()] = self._operation(method.upper(), template, op, shared)
            templates.append(entry)
        # Most specific first: literal segments beat parameters at the first
        # position where two templates differ ("/repos/issues/search" before
        # "/repos/{owner}/{repo}").
        # Wildcard templates go last so they never shadow a longer literal path.
        templates.sort(key=lambda t: (_is_greedy(t.template), len(t.rank), t.rank))
        return templates

    def _operation(self, method: str, template: str, op: Mapping[str, Any], shared: Sequence[Any]) -> Operation:
        path_params: dict[str, Any] = {}
        query_params: dict[str, Any] = {}
        form_params: dict[str, Any] = {}
        body_param = None
        for raw in [*shared, *op.get("parameters", [])]:
            param = self._resolve(raw)
            where = param.get("in")
            if where == "path":
                path_params[param["name"]] = param
            elif where == "query":
                query_params[param["name"]] = param
            elif where == "formData":
                form_params[param["name"]] = param
            elif where == "body":
                body_param = param
        return Operation(
            method=method,
            template=template,
            operation_id=str(op.get("operationId", "?")),
            path_params=path_params,
            query_params=query_params,
            form_params=form_params,
            body_param=body_param,
            consumes=tuple(op.get("consumes", self._global_consumes)),
        )

    def _resolve(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        """Follow ``$ref`` chains ("#/definitions/X", "#/parameters/X") to the target node."""
        depth = 0
        while isinstance(node, Mapping) and "$ref" in node:
            depth += 1
            if depth > _MAX_REF_DEPTH:
                raise ValueError(f"$ref chain too deep at {node['$ref']}")
            pointer = str(node["$ref"])
            if not pointer.startswith("#/"):
                raise ValueError(f"unsupported $ref {pointer}")
            target: Any = self.spec
            for part in pointer[2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
        return node

    # ----------------------------------------------------------------- matching

    def match(self, method: str, path: str) -> tuple[Operation | None, dict[str, str], list[str]]:
        """The operation for *method* and raw *path* (with basePath), its path values, and problems.

        The path is matched on its raw (still percent-encoded) form, segment by
        segment, as Go's router does; parameter values are then unquoted.
        """
        method = method.upper()
        if self.base_path and not (path == self.base_path or path.startswith(self.base_path + "/")):
            return None, {}, [f"{path} is outside the API base path {self.base_path}"]
        relative = path[len(self.base_path):] or "/"
        for entry in self._templates:
            found = entry.regex.match(relative)
            if not found:
                continue
            op = entry.operations.get(method)
            if op is None:
                allowed = ", ".join(sorted(entry.operations))
                return None, {}, [f"{method} {entry.template} is not an operation (the spec allows {allowed})"]
            values = {}
            for name in op.path_params:
                raw = found.groupdict().get(_group(name))
                if raw is not None:
                    values[name] = unquote(raw)
            return op, values, []
        return None, {}, [f"no operation in the {self.flavour} {self.version} spec matches {method} {path}"]

    # ----------------------------------------------------------------- checking

    def check(
        self,
        method: str,
        path: str,
        query: Iterable[tuple[str, str]] | Mapping[str, Any] = (),
        body: bytes | str | None = None,
        content_type: str | None = None,
    ) -> list[str]:
        """Violations of the spec by one request; an empty list means the spec allows it.

        *path* is the raw request path including the base path (``/api/v1/...``);
        *query* is a list of (name, value) pairs or a mapping of name to a value
        or a list of values; *body* is the raw request body.
        """
        op, path_values, problems = self.match(method, path)
        if op is None:
            return [f"{method.upper()} {path} (no operation): {problem}" for problem in problems]
        found: list[str] = []
        found += self._check_path(op, path_values)
        found += self._check_query(op, _query_pairs(query))
        found += self._check_body(op, body, content_type)
        return [f"{op.label}: {problem}" for problem in found]

    def _check_path(self, op: Operation, values: Mapping[str, str]) -> list[str]:
        problems = []
        for name, param in op.path_params.items():
            value = values.get(name)
            if value is None or value == "":
                problems.append(f"path parameter {name} is missing")
                continue
            problem = _scalar_problem(param, value)
            if problem:
                problems.append(f"path parameter {name}: {problem}")
        return problems

    def _check_query(self, op: Operation, pairs: list[tuple[str, str]]) -> list[str]:
        problems = []
        grouped: dict[str, list[str]] = {}
        for name, value in pairs:
            grouped.setdefault(name, []).append(value)
        for name, values in grouped.items():
            param = op.query_params.get(name)
            if param is None:
                if name in self.security_query:
                    continue
                known = ", ".join(sorted(op.query_params)) or "none"
                problems.append(f"query parameter {name!r} is not declared (declared: {known})")
                continue
            problems += _query_value_problems(name, param, values)
        for name, param in op.query_params.items():
            if param.get("required") and name not in grouped:
                problems.append(f"required query parameter {name!r} is missing")
        return problems

    def _check_body(self, op: Operation, body: bytes | str | None, content_type: str | None) -> list[str]:
        raw = body.encode("utf-8") if isinstance(body, str) else (body or b"")
        media = (content_type or "").split(";", 1)[0].strip().lower()
        if op.form_params:
            return self._check_form(op, raw, content_type or "")
        if op.body_param is None:
            if raw.strip():
                return ["the operation takes no request body, but one was sent"]
            return []
        if not raw.strip():
            if op.body_param.get("required"):
                return ["the request body is required but none was sent"]
            return []
        problems = []
        if not media:
            problems.append("a body was sent without a Content-Type (the server's binder needs application/json)")
        elif media not in op.consumes:
            problems.append(f"Content-Type {media} is not accepted (consumes: {', '.join(op.consumes)})")
        try:
            document = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            return problems + [f"the body is not valid JSON ({exc})"]
        schema = op.body_param.get("schema", {})
        problems += self.schema_problems(schema, document, "body")
        return problems

    def _check_form(self, op: Operation, raw: bytes, content_type: str) -> list[str]:
        media = content_type.split(";", 1)[0].strip().lower()
        if media not in ("multipart/form-data", "application/x-www-form-urlencoded"):
            if media in op.consumes:
                return []  # e.g. application/octet-stream uploads: the raw body is the file
            return [f"Content-Type {media or '(none)'} is not accepted (consumes: {', '.join(op.consumes)})"]
        if media not in op.consumes:
            return [f"Content-Type {media} is not accepted (consumes: {', '.join(op.consumes)})"]
        fields = _form_fields(raw, content_type)
        if fields is None:
            return ["the multipart body cannot be parsed"]
        problems = []
        for name, is_file in fields:
            param = op.form_params.get(name)
            if param is None:
                problems.append(f"form field {name!r} is not declared (declared: {', '.join(sorted(op.form_params))})")
            elif param.get("type") == "file" and not is_file:
                problems.append(f"form field {name!r} must be a file part (with a filename)")
        given = {name for name, _ in fields}
        for name, param in op.form_params.items():
            if param.get("required") and name not in given:
                problems.append(f"required form field {name!r} is missing")
        return problems

    # ----------------------------------------------------------------- schemas

    def schema_problems(self, schema: Mapping[str, Any], value: Any, where: str, depth: int = 0) -> list[str]:
        """Problems of *value* against a Swagger 2.0 *schema*, read with Go's decoding rules."""
        if depth > _MAX_REF_DEPTH:
            return []
        schema = self._resolve(schema)
        if value is None:
            return []  # Go leaves the zero value for null; required-ness is checked by the parent
        problems: list[str] = []
        for sub in schema.get("allOf", ()):
            problems += self.schema_problems(sub, value, where, depth + 1)
        kind = schema.get("type")
        if kind is None and "properties" in schema:
            kind = "object"
        if kind and not _json_type_ok(kind, value):
            return problems + [f"{where} must be {_article(kind)}, got {_describe(value)}"]
        if "enum" in schema and value not in schema["enum"]:
            problems.append(f"{where} must be one of {schema['enum']}, got {value!r}")
        if kind == "string" and schema.get("format") == "date-time" and not _DATETIME_RE.match(value):
            problems.append(f"{where} must be an RFC 3339 date-time, got {value!r}")
        if kind == "array":
            items = schema.get("items") or {}
            for index, item in enumerate(value):
                problems += self.schema_problems(items, item, f"{where}[{index}]", depth + 1)
        if kind == "object":
            problems += self._object_problems(schema, value, where, depth)
        return problems

    def _object_problems(self, schema: Mapping[str, Any], value: Mapping[str, Any], where: str,
                         depth: int) -> list[str]:
        problems = []
        properties: Mapping[str, Any] = schema.get("properties", {})
        for name in schema.get("required", ()):
            if value.get(name) is None:
                problems.append(f"{where}: missing required field {name!r}")
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            if name in properties:
                problems += self.schema_problems(properties[name], item, f"{where}.{name}", depth + 1)
            elif isinstance(extra, Mapping):
                problems += self.schema_problems(extra, item, f"{where}.{name}", depth + 1)
            elif properties and extra is not True:
                problems.append(_undeclared(where, name, properties))
        return problems

    def definition(self, name: str) -> Mapping[str, Any]:
        """A named definition (``#/definitions/<name>``)."""
        return self.definitions[name]


def _undeclared(where: str, name: str, properties: Mapping[str, Any]) -> str:
    # Go binds JSON keys case-insensitively, but the spec documents one exact
    # spelling, and newer servers (Gitea main's snake_case merge form) differ:
    # only the documented spelling is safe across versions.
    for known in properties:
        if known.lower() == name.lower():
            return f"{where}: field {name!r} is not declared; the spec spells it {known!r}"
    return f"{where}: field {name!r} is not declared (the server would silently ignore it)"


# --------------------------------------------------------------------------- values

def _query_pairs(query: Iterable[tuple[str, str]] | Mapping[str, Any]) -> list[tuple[str, str]]:
    if isinstance(query, Mapping):
        pairs = []
        for name, value in query.items():
            if isinstance(value, (list, tuple)):
                pairs += [(name, str(item)) for item in value]
            else:
                pairs.append((name, str(value)))
        return pairs
    return [(str(name), str(value)) for name, value in query]


def _query_value_problems(name: str, param: Mapping[str, Any], values: list[str]) -> list[str]:
    if param.get("type") != "array":
        problems = []
        if len(values) > 1:
            problems.append(f"query parameter {name!r} is given {len(values)} times but is not an array")
        problem = _scalar_problem(param, values[0])
        if problem:
            problems.append(f"query parameter {name!r}: {problem}")
        return problems
    fmt = param.get("collectionFormat", "csv")
    if fmt == "multi":
        items = values
    else:
        separator = _COLLECTION_SEPARATORS.get(fmt, ",")
        if len(values) > 1:
            return [f"query parameter {name!r} is given {len(values)} times; "
                    f"collectionFormat {fmt} joins items with {separator!r}"]
        items = values[0].split(separator) if values[0] else []
    item_schema = param.get("items", {})
    problems = []
    for item in items:
        problem = _scalar_problem(item_schema, item)
        if problem:
            problems.append(f"query parameter {name!r} item: {problem}")
    return problems


def _scalar_problem(param: Mapping[str, Any], text: str) -> str | None:
    """Why the string *text* is not a valid value for a simple (non-body) parameter."""
    kind = param.get("type", "string")
    if kind == "integer" and not _INT_RE.match(text):
        return f"must be an integer, got {text!r}"
    if kind == "number" and not _NUMBER_RE.match(text):
        return f"must be a number, got {text!r}"
    if kind == "boolean" and text not in _GO_BOOLS:
        return f"must be a boolean (true/false), got {text!r}"
    if "enum" in param:
        allowed = [str(item) for item in param["enum"]]
        if text not in allowed:
            return f"must be one of {allowed}, got {text!r}"
    if kind == "string" and param.get("format") == "date-time" and not _DATETIME_RE.match(text):
        return f"must be an RFC 3339 date-time, got {text!r}"
    minimum = param.get("minimum")
    if minimum is not None and kind in ("integer", "number") and float(text) < float(minimum):
        return f"must be at least {minimum}, got {text}"
    return None


def _json_type_ok(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True  # "file" and unknown types are not JSON-checkable


def _article(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _describe(value: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return f"{names.get(type(value), type(value).__name__)} {json.dumps(value)[:40]}"


def _form_fields(raw: bytes, content_type: str) -> list[tuple[str, bool]] | None:
    """(name, is_file) for each field of a multipart or urlencoded body; None when unparsable."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "application/x-www-form-urlencoded":
        from urllib.parse import parse_qsl

        return [(name, False) for name, _ in parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)]
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("utf-8")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    if not message.is_multipart():
        return None
    fields = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not name:
            return None
        fields.append((str(name), part.get_filename() is not None))
    return fields


# --------------------------------------------------------------------------- response shapes

def undeclared_keys(checker: SpecChecker, definition: str, value: Mapping[str, Any]) -> list[str]:
    """Top-level keys of a response object that the named definition does not declare.

    Used by the fake forge's own tests to keep its answers to the shape a real
    server of that flavour documents.
    """
    properties = checker.definition(definition).get("properties", {})
    return sorted(key for key in value if key not in properties)
