"""Fuzz: specs drawn from the schema itself and mutated example specs, each applied through the CLI into a fresh
OUT. Every run exits 0 or 1 and never with a traceback; a refused spec gets a report whose every problem has
file:line:col (and no control character, and no secret) and OUT stays empty; an accepted spec puts no hostile string
into an artifact's path or into a script, unit, config or env file. The invariants live in tests/helpers/hostile.py,
shared with the exhaustive adversarial pass (bench/adversarial.py), which also times every case.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from referencing._core import Resolver

from fabricgen.core.errors import FabricgenError
from fabricgen.pipeline import compile_spec
from fabricgen.spec.validate import ROOT_SCHEMA, _registry
from tests.conftest import INVENTORIES
from tests.helpers.hostile import EXTREMES, HOSTILE_STRINGS, dump, leaves, mutations, replaced, run_case

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
# h100-4su and bench-16k: bench/adversarial.py
FAST_EXAMPLES = ("lab-1su", "aws-p5-efa", "alicloud-erdma", "gcp-a3-tcpxo")
odd = st.sampled_from([*EXTREMES, *HOSTILE_STRINGS])


def _check(text: str, secret: str = "") -> None:
    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_case("fuzz", text, Path(tmp), secret=secret)
    assert not outcome.problem, f"{outcome.problem}\n--- spec ---\n{text[:3000]}"


# -- mutated examples ----------------------------------------------------------------------------------------------
@cache
def _example(name: str) -> Any:
    return yaml.safe_load((INVENTORIES / f"{name}.yaml").read_text(encoding="utf-8"))


@st.composite
def mutated_examples(draw: st.DrawFn) -> str:
    data = _example(draw(st.sampled_from(FAST_EXAMPLES)))
    for _ in range(draw(st.integers(1, 3))):  # one to three nodes changed at once
        path, value = draw(st.sampled_from(list(leaves(data))))
        new = draw(st.one_of(st.sampled_from(mutations(value)), st.integers(), st.floats(), st.text(max_size=40),
                             st.none(), st.booleans(), st.lists(odd, max_size=3), st.dictionaries(st.text(max_size=8),
                                                                                                   odd, max_size=2)))
        data = replaced(data, path, new)
    return dump(data)


@FUZZ
@given(mutated_examples())
def test_mutated_examples_end_in_artifacts_or_a_positioned_report(text: str) -> None:
    _check(text)


# -- specs shaped by the schema --------------------------------------------------------------------------------
def _strict(pattern: str) -> str:
    return pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern


def _from_schema(schema: Any, resolver: Resolver, depth: int) -> st.SearchStrategy[Any]:
    """A value shaped by a JSON Schema node (often valid, sometimes not), hostile values mixed in."""
    if depth > 7 or not isinstance(schema, dict):
        return st.none()
    if "$ref" in schema:
        resolved = resolver.lookup(schema["$ref"])
        return _from_schema(resolved.contents, resolved.resolver, depth + 1)
    if "const" in schema:
        return st.one_of(st.just(schema["const"]), odd) if depth > 1 else st.just(schema["const"])
    if "enum" in schema:
        return st.one_of(st.sampled_from(schema["enum"]), odd)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return st.one_of([_from_schema(s, resolver, depth + 1) for s in schema[key]])
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        properties = schema.get("properties", {})
        required = {k: _from_schema(properties.get(k, {}), resolver, depth + 1) for k in schema.get("required", [])}
        optional = {k: _from_schema(v, resolver, depth + 1) for k, v in properties.items() if k not in required}
        if not properties and isinstance(schema.get("additionalProperties"), dict):
            keys = st.from_regex(r"[a-z][a-z0-9-]{0,8}\Z") | st.sampled_from(HOSTILE_STRINGS[:6])
            return st.dictionaries(keys, _from_schema(schema["additionalProperties"], resolver, depth + 1), max_size=2)
        return st.fixed_dictionaries(required, optional=optional)
    if kind == "array":
        items = _from_schema(schema.get("items", {}), resolver, depth + 1)
        return st.lists(items, min_size=min(schema.get("minItems", 0), 2), max_size=3)
    if kind == "string":
        if "pattern" in schema:
            return st.one_of(st.from_regex(_strict(schema["pattern"]), fullmatch=True), odd)
        return st.one_of(st.text(max_size=20), odd)
    if kind == "integer":
        low, high = schema.get("minimum", -(2**63)), schema.get("maximum", 2**63 - 1)
        return st.one_of(st.integers(low, min(high, low + 1000)), st.integers(low, high), odd)
    if kind == "number":
        return st.one_of(st.floats(schema.get("minimum", -1e12), schema.get("maximum", 1e12)), odd)
    if kind == "boolean":
        return st.one_of(st.booleans(), odd)
    return odd


@cache
def _root() -> st.SearchStrategy[Any]:
    resolved = _registry().resolver().lookup("https://fabricgen.dev/schemas/" + ROOT_SCHEMA)
    return _from_schema(resolved.contents, resolved.resolver, 0)


@FUZZ
@given(st.deferred(lambda: _root()))
def test_specs_shaped_by_the_schema_end_in_artifacts_or_a_positioned_report(data: Any) -> None:
    _check(dump(data))


# -- secrets in every position a key may take ------------------------------------------------------------------
@FUZZ
@given(st.sampled_from(["sm_key", "sa_key", "m_key"]),
       st.one_of(st.integers(2**40, 2**64 - 1).map(lambda n: f"0x{n:016x}"), st.integers(2**40, 2**63)),
       st.sampled_from(["{v}", "!!int \"{v}Z\"", "{{env: \"{v}\"}}", "{{file: \"{v}\"}}", "[{v}]", "{{k: {v}}}"]))
def test_a_secret_never_reaches_a_report(key: str, secret: int | str, form: str) -> None:
    text = (INVENTORIES / "lab-1su.yaml").read_text(encoding="utf-8")
    text = text.replace("sm_key: {env: OPENSM_SM_KEY}", f"{key}: " + form.format(v=secret), 1)
    if key == "m_key":
        text = text.replace("        m_key: {file: /etc/opensm/m_key}\n", "", 1)
    shown = [str(secret)] + ([f"{secret:x}", hex(secret)] if isinstance(secret, int) else [])
    for value in shown:
        _check(text, secret=value)


@pytest.mark.parametrize("value", [math.nan, math.inf, 8.0, "8", True])
def test_count_as_another_type_is_a_report(value: Any) -> None:
    _check(dump(replaced(_example("lab-1su"), ("nodes", 0, "count"), value)))


# -- no float reaches the model where an integer is meant ------------------------------------------------------
def _mistyped(obj: Any, path: str, seen: set[int]) -> Iterator[str]:
    """Fields annotated int (or int | None) that hold anything but an int, anywhere in the model."""
    if id(obj) in seen or isinstance(obj, str | bytes | int | float | bool | None):
        return
    seen.add(id(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for field in dataclasses.fields(obj):
            value = getattr(obj, field.name)
            if field.type in ("int", "int | None") and value is not None and type(value) is not int:
                yield f"{path}.{field.name} = {value!r}"
            yield from _mistyped(value, f"{path}.{field.name}", seen)
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from _mistyped(value, f"{path}[{key!r}]", seen)
    elif isinstance(obj, tuple | list):
        for index, value in enumerate(obj):
            yield from _mistyped(value, f"{path}[{index}]", seen)


@FUZZ
@given(mutated_examples())
def test_an_accepted_spec_holds_ints_where_ints_are_meant(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(text, encoding="utf-8")
        try:
            cluster = compile_spec(spec).cluster
        except FabricgenError:
            return
    assert list(_mistyped(cluster, "cluster", set())) == []


def test_the_examples_hold_ints_where_ints_are_meant() -> None:
    for name in (*FAST_EXAMPLES, "h100-4su"):
        assert list(_mistyped(compile_spec(INVENTORIES / f"{name}.yaml").cluster, name, set())) == []
