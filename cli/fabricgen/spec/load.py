"""Stage 1, load: YAML text -> plain data plus the source position of every node.

Loading is deliberately strict: one document, string keys, no duplicate keys, no custom tags, no merge keys, a
size limit enforced by the reader itself (devices and pipes too), a bound on the number of YAML nodes counted before
anything is built (an 8M-element list fails in about a second), and a bound on alias expansion (so a
billion-laughs file fails in milliseconds, not minutes). A scalar its tag cannot construct (``!!int "eight"``) is an
issue at its line. Values under keys the schema marks secret never appear in an issue, and the loader records where
each is written (:func:`secret_spans`), so a source line shown under a problem can hide exactly that text.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from fabricgen.core.document import REDACTED, Document, PathKey, SourceSpan, format_path, is_secret
from fabricgen.core.errors import SourcePosition, SpecError, SpecIssue
from fabricgen.core.files import TooLargeError, read_bounded
from fabricgen.core.hints import did_you_mean
from fabricgen.core.yamldata import LOADER
from fabricgen.spec.validate import property_names, schema_issues, secret_keys

MAX_SPEC_BYTES = 16 * 1024 * 1024
STDIN = "<stdin>"
# YAML nodes (scalars, lists, mappings) one document may hold, counted on the parser's events before any node is
# composed: a 64k-GPU spec has a few thousand; an inventory file of 100k rows about a million.
MAX_NODES = 2_000_000
# Expanded nodes may exceed distinct nodes by this factor (plus a small allowance) before aliases count as a bomb.
ALIAS_EXPANSION_FACTOR = 4
ALIAS_EXPANSION_ALLOWANCE = 10_000
# No fabricgen field nests deeper than a dozen levels; the bound keeps conversion far from Python's recursion limit.
MAX_DEPTH = 64

_SCALAR_TAGS = {
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:str",
}
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"
_MERGE_TAG = "tag:yaml.org,2002:merge"



class _Converter:
    """Turns a composed node graph into plain Python data, recording positions and bounding alias growth."""

    def __init__(self, source: str, distinct_nodes: int, secrets: frozenset[str]) -> None:
        self.source = source
        self.budget = distinct_nodes * ALIAS_EXPANSION_FACTOR + ALIAS_EXPANSION_ALLOWANCE
        self.expanded = 0
        self.values: dict[PathKey, SourcePosition] = {}
        self.keys: dict[PathKey, SourcePosition] = {}
        self.issues: list[SpecIssue] = []
        self.constructor = yaml.constructor.SafeConstructor()
        self.secrets = secrets
        self.secret_spans: set[SourceSpan] = set()
        self.hiding = False  # converting inside a recorded secret value

    def mark(self, node: yaml.Node) -> SourcePosition:
        return SourcePosition(self.source, node.start_mark.line + 1, node.start_mark.column + 1)

    def fail(self, node: yaml.Node, path: PathKey, message: str, hint: str = "") -> None:
        self.issues.append(SpecIssue(self.mark(node), format_path(path), message, hint))

    def convert(self, node: yaml.Node, path: PathKey, secret: bool = False) -> Any:
        """The node as plain data; ``secret``: it lies under a key the schema marks secret, and where its text is
        written is recorded (a scalar's or a flow collection's whole, ``{env: NAME}``; a block collection's keys
        stay readable, their values are recorded one by one)."""
        if not secret or self.hiding or (isinstance(node, yaml.CollectionNode) and not node.flow_style):
            return self.convert_node(node, path, secret)
        self.secret_spans.add(_span(node))
        self.hiding = True
        try:
            return self.convert_node(node, path, secret)
        finally:
            self.hiding = False

    def convert_node(self, node: yaml.Node, path: PathKey, secret: bool) -> Any:
        if len(path) > MAX_DEPTH:
            raise SpecError([SpecIssue(self.mark(node), format_path(path[:3]) + "...",
                                       f"nesting deeper than {MAX_DEPTH} levels", "flatten the structure")])
        self.expanded += 1
        if self.expanded > self.budget:
            raise SpecError(
                [
                    SpecIssue(
                        self.mark(node),
                        format_path(path),
                        f"alias expansion exceeds {self.budget} nodes",
                        "the file looks like an alias bomb; write the values out",
                    )
                ]
            )
        self.values.setdefault(path, self.mark(node))
        if isinstance(node, yaml.MappingNode):
            return self.convert_mapping(node, path, secret)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ_TAG:
                self.fail(node, path, f"tag {node.tag!r} is not allowed", "remove the tag")
            return [self.convert(item, (*path, i), secret) for i, item in enumerate(node.value)]
        return self.convert_scalar(node, path)

    def convert_scalar(self, node: yaml.Node, path: PathKey) -> Any:
        if node.tag == _TIMESTAMP_TAG:
            return str(node.value)  # dates stay text: fabricgen has no date fields
        if node.tag not in _SCALAR_TAGS:
            self.fail(
                node, path, f"tag {node.tag!r} is not allowed", "plain YAML scalars only; remove the tag"
            )
            return None
        try:
            return self.constructor.construct_object(node)
        except (ValueError, KeyError, TypeError, yaml.YAMLError):  # !!int "eight", !!bool "maybe", 5000 digits
            kind = node.tag.rsplit(":", 1)[-1]
            shown = REDACTED if is_secret(path, self.secrets) else _short(str(node.value))
            self.fail(node, path, f"{shown} is not a valid {_KINDS.get(kind, kind)}",
                      f"remove the !!{kind} tag, quote the text or write a plain {_KINDS.get(kind, kind)}")
            return None

    def convert_mapping(self, node: yaml.MappingNode, path: PathKey, secret: bool) -> dict[str, Any]:
        if node.tag != _MAP_TAG:
            self.fail(node, path, f"tag {node.tag!r} is not allowed", "remove the tag")
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                self.fail(
                    key_node,
                    path,
                    "merge keys (<<) are not supported",
                    "repeat the values or use an anchor on a whole value",
                )
                continue
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                self.fail(
                    key_node,
                    path,
                    f"mapping keys must be strings, not {key_node.tag.rsplit(':', 1)[-1]}",
                    "quote the key",
                )
                continue
            key = str(key_node.value)
            child = (*path, key)
            if key in out:
                first = self.keys[child]
                self.fail(key_node, child, f"duplicate key {key!r} (first defined at line {first.line})")
                continue
            self.keys[child] = self.mark(key_node)
            out[key] = self.convert(value_node, child, secret or self.hides(key))
        return out

    def hides(self, key: str) -> bool:
        """Whether a key's value is recorded as a secret's: under a secret key, or under a key no schema declares
        that reads as one misspelt (``kye``, ``sm_kye``): the schema refuses that key at its line, and the line
        printed under the problem must not show the key material typed there. ``pkey`` is declared: shown."""
        return key in self.secrets or (key not in property_names() and bool(did_you_mean(key, self.secrets)))


def _span(node: yaml.Node) -> SourceSpan:
    """Where a value's text starts and ends (a block mapping ends where the next key at its level starts)."""
    start, end = node.start_mark, node.end_mark
    return SourceSpan(start.line + 1, start.column + 1, end.line + 1, end.column + 1)


