"""Mutations of a spec as a hostile user writes them, and the invariants every run must keep.

Shared by the fuzz test (tests/test_fuzz.py, hypothesis draws a few hundred cases) and the adversarial pass
(bench/adversarial.py, every leaf of every example spec with every mutation, timed per case). A case is a spec text;
:func:`run_case` applies it through the CLI into a fresh OUT and checks: exit 0 or 1 only, never a traceback; on 1,
a report whose every problem line starts with ``file:line:col:`` and holds no control character, and nothing
written to OUT; on 0, no hostile string in an artifact's path or in a shell, unit, config or env file.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from fabricgen.cli import app

PathKey = tuple[str | int, ...]

# Strings that would do harm if pasted unquoted into a shell line, a path, a spreadsheet, a terminal or a report.
HOSTILE_STRINGS = (
    "x\n$(touch PWNED)",
    "'; touch PWNED; echo '",
    "`touch PWNED`",
    "a b;touch PWNED",
    "../../../tmp/PWNED",
    "/etc/passwd",
    "=HYPERLINK(\"http://x.example/\",\"click\")",
    "-1+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd",
    ":pile_of_poo: [bold red]x[/]",
    "\x1b[2J\x1b]0;title\x07",
    "\u202eevil\u202c",
    "{n.__class__.__mro__}",
    "%s%s%n",
    "x" * 5000,
    "",
    " ",
    "0x5ec1e7000000beef",
)
# Values at and beyond the edges of every type.
EXTREMES: tuple[Any, ...] = (0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10**30, 0.5, -0.0, 1e308, float("nan"),
                             float("inf"), float("-inf"), True, False, None, [], {}, [None], {"": None})
# Markers whose presence in an artifact means an unquoted hostile string reached it.
MARKERS = ("PWNED", "HYPERLINK", "cmd|", "pile_of_poo", "\x1b[2J", "\u202e", "__mro__", "%s%s%n")
# Artifacts a shell, systemd, a network tool or a loader reads as code or configuration.
CODE_LIKE = re.compile(r"(\.sh|\.env|\.service|\.conf|\.mount|\.nft|\.cfg|fstab|node-name-map|\.net|\.txt|\.params"
                       r"|\.tsv|conf\.d/.*)$")
REPORT_LINE = re.compile(r"^  (\S.*?):([1-9][0-9]*):([1-9][0-9]*): \S")
# The source line and caret printed under a positioned problem.
EXCERPT_LINE = re.compile(r"^    (?:[1-9][0-9]* \| .*| +\| +\^)$")


@dataclass(frozen=True)
class Outcome:
    """One case: what it did and how long it took; ``problem`` is an invariant it broke (empty when none)."""

    name: str
    exit_code: int
    seconds: float
    problem: str = ""


def leaves(data: Any, path: PathKey = ()) -> Iterator[tuple[PathKey, Any]]:
    """Every node of a spec, containers too (a whole section replaced by a string is a mutation as well)."""
    yield path, data
    if isinstance(data, dict):
        for key, value in data.items():
            yield from leaves(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from leaves(value, (*path, index))


def replaced(data: Any, path: PathKey, value: Any) -> Any:
    out = copy.deepcopy(data)
    if not path:
        return value
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def renamed_key(data: Any, path: PathKey, new: str) -> Any:
    """The mapping key at ``path`` renamed (a hostile key, e.g. a fabric or profile name)."""
    out = copy.deepcopy(data)
    node = out
    for part in path[:-1]:
        node = node[part]
    if isinstance(node, dict):
        node[new] = node.pop(path[-1])
    return out


def confusions(value: Any) -> list[Any]:
    """The same value as another type: 8 as 8.0 and "8", "x" as ["x"], a mapping as a list..."""
    out: list[Any] = []
    if isinstance(value, bool):
        out += ["yes", 1, "true"]
    elif isinstance(value, int):
        out += [float(value), str(value), -value, value + 0.5, [value]]
    elif isinstance(value, float):
        out += [str(value), int(value) if value == value and abs(value) < 1e18 else 0]
    elif isinstance(value, str):
        out += [[value], {value: value}, value + "\n", value.upper(), value * 2, 12]
    elif isinstance(value, list):
        out += [dict(enumerate(value)) if value else {}, value * 3, value[:0], "list"]
    elif isinstance(value, dict):
        out += [list(value.values()), "mapping", {**value, "unknown_key": 1}]
    return out


def mutations(value: Any) -> list[Any]:
    """Type confusion, extremes and hostile strings for one node."""
    return [*confusions(value), *EXTREMES, *HOSTILE_STRINGS]


def dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000)


def run_case(name: str, text: str, work: Path, runner: CliRunner | None = None, secret: str = "") -> Outcome:
    """Apply ``text`` through the CLI into a fresh OUT under ``work`` and check the invariants; ``secret`` is a
    value written under a secret key, which no report may show."""
    runner = runner or CliRunner()
    spec, out = work / "spec.yaml", work / "out"
    spec.write_text(text, encoding="utf-8")
    started = time.perf_counter()
    result = runner.invoke(app, ["apply", str(spec), "-o", str(out), "--yes"])
    seconds = time.perf_counter() - started
    code = result.exit_code
    problem = _problem(result, spec, out, secret)
    return Outcome(name, code, seconds, problem)


def _problem(result: Any, spec: Path, out: Path, secret: str) -> str:
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"traceback: {type(result.exception).__name__}: {result.exception}"
    if result.exit_code == 1:
        return _report_problem(result.stderr, spec, out, secret)
    if result.exit_code != 0:
        return f"exit {result.exit_code}"
    return _artifact_problem(out)


def _report_problem(stderr: str, spec: Path, out: Path, secret: str) -> str:
    lines = stderr.splitlines()
    if out.exists() and any(out.iterdir()):
        return "a refused spec wrote to OUT: " + ", ".join(sorted(p.name for p in out.iterdir()))
    if not lines or not lines[0].startswith("error: ") or lines[-1] != "nothing was written":
        return f"not a report: {stderr[:300]!r}"
    problems = lines[1:-1]
    if not problems:
        return f"a report without problems: {stderr[:300]!r}"
    for line in problems:
        if EXCERPT_LINE.match(line):
            if any(not c.isprintable() for c in line):
                return f"a control character in a source excerpt: {line[:300]!r}"
            if len(secret) >= 4 and secret in line:
                return f"a secret in a source excerpt: {line[:300]!r}"
            continue
        match = REPORT_LINE.match(line)
        if match is None or not (match.group(1) == str(spec) or Path(match.group(1)).is_file()):
            return f"a problem without file:line:col: {line[:300]!r}"
        if any(not c.isprintable() for c in line):
            return f"a control character in the report: {line[:300]!r}"
        if len(secret) >= 4 and secret in line:
            return f"a secret in the report: {line[:300]!r}"
    return ""


def _artifact_problem(out: Path) -> str:
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        if any(marker in rel for marker in MARKERS) or "\n" in rel:
            return f"a hostile string in an artifact path: {rel!r}"
        if not path.is_file() or not CODE_LIKE.search(rel):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for marker in MARKERS:
            if marker in text:
                return f"{marker!r} reached {rel}"
    return ""
