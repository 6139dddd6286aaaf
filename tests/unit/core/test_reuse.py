"""core/reuse.py: a render key tells apart every input its serializer reads, and a reuse is taken only by its key."""

from __future__ import annotations

import enum

import pytest

from fabricgen.core.reuse import Offer, Plain, canonical, offered, render_key, reused


class _Text(str):
    pass


class _Kind(enum.StrEnum):
    A = "a"


@pytest.mark.parametrize("a, b", [
    (1, 1.0), (1, True), (1, "1"), (0.0, -0.0), (1.0, 1.0000000000000002), ("", None), ((1,), [1]),
    (("a", "b"), ("ab",)), (("a,b",), ("a", "b")), ([(1, 2)], [(1,), (2,)]),
])
def test_canonical_tells_apart_values_that_print_alike(a: Plain, b: Plain) -> None:
    assert canonical(a) != canonical(b)


def test_equal_values_are_equal_bytes_whatever_objects_they_share() -> None:
    shared = ("gpu00001", 3)
    assert canonical([shared, shared]) == canonical([("gpu00001", 3), ("gpu" + "00001", 3)])


@pytest.mark.parametrize("value", [_Text("x"), _Kind.A, object(), [("a", object())]])
def test_canonical_refuses_what_it_cannot_tell_apart(value: object) -> None:
    with pytest.raises(ValueError):
        canonical(value)  # type: ignore[arg-type]


def test_a_key_holds_the_serializer_the_code_and_each_input() -> None:
    with offered(Offer("code-a")):
        key = render_key("cabling.workbook.row_workbook", "input")
        assert render_key("cabling.printout.row_pdf", "input") != key
        assert render_key("cabling.workbook.row_workbook", "other input") != key
        assert render_key("cabling.workbook.row_workbook", "in", "put") != key
    with offered(Offer("code-b")):
        assert render_key("cabling.workbook.row_workbook", "input") != key


def test_reused_takes_the_bytes_of_its_key_only() -> None:
    calls: list[str] = []

    def serialize() -> bytes:
        calls.append("serialized")
        return b"fresh"

    with offered(Offer("code")):
        key = render_key("s", "input")
        other = render_key("s", "another input")
    with offered(Offer("code", {key: b"last apply's"})):
        taken = reused("cabling/rows/A.pdf", key, serialize)
        made = reused("cabling/rows/B.pdf", other, serialize)
    assert (taken.content, taken.render_key, calls) == (b"last apply's", key, ["serialized"])
    assert (made.content, made.render_key) == (b"fresh", other)
    assert reused("cabling/rows/A.pdf", key, serialize).content == b"fresh"  # the offer ends with its render
