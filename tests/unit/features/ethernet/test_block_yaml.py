"""The block YAML writer of switch configs: whatever it writes, YAML loaders read back as the same data."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricgen.features.ethernet import block_yaml

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40),
                    st.text(st.characters(exclude_categories=["Cs"]), max_size=12),
                    st.sampled_from(["on", "off", "yes", "No", "NULL", "~", "1e3", "0x1f", "1:20", "2001-12-14",
                                     "-", "- a", "a: b", "#x", "x #y", "'q'", '"q"', "10.0.0.1/31", "10.0.0.1",
                                     "1.2", "1.2.3", "Ethernet1/1",
                                     ".inf", "<<", "=", "*a", "&a", "!tag", "%x", "@x", "`x", "{}", "[]", "a\tb"]))
data = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(max_size=8), data, max_size=5))
def test_round_trip(document: dict[str, Any]) -> None:
    assert yaml.safe_load(block_yaml.dump(document)) == document


@settings(max_examples=200, deadline=None)
@given(st.lists(data, max_size=5))
def test_round_trip_sequence(document: list[Any]) -> None:
    assert yaml.safe_load(block_yaml.dump(document)) == document


def test_layout_matches_pyyaml_for_plain_strings() -> None:
    """Sorted keys, sequences not indented under their key, empty collections in flow style."""
    document = {"b": [{"z": 1, "x": [True, None]}, ["o", "m"], "v"], "a": {"d": {}, "c": []}, "e": "on"}
    assert block_yaml.dump(document) == yaml.safe_dump(document, sort_keys=True, default_flow_style=False).replace(
        "'on'", '"on"')


def test_rejects_floats() -> None:
    with pytest.raises(TypeError):
        block_yaml.dump({"a": 1.5})


def test_equal_but_differently_typed_scalars_stay_apart() -> None:
    """1 == True and hash alike: the scalar memo must not hand one the other's text."""
    assert yaml.safe_load(block_yaml.dump({"a": 1, "b": True, "c": 0, "d": False})) == {"a": 1, "b": True, "c": 0,
                                                                                      "d": False}
    assert yaml.safe_load(block_yaml.dump({"a": True, "b": 1})) == {"a": True, "b": 1}