_KINDS = {"int": "integer", "float": "number", "bool": "boolean", "null": "null", "str": "string"}


def _short(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _count_events(text: str, source: str) -> None:
    """Refuse a document of more than MAX_NODES nodes while parsing, before composing builds any of them."""
    nodes = 0
    for event in yaml.parse(text, Loader=LOADER):
        if isinstance(event, yaml.NodeEvent) and not isinstance(event, yaml.AliasEvent):
            nodes += 1
            if nodes > MAX_NODES:
                mark = event.start_mark
                line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
                raise SpecError([SpecIssue(SourcePosition(source, line, column), "",
                                           f"the file holds more than {MAX_NODES} YAML values",
                                           "split node lists into counted groups")])


def _count_distinct(node: yaml.Node) -> int:
    seen: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        stack.extend(_children(current))
    return len(seen)


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            yield k
            yield v
    elif isinstance(node, yaml.SequenceNode):
        yield from node.value


def _line_col(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of a character index."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _codepoint(character: int | str) -> int:
    return character if isinstance(character, int) else ord(character)


def _yaml_issue(source: str, text: str, exc: yaml.YAMLError) -> SpecIssue:
    if isinstance(exc, yaml.reader.ReaderError):
        line, col = _line_col(text, exc.position)
        return SpecIssue(SourcePosition(source, line, col), "",
                         f"character U+{_codepoint(exc.character):04X} is not allowed in YAML",
                         "remove control characters")
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    opened = getattr(exc, "context_mark", None)  # where the unclosed bracket or block began: often the mistake
    if context and opened is not None and (opened.line + 1, opened.column + 1) != (line, col):
        context += f" opened at line {opened.line + 1}, column {opened.column + 1}"
    message = f"YAML syntax error: {problem}" + (f" ({context})" if context else "")
    return SpecIssue(SourcePosition(source, line, col), "", message, "check indentation, quotes and colons")


def load_text(text: str | bytes, source: str = "<spec>") -> Document:
    """Parse one YAML document strictly, raising :class:`SpecError` with every problem found."""
    raw = text.encode() if isinstance(text, str) else text
    origin = SourcePosition(source, 1, 1)
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(
            [
                SpecIssue(
                    origin,
                    "",
                    f"spec is {len(raw)} bytes, above the {MAX_SPEC_BYTES} byte limit",
                    "split node lists into counted groups",
                )
            ]
        )
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start].decode("utf-8", "replace")
        line, col = _line_col(before, len(before))
        where = SourcePosition(source, line, col)
        raise SpecError([SpecIssue(where, "", f"spec is not UTF-8: {exc.reason} (byte 0x{raw[exc.start]:02x})",
                                   "save the file as UTF-8")]) from exc
    try:
        _count_events(decoded, source)
        nodes = list(yaml.compose_all(decoded, Loader=LOADER))
    except yaml.YAMLError as exc:
        raise SpecError([_yaml_issue(source, decoded, exc)]) from exc
    nodes = [n for n in nodes if n is not None]
    if len(nodes) != 1:
        what = "is empty" if not nodes else f"holds {len(nodes)} YAML documents"
        raise SpecError([SpecIssue(origin, "", f"spec {what}; expected exactly one YAML document",
                                   "one cluster per file")])
    secrets = secret_keys()
    _secret_spans.pop(source, None)
    converter = _Converter(source, _count_distinct(nodes[0]), secrets)
    data = converter.convert(nodes[0], ())  # stopped early (an alias bomb), it leaves only the guess from the text
    _secret_spans[source] = tuple(sorted(converter.secret_spans))  # kept for the issues raised here too
    if converter.issues:
        raise SpecError(converter.issues)
    return Document(data, source, hashlib.sha256(raw).hexdigest(), converter.values, converter.keys, secrets)


# Where each loaded source wrote its secret values, for the source lines the CLI prints under a problem (which it
# reads again from the file, long after the document is gone).
_secret_spans: dict[str, tuple[SourceSpan, ...]] = {}


def secret_spans(source: str) -> tuple[SourceSpan, ...] | None:
    """The spans of the secret values of a source this process loaded, by the name it was loaded under; None when
    it was never composed (unreadable, or a YAML syntax error), and only a guess from the text can hide them."""
    return _secret_spans.get(source)


# The spec read from standard input, kept for the source lines under its errors: a pipe cannot be read twice.
_stdin_spec: list[bytes] = []


def stdin_spec() -> bytes:
    """The bytes of the spec this process read from standard input (empty if it read none)."""
    return _stdin_spec[0] if _stdin_spec else b""


def load_file(path: Path) -> Document:
    """Read (bounded, whatever the file is) and load a spec file; unreadable files become a :class:`SpecError`.
    ``-`` reads standard input (the spec is then named ``<stdin>``)."""
    origin = SourcePosition(str(path), 0, 0)
    if str(path) == "-":
        raw = sys.stdin.buffer.read(MAX_SPEC_BYTES + 1)
        if len(raw) > MAX_SPEC_BYTES:
            raise SpecError([SpecIssue(SourcePosition(STDIN, 0, 0), "", TooLargeError(MAX_SPEC_BYTES, None)
                                       .describe("spec"))])
        _stdin_spec[:] = [raw]
        return load_text(raw, STDIN)
    try:
        raw = read_bounded(path, MAX_SPEC_BYTES)
    except TooLargeError as exc:
        raise SpecError([SpecIssue(origin, "", exc.describe("spec"))]) from exc
    except OSError as exc:
        raise SpecError([SpecIssue(origin, "", f"cannot read spec: {exc.strerror or exc}")]) from exc
    return load_text(raw, str(path))


def shipped_data(path: Path, ref: str) -> Any:
    """The data of a YAML file shipped beside a feature, validated against schema ``ref``: a broken file is a
    packaging bug, raised as a SpecError at the file's own lines."""
    document = load_file(path)
    issues = schema_issues(document, document.data, ref)
    if issues:
        raise SpecError(issues)
    return document.data
