"""The command line: the only module that reads argv, prints to the console and chooses exit codes.

Each command is a thin shell over the pipeline, the output directory or its feature's command module (verify:
:mod:`fabricgen.features.infiniband.verify`, explain: :mod:`fabricgen.features.topology.explain`, apply --cloud:
:mod:`fabricgen.features.cloud.deploy`, lab: :mod:`fabricgen.features.lab.run`). Its ~650 lines are the commands
and the printers of their reports, kept in one module because only this module may touch the console.

The features' command modules, the editor schema and the renderers' table declarations are imported by the
commands that use them: a plan that finds nothing changed (see `_unchanged`), --help and validate need none of
them, and importing every feature cost more CPU than such a plan's own work.

Exit codes: 0 success (plan: no changes), 1 invalid spec / failed checks / output error / declined apply, 2 changes
pending (plan --detailed-exitcode; apply --cloud without a pulumi CLI: files written, deployment pending), 130
interrupted.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Annotated, Any, NoReturn, cast

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from fabricgen import __version__
from fabricgen.core.artifacts import Artifact, is_safe_relative_path
from fabricgen.core.document import REDACTED
from fabricgen.core.errors import (
    CheckError,
    FabricgenError,
    Finding,
    LabError,
    OutputError,
    Severity,
    SourcePosition,
    SpecError,
    SpecIssue,
    VerifyError,
    printable,
)
from fabricgen.core.files import TooLargeError, read_bounded
from fabricgen.core.gcpause import without_gc
from fabricgen.core.hints import did_you_mean
from fabricgen.core.resources import shipped_dir
from fabricgen.model.cluster import FabricRole, FabricType
from fabricgen.model.infiniband import IbSpeed
from fabricgen.model.topology import FabricTopology
from fabricgen.outdir import planfile
from fabricgen.outdir.apply import apply_plan
from fabricgen.outdir.changes import CONFIG_NOUN, FileDiff, RowChange, RowKind, describe, moved_devices
from fabricgen.outdir.lastrun import prior_renders
from fabricgen.outdir.lock import ClusterId, Inputs, Owners, read_lock
from fabricgen.outdir.plan import (
    Action,
    Plan,
    compute_plan,
    plan_to_json,
    refuse_other_cluster,
    unchanged_plan,
    unused_renamed_from,
)
from fabricgen.pipeline import Compiled, compile_spec, input_digest_now, loaded, render_spec
from fabricgen.spec.load import MAX_SPEC_BYTES, STDIN, secret_spans, stdin_spec
from fabricgen.spec.validate import secret_keys

EXIT_OK, EXIT_ERROR, EXIT_CHANGES, EXIT_INTERRUPTED = 0, 1, 2, 130

app = typer.Typer(
    add_completion=True,
    rich_markup_mode=None,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Turn one AI-cluster spec into every artifact its fabric needs.",
)
# Every text from a spec or the disk is printed verbatim: markup in it is escaped, and emoji codes stay text (with
# emoji on, an error at line 100 printed as "spec.yaml💯5:" and a value ":pile_of_poo:" as a pile of poo).
out = Console(highlight=False, emoji=False,
              width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160)
err = Console(stderr=True, highlight=False, emoji=False)


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"
    GITHUB = "github"


SpecArg = Annotated[Path, typer.Argument(help="Cluster spec (YAML).", show_default=False, metavar="SPEC")]
FullOpt = Annotated[bool, typer.Option(
    "--full", help="Compile, render and compare every file even when the inputs match the last apply's.")]
OutOpt = Annotated[
    Path | None, typer.Option("--out", "-o", help="Output directory [default: out/<cluster name>].", metavar="OUT")
]
RenamedFromOpt = Annotated[str, typer.Option(
    "--renamed-from", metavar="NAME@SITE", show_default=False,
    help="OUT holds this cluster, which the spec renames (metadata name or site): adopt its files. Unlike --force, "
         "refuses any other cluster and files fabricgen did not create.")]


def _safe(text: str) -> str:
    """Text from a spec, the disk or a discovered fabric as the console prints it: verbatim, control characters
    written as escapes (no line or cursor move of its own), markup escaped (emoji codes are off on both consoles)."""
    return escape(printable(text))


def _fail(code: int) -> NoReturn:
    raise typer.Exit(code)


# -- reporting -------------------------------------------------------------------------------------------------
def _issue_dict(issue: SpecIssue) -> dict[str, Any]:
    p = issue.position
    return {
        "severity": "error",
        "file": p.file,
        "line": p.line or None,
        "column": p.column or None,
        "path": issue.path,
        "message": issue.message,
        "hint": issue.hint,
    }


def _finding_dict(finding: Finding) -> dict[str, Any]:
    p = finding.position
    return {
        "severity": finding.severity.value,
        "file": p.file if p else None,
        "line": p.line or None if p else None,
        "column": p.column or None if p else None,
        "path": finding.subject,
        "check": finding.check,
        "message": finding.message,
        "hint": finding.hint,
    }


def _problems(exc: FabricgenError) -> list[dict[str, Any]]:
    if isinstance(exc, SpecError):
        return [_issue_dict(i) for i in exc.issues]
    if isinstance(exc, CheckError):
        return [_finding_dict(f) for f in exc.findings]
    return [
        {
            "severity": "error",
            "file": None,
            "line": None,
            "column": None,
            "path": "",
            "message": str(exc),
            "hint": "",
        }
    ]


def _github_line(problem: dict[str, Any]) -> str:
    """A GitHub Actions workflow command; newlines and % are escaped as the runner requires."""

    def esc(text: str) -> str:
        return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    def esc_property(text: str) -> str:  # a property value also ends at ',' and '::'
        return esc(text).replace(":", "%3A").replace(",", "%2C")

    level = "warning" if problem["severity"] == "warning" else "error"
    where = (
        f"file={esc_property(problem['file'])},line={problem['line']},col={problem['column']},"
        if problem["file"]
        else ""
    )
    hint = f" (hint: {problem['hint']})" if problem["hint"] else ""
    return f"::{level} {where}title=fabricgen::{esc(problem['path'] + ': ' + problem['message'] + hint)}"


_sources: dict[str, list[str]] = {}


EXCERPT_WIDTH = 100  # characters of a source line shown under a problem


def _excerpt(position: SourcePosition | None) -> list[str]:
    """The source line of a position and a caret under its column, as compilers print them (a spec from stdin
    from the bytes its loader kept); nothing for a file that cannot be read again (a pipe) or a position past its
    end."""
    if position is None or position.line < 1:
        return []
    if position.file == STDIN:
        _sources.setdefault(STDIN, stdin_spec().decode("utf-8", errors="replace").splitlines())
    elif not Path(position.file).is_file():
        return []
    if position.file not in _sources:
        try:
            text = read_bounded(Path(position.file), MAX_SPEC_BYTES).decode("utf-8", errors="replace")
        except (OSError, TooLargeError):
            text = ""
        _sources[position.file] = text.splitlines()
    lines = _sources[position.file]
    if position.line > len(lines) + 1:
        return []
    line = lines[position.line - 1] if position.line <= len(lines) else ""  # a YAML error at the end of the file
    number = str(position.line)
    line, column = _redacted(position.file, position.line, line, max(position.column, 1) - 1)
    if len(line) > EXCERPT_WIDTH:  # a window around the column: a 15 MB line is never echoed
        # cut on the right while the caret keeps a fifth of the window after it: the line's start (its YAML
        # indentation, which says where the key belongs) stays whenever it can
        start = max(0, min(column + EXCERPT_WIDTH // 5 - EXCERPT_WIDTH, len(line) - EXCERPT_WIDTH))
        before = "..." if line[:start].strip() else ""  # only indentation left out: no text was
        after = "..." if line[start + EXCERPT_WIDTH:].strip() else ""
        line, column = before + line[start:start + EXCERPT_WIDTH] + after, column - start + len(before)
    caret = " " * column + "^"
    return [f"    {number} | {_safe(line)}", f"    {' ' * len(number)} | [bold red]{caret}[/]"]


def _redacted(source: str, number: int, line: str, column: int) -> tuple[str, int]:
    """A source line with every secret value on it replaced by ``<redacted>``, and the caret's 0-based column
    moved with the text (right of a replacement by the difference in length; inside one to its start). The
    values are those the loader found under a secret key; for a file it never composed (a YAML syntax error)
    they are guessed from the text by `_secret_value`."""
    spans = secret_spans(source)
    if spans is not None:
        cuts = [cut for span in spans if (cut := span.on_line(number, line)) is not None]
    else:
        cuts = [match.span(2) for match in _secret_value().finditer(line)]
    for start, end in sorted(cuts, reverse=True):  # right to left: the columns of the cuts before stay true
        line = line[:start] + REDACTED + line[end:]
        if column >= end:
            column += len(REDACTED) - (end - start)
        elif column >= start:
            column = start
    return line, column


def _print_problem(text: str, position: SourcePosition | None, console: Console, field: str = "") -> None:
    """One problem, then its source line and caret. A problem at a secret field (a key written in clear is refused
    at its line) shows its line only where the loader recorded the secret values of that file, which `_excerpt`
    then replaces: a guess from the text could miss the very value at fault."""
    console.print(f"  {_safe(text)}", soft_wrap=True)
    at_secret = not secret_keys().isdisjoint(re.split(r"[.\[\]]", field))
    if not at_secret or (position is not None and secret_spans(position.file) is not None):
        for line in _excerpt(position):
            console.print(line, soft_wrap=True, highlight=False)


@cache
def _secret_value() -> re.Pattern[str]:
    """A secret key's value on a line of a file the loader could not compose (block or flow style): the key as a
    whole word (``pkey`` or ``api_key`` is not ``key``), then a flow mapping or list whole (``{env: NAME}``, one
    level of nesting), a quoted string or a plain scalar."""
    names = "|".join(map(re.escape, sorted(secret_keys())))
    value = "|".join((r"\{(?:[^{}\n]|\{[^{}\n]*\})*\}", r"\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]",  # flow, one level nested
                      r'"(?:[^"\\\n]|\\.)*"', r"'(?:[^'\n]|'')*'", r"[^,}\]#\n]*[^,}\]#\s]"))  # quoted, plain
    return re.compile(r"""(?<![\w-])(["']?(?:""" + names + r""")["']?\s*:[ \t]*)(""" + value + r""")""")


def _print_error(exc: FabricgenError) -> None:
    if isinstance(exc, SpecError):
        err.print(
            f"[bold red]error:[/] the spec has {len(exc.issues)} problem{'s' if len(exc.issues) > 1 else ''}"
        )
        for issue in exc.issues:
            _print_problem(str(issue), issue.position, err, issue.path)
    elif isinstance(exc, CheckError):
        errors = [f for f in exc.findings if f.severity is Severity.ERROR]
        err.print(f"[bold red]error:[/] {len(errors)} check{'s' if len(errors) > 1 else ''} failed")
        for finding in exc.findings:
            _print_problem(str(finding), finding.position, err, finding.subject)
    else:
        err.print(f"[bold red]error:[/] {_safe(str(exc))}", soft_wrap=True)
    err.print(exc.outcome)


def _print_warnings(warnings: Sequence[Finding]) -> None:
    for finding in warnings:
        err.print(f"[yellow]{_safe(str(finding))}[/]", soft_wrap=True)


class _Progress:
    """One live line on stderr naming the step under way and its elapsed time, on a terminal only (a 16k-GPU
    plan takes ~10 s). Stopped before anything is printed, so it never mixes with a report."""

    def __init__(self) -> None:
        self.live: Progress | None = None
        self.task: TaskID | None = None

    def step(self, text: str) -> None:
        if not err.is_terminal:
            return
        if self.live is None:
            # once a second, as the clock it shows ticks: its refresh thread costs ~0.2% of a core (4 a second
            # cost 0.86%, and on a loaded machine, where a run takes many times its CPU in wall time, over 2%)
            self.live = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                 console=err, transient=True, refresh_per_second=1)
            self.live.start()
            self.task = self.live.add_task(_safe(text), total=None)
        elif self.task is not None:
            self.live.update(self.task, description=_safe(text))

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live, self.task = None, None


_progress = _Progress()


def _compile(spec: Path) -> Compiled:
    return compile_spec(spec, _progress.step)


def _out_dir(compiled: Compiled, out_opt: Path | None) -> Path:
    return out_opt if out_opt is not None else Path("out") / compiled.cluster.metadata.name


def _plan(spec: Path, out_opt: Path | None) -> tuple[Compiled, Plan]:
    compiled = _compile(spec)
    out_dir = _out_dir(compiled, out_opt)
    # the files the last apply serialized, by render key: a row's cable sheets whose rows are unchanged are not
    # serialized again (core/reuse.py)
    artifacts = render_spec(compiled, step=_progress.step, prior=prior_renders(out_dir))
    _progress.step(f"comparing {len(artifacts)} artifacts with {out_dir}")
    plan = compute_plan(
        artifacts,
        out_dir,
        spec_digest=compiled.cluster.spec_digest,
        tool_version=__version__,
        inputs=Inputs(compiled.input_digest(__version__), tuple(rel for rel, _ in compiled.named_files)),
        cluster=ClusterId(compiled.cluster.metadata.name, compiled.cluster.metadata.site),
        owners=_host_owners(compiled, artifacts),
    )
    return compiled, plan


def _host_owners(compiled: Compiled, artifacts: Sequence[Artifact]) -> Owners:
    """What each hosts/<name>/ directory written holds the files of, a node profile (``hosts/dgx-h100``), a node
    (``hosts/gpu001``) or a cloud instance type (``hosts/p5.48xlarge``), for the lock: the plan's listing heads them
    ``# node profile dgx-h100``, ``# node gpu001``, as it heads ``# switch ...``, and so it can once the spec has
    lost the node."""
    cluster = compiled.cluster
    kinds = {**{node.name: "node" for node in cluster.nodes}, **dict.fromkeys(cluster.profiles, "node profile")}
    if cluster.cloud is not None:
        kinds[cluster.cloud.instance_type.name] = "instance type"
    written = {parts[1] for a in artifacts if len(parts := a.path.split("/", 2)) > 2 and parts[0] == "hosts"}
    return tuple(sorted((f"hosts/{name}", kinds[name]) for name in written if name in kinds))


def _unchanged(spec: Path, out_opt: Path | None) -> Plan | None:
    """The plan without compiling when the inputs are those of the last apply and OUT holds what it wrote (see
    `unchanged_plan`); None otherwise, and the caller compiles, renders and compares as always."""
    if str(spec) == "-":
        return None
    _progress.step(f"comparing {spec} and the output directory with the last apply")
    document = loaded(spec)
    if document is None:
        return None
    out_dir = out_opt
    if out_dir is None:  # the validated name when the digest matches: it covers these very bytes
        metadata = document.data.get("metadata") if isinstance(document.data, dict) else None
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(name, str) or "/" in name or not is_safe_relative_path(name):
            return None
        out_dir = Path("out") / name
    current = unchanged_plan(out_dir, lambda inputs: input_digest_now(document, inputs.named_files, __version__))
    return current if current is not None and current.last_run.spec == str(spec) else None


_STYLE = {Action.CREATE: ("+", "green"), Action.UPDATE: ("~", "yellow"), Action.DELETE: ("-", "red")}
# The rows that stay the same installed item under another identity, each listed in a section of its own after the
# devices' changes: what the datacenter team does about them, and why.
_MOVES = {RowKind.RELABEL: ("Relabel", "the same two ends, other labels: print the new labels and put them on the "
                                    "installed cable"),
          RowKind.REPATCH: ("Re-patch", "the same id at other ends (the cable moves, or a device at its end was "
                                     "renamed): move or relabel its ends as their new end labels say")}
_ROW_WORDS: dict[Action | RowKind, str] = {Action.CREATE: "to add", Action.UPDATE: "to change",
                                           Action.DELETE: "to remove", RowKind.ESTIMATE: "with only a new estimate",
                                           RowKind.RELABEL: "to relabel", RowKind.REPATCH: "to re-patch"}
_WORDS = {action: word for action, word in _ROW_WORDS.items() if isinstance(action, Action)}
ROW_LIMIT = 25  # rows of one table artifact listed per plan; --json lists every one
SWITCH_NOUN = "switch"  # what a row of a fabric's switches is (topology/<fabric>.json)
_DEVICE_DIRS = {"switches": SWITCH_NOUN, "infiniband": "InfiniBand fabric", "pulumi": "Pulumi project"}


def _owner(path: str, owners: Mapping[str, str]) -> str:
    """The device or part of the cluster a path belongs to, as the plan's listing groups it (``owners``: what each
    directory under hosts/ belongs to, this plan's or the last apply's: `Plan.owners`)."""
    parts = path.split("/")
    if len(parts) > 2 and parts[0] in _DEVICE_DIRS:
        return f"{_DEVICE_DIRS[parts[0]]} {parts[1]}"
    if len(parts) > 2 and (kind := owners.get(f"{parts[0]}/{parts[1]}")):
        return f"{kind} {parts[1]}"
    if len(parts) > 2 and parts[0] in ("hosts", "storage", "kubernetes", "scheduler"):
        return f"{parts[0]}/{parts[1]}"
    return parts[0] if len(parts) > 1 else "output directory"


def _plural(noun: str, count: int = 2) -> str:
    if count == 1:
        return noun
    return noun[:-1] + "ies" if noun.endswith("y") else noun + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s")


def _note(d: FileDiff) -> str:
    change = d.change
    notes = [f"moved from {d.moved_from}"] if d.moved_from else [change.reason] if change.reason and (
        change.reason not in ("new artifact", "content changed")) else []
    if d.binary:
        notes.append("binary content")
    elif d.whole:
        notes.append(f"{d.whole} {_plural(d.noun, d.whole)} {_WORDS[_whole_action(d)]}")
    elif d.noun:
        counts = Counter(r.action for r in d.rows)
        notes.append(", ".join(f"{counts[a]} {_plural(d.noun, counts[a])} {word}"
                               for a, word in _ROW_WORDS.items() if counts[a]) or f"no {d.noun} changes")
        if d.lines != (0, 0):
            notes.append(f"+{d.lines[0]} -{d.lines[1]} lines")
    elif (change.action is Action.UPDATE or d.moved_from) and d.lines != (0, 0):
        notes.append(f"+{d.lines[0]} -{d.lines[1]} lines")
    elif d.moved_from:
        notes.append("same content")
    elif change.action is not Action.UPDATE:
        notes.append(f"{d.lines[0] or d.lines[1]} lines")
    # one parenthesis per path: its state first, in its colour (unmanaged: apply refuses it; drift: edited by hand)
    mark = "[red]unmanaged[/]" if change.unmanaged else "[magenta]drift[/]" if change.drift else ""
    text = _safe("; ".join(notes))
    if mark:
        return f"  [dim]([/]{mark}[dim]{'; ' + text if text else ''})[/]"
    return f"  [dim]({text})[/]" if text else ""


def _whole_action(d: FileDiff) -> Action:
    """What a table listed whole does to its rows: a fresh table replacing a file fabricgen did not create adds
    every one of them (that file held none of fabricgen's)."""
    return Action.CREATE if d.change.unmanaged else d.change.action


def _field(column: str, old: str | None, new: str | None) -> str:
    """One changed field of a row or config entry: ``mtu: 9216 -> 9100``; one the entry gains or loses (a config
    line added or removed) as ``+switchport mode trunk`` / ``-mtu: 9216``."""
    if old is None or new is None:
        sign, value = ("+", new) if old is None else ("-", old)
        return f"{sign}{column}" + (f": {value}" if value else "")
    return f"{column}: {old or '(empty)'} -> {new or '(empty)'}"


def _row_line(noun: str, row: RowChange, sign: str, colour: str) -> str:
    moved = [f"{row.moved[0]} -> {row.moved[1]}"] if row.action is RowKind.REPATCH else []
    fields = "; ".join([*moved, *(_field(*f) for f in row.shown_fields)])
    detail = f"  [dim]{_safe(fields)}[/]" if fields else ""
    label = f"  [dim]\\[{_safe(row.label)}][/]" if row.label else ""
    return f"[{colour}]{sign} {_safe(noun)} {_safe(row.subject)}[/]{label}{detail}"


def _print_rows(d: FileDiff, lines: list[str],
                actions: Sequence[Action | RowKind] = (*_WORDS, RowKind.ESTIMATE), indent: str = "      ") -> None:
    """The rows of ``actions``, at most `ROW_LIMIT` of each."""
    for action in actions:
        rows = [r for r in d.rows if r.action is action]
        sign, colour = _STYLE[action] if isinstance(action, Action) else (
            "~", "dim" if action is RowKind.ESTIMATE else "cyan")
        word = _ROW_WORDS[action]
        lines.extend(f"{indent}{_row_line(d.noun, row, sign, colour)}" for row in rows[:ROW_LIMIT])
        if len(rows) > ROW_LIMIT:
            lines.append(f"{indent}[dim]... and {len(rows) - ROW_LIMIT} more {_plural(d.noun)} {word} "
                         "(plan --json lists every one)[/]")


def _print_moves(diffs: Sequence[FileDiff]) -> None:
    """The relabels and re-patches, each in a section of its own: work at the racks, not a file edit."""
    for move, (title, why) in _MOVES.items():
        moved = [d for d in diffs if any(r.action is move for r in d.rows)]
        if not moved:
            continue
        lines = [f"\n[bold cyan]{title}[/]: {why}:"]
        for d in moved:
            lines.append(f"  [dim]{_safe(d.change.path)}[/]")
            _print_rows(d, lines, (move,), "    ")
        out.print("\n".join(lines), soft_wrap=True)


def _print_unified(d: FileDiff, lines: list[str]) -> None:
    colours = {"+": "green", "-": "red", "@": "cyan"}
    for line in d.unified():
        colour = colours.get(line[:1], "") if not line.startswith(("+++", "---")) else "bold"
        text = _safe(line)
        lines.append(f"    [{colour}]{text}[/]" if colour else f"    {text}")


def _totals(diffs: Sequence[FileDiff], moved: int = 0) -> str:
    """The plan in the cluster's terms: the devices renamed (``moved``), rows per noun (cables, addresses,
    switches), each followed by its parts (a cable's ports), then config entries and lines."""
    rows: dict[str, Counter[Action | RowKind]] = {}
    parts: dict[str, dict[str, list[int]]] = {}
    added = removed = files = binaries = 0
    for d in diffs:
        binaries += d.binary
        if d.noun:
            rows.setdefault(d.noun, Counter()).update(r.action for r in d.rows)
            rows[d.noun][_whole_action(d)] += d.whole
            for noun, (plus, minus) in d.parts.items():
                total = parts.setdefault(d.noun, {}).setdefault(noun, [0, 0])
                total[0] += plus
                total[1] += minus
        if not d.binary and (not d.noun or d.lines != (0, 0)):  # a config's entries are lines too
            added, removed, files = added + d.lines[0], removed + d.lines[1], files + 1
    entries = rows.pop(CONFIG_NOUN, None)
    words = [f"devices: {moved} moved (renamed in place)"] if moved else []
    for noun, c in rows.items():
        words.append(f"{_plural(noun)}: " + ", ".join([*(f"{c[a]} {_WORDS[a]}" for a in _WORDS),
                                                       *(f"{c[k]} {_ROW_WORDS[k]}" for k in (RowKind.ESTIMATE, *_MOVES)
                                                         if c[k])]))
        words += [f"{_plural(part)}: {plus} newly cabled, {minus} freed"
                  for part, (plus, minus) in parts.get(noun, {}).items()]
    if entries:
        words.append(f"{_plural(CONFIG_NOUN)}: " + ", ".join(f"{entries[a]} {_WORDS[a]}" for a in _WORDS))
    if files:
        words.append(f"config lines: +{added} -{removed} in {files} file{'s' if files != 1 else ''}")
    if binaries:  # workbooks and PDFs: what changed in them is not read here (their rows are the tables')
        words.append(f"binary files: {binaries}" + ("" if words else " (no table row or text line changed)"))
    return "; ".join(words)


def _heading(owner: str, device: RowChange | None, renamed: Mapping[str, str]) -> str:
    """A group's heading: its device or part of the cluster, a renamed device (``renamed``: new name -> old) as
    Terraform's ``moved`` reads (``# switch oob-l04 has moved to oob-k04``), and the device's own change (its row in
    a table such as topology/<fabric>.json: its model, tier or rack), the change a change board must see first."""
    kind, _, name = owner.rpartition(" ")
    was = renamed.get(name) if kind else None
    title = f"{kind} {was} has moved to {name}" if was else owner
    fields = [_field(*f) for f in device.shown_fields if f[1:] != (was, name)] if device else []
    detail = f"  [yellow]~ {_safe('; '.join(fields))}[/]" if fields else ""
    return f"\n  [bold]# {_safe(title)}[/]{detail}"


@without_gc  # a line and rich's Text and Segments per file (6,466 at 16k GPUs): 0.62 -> 0.25 s of CPU paused
def _print_plan(plan: Plan, described: _Described, show_diff: bool) -> None:
    """Terraform's shape: the changes grouped by device (a renamed one's files under its move), then drift,
    unmanaged files and the summary."""
    diffs, moved = described.diffs, described.moved
    lines = [f"fabricgen will make these changes in {_safe(str(plan.out_dir))}:"] if diffs else []
    devices = {f"{d.noun} {row.subject}": row for d in diffs for row in d.rows if row.action is Action.UPDATE}
    owners = plan.owners

    def group(d: FileDiff) -> str:
        """A renamed device's files deleted at its old name go under its new name; a path written is the device
        its name names now (a shifted group's chain gives the old names to other boxes)."""
        kind, _, name = _owner(d.change.path, owners).rpartition(" ")
        gone = kind and name in moved and d.change.action is Action.DELETE
        return f"{kind} {moved[name]}" if gone else _owner(d.change.path, owners)

    groups: dict[str, list[FileDiff]] = {}
    for d in diffs:
        groups.setdefault(group(d), []).append(d)
    for kind, _, new in described.moves(owners):  # a renamed device with no file of its own: its move alone
        groups.setdefault(f"{kind} {new}", [])
    renamed = {new: old for old, new in moved.items()}
    for owner, members in groups.items():  # printed at once below: one console call per line cost ~1 s for a
        lines.append(_heading(owner, devices.get(owner), renamed))  # 16k-GPU cluster's 6,000
        for d in members:
            sign, colour = ("~", "yellow") if d.moved_from else _STYLE[d.change.action]
            lines.append(f"  [{colour}]{sign} {_safe(d.change.path)}[/]{_note(d)}")
            _print_rows(d, lines)
            if show_diff:
                _print_unified(d, lines)
    if lines:
        out.print("\n".join(lines), soft_wrap=True)
    _print_moves(diffs)
    drifted = [c for c in plan.changes if c.drift]
    gap = "\n" if lines else ""  # between sections; none above the first thing printed (a plan of no changes)
    if drifted:
        out.print(f"{gap}[bold magenta]Drift[/]: files edited by hand since the last apply (apply overwrites or "
                  "deletes them; adopted when they match):")
        for drift in drifted:
            out.print(f"  [magenta]{_safe(drift.path)}[/]  [dim]({_safe(drift.reason)})[/]", soft_wrap=True)
        gap = "\n"
    if plan.unmanaged:
        out.print(f"{gap}[bold red]Unmanaged[/]: files fabricgen did not create stand where artifacts go "
                  "(apply refuses them without --force):")
        for path in plan.unmanaged:
            out.print(f"  [red]{_safe(path)}[/]", soft_wrap=True)
    c = plan.counts
    revision, before = _revision(plan.lock.spec_digest), plan.previous_spec_digest
    if before and before != plan.lock.spec_digest:
        revision += f", was {_revision(before)}"
    summary = (
        f"Plan for {plan.out_dir} ({revision}): {c['create']} to create, {c['update']} to update, {c['delete']} to "
        f"delete, {c['unchanged']} unchanged{_files_moved(plan, diffs)}."
    )
    if not plan.has_changes:
        summary += " No changes." + (" The lock file will be refreshed." if plan.lock_changed else "")
    gap = "\n" if lines or drifted or plan.unmanaged else ""
    out.print(f"{gap}[bold]{_safe(summary)}[/]", soft_wrap=True)
    if plan.has_changes:
        out.print(f"  {_safe(_totals(diffs, len(moved)))}", soft_wrap=True)


def _files_moved(plan: Plan, diffs: Sequence[FileDiff]) -> str:
    """How many of the files apply creates, updates, deletes or leaves are a renamed device's files listed as
    moved: apply writes each at its new path and deletes an old one no device bears any more (in a shifted group's
    chain most are updates: ``hosts/gpu002/x`` rewritten with what the box that stood as gpu001 had at
    ``hosts/gpu001/x``; one unchanged at its path is listed where its box's own file differed)."""
    action = {c.path: c.action for c in plan.changes}
    counts = Counter(action[d.change.path] for d in diffs if d.moved_from)
    counts[Action.DELETE] = sum(action[d.moved_from] is Action.DELETE for d in diffs if d.moved_from)
    done = {Action.CREATE: "created", Action.UPDATE: "updated", Action.DELETE: "deleted",
            Action.UNCHANGED: "unchanged"}  # unchanged at its path, listed as it differs from its box's own
    words = [f"{counts[a]} {word}" for a, word in done.items() if counts[a]]
    if not words:
        return ""
    listed = ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else words[0]
    return f" (of those, {listed} are files moved with a renamed device)"


def _revision(spec_digest: str) -> str:
    """The spec's revision (``spec 5cba90992c63``, the lock's spec digest). A printed cable sheet carries its own:
    the digest of its rows, changed only when they change (``handoff.revision``)."""
    return f"spec {spec_digest.removeprefix('sha256:')[:12]}"


@dataclass(frozen=True)
class _Described:
    """A plan's content changes and the devices it renames (old name -> new name)."""

    diffs: tuple[FileDiff, ...] = ()
    moved: Mapping[str, str] = field(default_factory=dict)

    def moves(self, owners: Mapping[str, str]) -> list[tuple[str, str, str]]:
        """Each renamed device as (kind, old name, new name): its kind as its files are headed (``switch``,
        ``node``; ``owners``: `Plan.owners`), else as a table's rows name it (an InfiniBand switch, which has no
        files of its own, is a row of its fabric's ``switches``), else ``device``."""
        kinds = {row.subject: d.noun for d in self.diffs if d.noun == SWITCH_NOUN for row in d.rows}
        for d in self.diffs:
            kind, _, name = _owner(d.change.path, owners).rpartition(" ")
            if kind:
                kinds[name] = kind
        return [(kinds.get(new, kinds.get(old, "device")), old, new) for old, new in self.moved.items()]


@without_gc
def _describe(current: Plan) -> _Described:
    """The plan's content changes, their table rows named as each feature declares, a renamed device's matched
    under its new name (none to describe in a plan that changes nothing, which then imports no feature)."""
    if all(c.action is Action.UNCHANGED for c in current.changes):
        return _Described()
    from fabricgen.stages.render import PLACES, TABLES

    moved = moved_devices(current, PLACES)
    return _Described(describe(current, TABLES, moved), moved)


def _row_json(r: RowChange) -> dict[str, Any]:
    """A row's change for ``--json``: ``fields`` one [old, new] per column; an installed item of several rows
    (``legs``: a breakout's legs, a cage pair's links) holds there the columns its rows change alike, and lists each
    row's own change (its action, subject and fields) under ``legs``, which also carry the rows it gains or loses."""
    ends = {leg.subject for leg in r.legs if leg.action in (Action.CREATE, Action.DELETE)}
    changed = [f for f in r.fields if f[0] not in ends]  # a leg gained or lost is a leg's action, not a field
    alike = Counter(column for column, _, _ in changed)
    return {"action": r.action.value, "subject": r.subject, **({"label": r.label} if r.label else {}),
            "fields": {c: [old, new] for c, old, new in changed if alike[c] == 1},
            **({"from": r.moved[0], "to": r.moved[1]} if r.action is RowKind.REPATCH else {}),
            **({"legs": [_row_json(leg) for leg in r.legs]} if r.legs else {})}


def _diff_json(d: FileDiff) -> dict[str, Any]:
    data: dict[str, Any] = {"path": d.change.path, "binary": d.binary, **({"moved_from": d.moved_from}
                                                                          if d.moved_from else {})}
    if d.noun:
        data["noun"] = d.noun
        data["whole"] = d.whole  # rows of a table created or deleted as a whole; they are not listed in "rows"
        data["rows"] = [_row_json(r) for r in d.rows]
        data["parts"] = {noun: {"added": a, "removed": r} for noun, (a, r) in d.parts.items()}
    if not d.noun or d.lines != (0, 0):
        data["lines"] = {"added": d.lines[0], "removed": d.lines[1]}
    return data


def _run(action: Any, as_json: bool = False) -> None:
    """Map fabricgen errors to exit code 1 with one clear report (also as JSON on stdout with ``as_json``);
    Ctrl-C to 130."""
    try:
        action()
    except FabricgenError as exc:
        _progress.stop()
        if as_json:
            _print_json_error(exc.stage, _problems(exc), valid=not exc.spec_at_fault)
        _print_error(exc)
        _fail(EXIT_ERROR)
    except KeyboardInterrupt:
        _progress.stop()
        err.print("interrupted")
        _fail(EXIT_INTERRUPTED)
    finally:
        _progress.stop()


def _print_json_error(stage: str, problems: list[dict[str, Any]], valid: bool | None) -> None:
    """``--json``'s document on an error: ``valid`` says whether the spec is (null: it was not read, as on a usage
    error), ``stage`` where the command stopped (spec, checks, read-back, output, verify, usage ...)."""
    sys.stdout.write(json.dumps({"valid": valid, "error": True, "stage": stage, "problems": problems}, indent=2)
                     + "\n")


def _spec_name(spec: Path) -> str:
    return STDIN if str(spec) == "-" else str(spec)


# -- commands --------------------------------------------------------------------------------------------------
@app.command(short_help="Validate specs: schema, semantics, topology checks.")
def validate(
    specs: Annotated[
        list[Path], typer.Argument(help="Spec files ('-' reads stdin).", show_default=False, metavar="SPEC")
    ],
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="Report format.")
    ] = OutputFormat.TEXT,
) -> None:
    """Validate specs (schema, semantics, topology checks). Exit 0 when all are valid, 1 otherwise."""
    results: list[dict[str, Any]] = []
    for spec in specs:
        try:
            compiled = compile_spec(spec, _progress.step)
            problems = [_finding_dict(f) for f in compiled.warnings]
            results.append({"file": _spec_name(spec), "valid": True, "problems": problems})
        except FabricgenError as exc:
            results.append({"file": _spec_name(spec), "valid": False, "problems": _problems(exc)})
    _progress.stop()
    if output_format is OutputFormat.JSON:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
    elif output_format is OutputFormat.GITHUB:
        for result in results:
            for problem in result["problems"]:
                sys.stdout.write(_github_line(problem) + "\n")
    else:
        for result in results:
            status = "[green]valid[/]" if result["valid"] else "[red]invalid[/]"
            out.print(f"{_safe(result['file'])}: {status}")
            for p in result["problems"]:
                position = SourcePosition(p["file"], p["line"] or 0, p["column"] or 0) if p["file"] else None
                where = f"{position}: " if position else ""
                check = f"[{p['check']}] " if p.get("check") else ""  # as plan prints a finding
                field = f"{p['path']}: " if p["path"] else ""
                hint = f" (hint: {p['hint']})" if p["hint"] else ""
                _print_problem(f"{where}{p['severity']}: {check}{field}{p['message']}{hint}", position, out,
                               p["path"])
    _fail(EXIT_OK if all(r["valid"] for r in results) else EXIT_ERROR)


@app.command(short_help="Show what apply would change, per device and cable.")
def plan(
    spec: SpecArg,
    out_dir: OutOpt = None,
    detailed_exitcode: Annotated[
        bool, typer.Option("--detailed-exitcode", help="Exit 0 no changes, 2 changes, 1 error.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable plan on stdout (errors too).")] = False,
    show_diff: Annotated[bool, typer.Option("--diff", help="Show the content diff of every changed file.")] = False,
    save: Annotated[
        Path | None,
        typer.Option("-out", "--save", help="Save the plan to this file; `apply PLANFILE` applies exactly it.",
                     metavar="PLANFILE",
                     show_default=False),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Plan as `apply --force` would: replace files fabricgen did not create.")
    ] = False,
    renamed_from: RenamedFromOpt = "",
    full: FullOpt = False,
) -> None:
    """Show what apply would add (+), change (~) and remove (-), per device and per cable, port and address.

    Exit 0 (with --detailed-exitcode: 0 no changes, 2 changes pending), 1 on any error or when apply would refuse
    a file fabricgen did not create (unless --force)."""
    holder: dict[str, Plan] = {}

    def action() -> None:
        current = None if full or save is not None else _unchanged(spec, out_dir)
        compiled = None
        if current is None:
            compiled, current = _plan(spec, out_dir)
            warnings = compiled.warnings
        else:
            warnings = current.last_run.warnings
        refuse_other_cluster(current, force, renamed_from)  # before a listing of one cluster's files replaced
        shown = _with_unused(warnings, current, renamed_from)
        holder["plan"] = current
        _progress.step("describing the changes")
        described = _describe(current)
        _progress.stop()
        refused = bool(current.unmanaged) and not force
        if save is not None and not refused:
            planfile.save(save, current, spec, force=force, renamed_from=renamed_from, tool_version=__version__)
        if as_json:
            held = current.other_cluster  # adopted (--renamed-from, --force): the lock will name the new one
            data = {"valid": True, **plan_to_json(current), "revision": _revision(current.lock.spec_digest),
                    "adopts_cluster": held.handle if held is not None else "",
                    "apply_refuses": list(current.unmanaged) if refused else [],
                    "moved": [{"kind": kind, "from": old, "to": new}
                              for kind, old, new in described.moves(current.owners)],
                    "diffs": [_diff_json(d) for d in described.diffs],
                    "warnings": [_finding_dict(f) for f in shown]}
            sys.stdout.write(json.dumps(data, indent=2) + "\n")
        else:
            _print_adoption(current)
            _print_plan(current, described, show_diff)
            _print_warnings(shown)
            if save is not None and not refused:
                out.print(f"Saved the plan to {_safe(str(save))}; `fabricgen apply {_safe(str(save))}` applies it "
                          "while nothing changes.", soft_wrap=True)

    _run(action, as_json)
    current = holder["plan"]
    if current.unmanaged and not force:
        err.print(f"[bold red]error:[/] apply would refuse {len(current.unmanaged)} file(s) fabricgen did not "
                  f"create: {_safe(', '.join(current.unmanaged))} (move them away, or plan and apply with --force)",
                  soft_wrap=True)
        _fail(EXIT_ERROR)
    _fail(EXIT_CHANGES if detailed_exitcode and current.needs_apply else EXIT_OK)


@app.command(short_help="Write the planned changes atomically.")
def apply(
    spec: Annotated[Path, typer.Argument(help="Cluster spec (YAML), or a plan saved by `plan -out`.",
                                         metavar="SPEC|PLANFILE", show_default=False)],
    out_dir: OutOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Apply without asking.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace files fabricgen did not create.")] = False,
    renamed_from: RenamedFromOpt = "",
    cloud: Annotated[bool, typer.Option("--cloud", help="Then run `pulumi up` on the cloud cluster's project "
                                                        "(exit 2 with the commands to run when pulumi is missing).")
                     ] = False,
    full: FullOpt = False,
) -> None:
    """Write the changed artifacts atomically; a second apply with the same spec changes nothing. Given a saved
    plan, apply exactly it (no question asked), and refuse when the spec, the outputs or OUT changed since."""
    holder: dict[str, int] = {"code": EXIT_OK}

    def action() -> None:
        saved = planfile.load(spec) if planfile.is_planfile(spec) else None
        deployment, compiled = None, None
        if saved is not None:
            if out_dir is not None or force or renamed_from:
                raise OutputError("a saved plan fixes the output directory, --force and --renamed-from; give none")
            saved = replace(saved, spec=_from_here(saved.spec), out_dir=_from_here(saved.out_dir))
            compiled, current = _plan(saved.spec, saved.out_dir)
            stale = saved.stale(current, compiled.cluster.spec_digest, __version__)
            if stale:
                raise OutputError(f"the saved plan {spec} is stale: {'; '.join(stale)}; run plan again")
            warnings = compiled.warnings
        elif (unchanged := None if full or cloud else _unchanged(spec, out_dir)) is not None:
            current, warnings = unchanged, unchanged.last_run.warnings
        else:
            compiled, current = _plan(spec, out_dir)
            warnings = compiled.warnings
            deployment = _deployment(compiled, current.out_dir) if cloud else None
        # a saved plan applies with the options it was made with
        forced, renamed = (saved.force, saved.renamed_from) if saved is not None else (force, renamed_from)
        refuse_other_cluster(current, forced, renamed)
        _progress.step("describing the changes")
        described = _describe(current)
        _progress.stop()
        _print_adoption(current)
        _print_plan(current, described, False)
        _print_warnings(_with_unused(warnings, current, renamed))  # the compile's alone are the last run's
        named = str(saved.spec if saved is not None else spec)
        written = (_write(current, True, forced, renamed, named, warnings, saved.state_digest)
                   if saved is not None else _write(current, yes, forced, renamed, named, warnings))
        if not written:  # declined: an error to a wrapper (`apply && push-configs` must not push after a "no")
            holder["code"] = EXIT_ERROR
        elif deployment is not None:
            holder["code"] = deployment()

    _run(action)
    _fail(holder["code"])


def _with_unused(warnings: Sequence[Finding], current: Plan, renamed_from: str) -> list[Finding]:
    """The run's warnings, and after them one for a ``--renamed-from`` with nothing to adopt."""
    unused = unused_renamed_from(current, renamed_from)
    return [*warnings, *([unused] if unused is not None else [])]


def _print_adoption(current: Plan) -> None:
    """The other cluster whose OUT this plan takes over (--renamed-from or --force let it), first: every file's
    change below follows from it, and the lock names the spec's cluster from then on."""
    held = current.other_cluster
    if held is not None:
        out.print(f"[bold yellow]{_safe(str(current.out_dir))} holds cluster {_safe(str(held))}[/]; this plan adopts "
                  f"it for cluster {_safe(str(current.lock.cluster))} (the lock will name the new cluster).",
                  soft_wrap=True)


def _from_here(path: Path) -> Path:
    """A saved plan's absolute path (it is applied from any directory) as `plan` was given it, relative to the
    working directory when it lies beneath: the spec's warnings and OUT then print as the plan printed them."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _write(current: Plan, yes: bool, force: bool, renamed_from: str, spec: str, warnings: tuple[Finding, ...],
           expected_state: str | None = None) -> bool:
    """Apply the plan after confirmation; False when the user declined."""
    if not current.needs_apply:
        apply_plan(current, spec=spec, warnings=warnings)  # writes no artifact; brings last-run.json up to date
        return True
    if current.unmanaged and not force:
        raise OutputError(
            "refusing to replace files fabricgen did not create: "
            + ", ".join(current.unmanaged)
            + " (use --force)"
        )
    if not yes:
        if not sys.stdin.isatty():
            raise OutputError("apply needs confirmation: run it on a terminal or pass --yes")
        if not _approved(current):
            err.print("apply cancelled; nothing was written")
            return False
    _progress.step(f"writing {len(current.writes)} files, deleting {len(current.deletions)}")
    result = apply_plan(current, force=force, renamed_from=renamed_from, expected_state=expected_state, spec=spec,
                        warnings=warnings)
    _progress.stop()
    out.print(
        f"[bold green]Applied:[/] {len(result.written)} written, {len(result.deleted)} deleted in "
        f"{_safe(str(result.plan.out_dir))}"
    )
    return True


APPROVAL = "yes"  # Terraform's word: a stray "y" (or a key pressed by habit) must not rewrite a fleet's configs


def _approved(current: Plan) -> bool:
    """Ask on the terminal, as Terraform does: only the literal ``yes`` approves, anything else (``y`` too)
    declines."""
    answer: str = typer.prompt(f"Do you want to apply these changes to {current.out_dir}?\n"
                          f"  Only '{APPROVAL}' will be accepted to approve.\n\n  Enter a value",
                          default="", show_default=False)
    return answer.strip() == APPROVAL


def _deployment(compiled: Compiled, out_dir: Path) -> Callable[[], int]:
    """The cloud cluster's Pulumi project in OUT (DeployError now, before anything is written, when the spec has
    none), and what runs it once apply wrote it: pulumi up through the Automation API, or the exact commands when
    the pulumi CLI is missing (exit 2)."""
    from fabricgen.features.cloud import deploy

    target = deploy.project(compiled.cluster, out_dir)

    def run() -> int:
        if deploy.pulumi_cli() is None:
            out.print("[yellow]pulumi is not on PATH: the project is written but not deployed. Run:[/]")
            for command in target.commands():
                out.print(f"  {_safe(command)}", soft_wrap=True)
            return EXIT_CHANGES
        outputs = deploy.up(target, on_output=lambda line: out.print(_safe(line.rstrip("\n")), soft_wrap=True))
        out.print(f"[bold green]Deployed:[/] stack {_safe(target.stack)}")
        for name, value in sorted(outputs.items()):
            out.print(f"  {_safe(name)}: {_safe(json.dumps(value, sort_keys=True))}", soft_wrap=True)
        return EXIT_OK

    return run


@app.command(short_help="Summarise the cluster: tiers, bandwidth, BOM.")
def explain(
    spec: SpecArg,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable summary on stdout.")] = False,
) -> None:
    """Summarise the compiled cluster: counts per tier, bandwidth, oversubscription and the switch BOM."""

    def action() -> None:
        from fabricgen.features.cabling.handoff import sheet_revisions
        from fabricgen.features.topology.explain import cluster_summary

        compiled = _compile(spec)
        summary = {**cluster_summary(compiled.topology), "spec_digest": compiled.cluster.spec_digest,
                   "revision": _revision(compiled.cluster.spec_digest),
                   "sheets": [{"sheet": sheet, "files": files.split(), "revision": revision}
                              for sheet, files, revision in sheet_revisions(compiled.topology)]}
        _progress.stop()
        if as_json:
            sys.stdout.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")
            return
        _print_summary(summary)
        _print_warnings(compiled.warnings)  # after the summary, as plan's: not scrolled away above it

    _run(action, as_json)


def _table(title: str, columns: Sequence[str], left: int) -> Table:
    """A table that fits 80 columns without cutting a cell: light borders, long cells folded, never ellipsized;
    the first ``left`` columns are text, the rest numbers."""
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i < left else "right", overflow="fold")
    return table


_TRAILING_PADDING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def _print_table(table: Table) -> None:
    """A table as rich lays it out, without the spaces it pads every line with to the table's width (a report
    saved to a file or diffed in review would carry them), before or among the closing colour codes."""
    with out.capture() as captured:
        out.print(table)
    out.file.write(_TRAILING_PADDING.sub(r"\1", captured.get()))
    out.file.flush()


def _bandwidth_cells(f: dict[str, Any]) -> tuple[str, str]:
    """Bisection and oversubscription, which say nothing of a network of 1G BMC ports (JSON keeps the numbers)."""
    if f["role"] == FabricRole.OOB.value:
        return "-", "-"
    return f"{f['bisection_gbps'] / 1000:g} Tb/s", f"{f['oversubscription']:.2f}:1"


def _print_summary(s: dict[str, Any]) -> None:
    # a cloud cluster has no racks, switches or links of its own: its line says what it has, the instances below
    facility = "" if "cloud" in s else (f" in {s['racks_used']} racks; {s['switch_total']} switches, "
                                        f"{s['link_total']} links")
    out.print(
        f"[bold]{_safe(s['cluster'])}[/] at {_safe(s['site'])}: {s['nodes']} nodes, {s['gpus']} GPUs{facility}\n"
        f"[dim]{s['revision']}; each printed cable sheet carries the revision of its own rows[/]"
    )
    if "cloud" in s:
        c = s["cloud"]
        out.print(f"{_safe(c['provider'])} {_safe(c['zone'])}: {s['nodes']} x {_safe(c['instance_type'])}, "
                  f"{c['interfaces']} {_safe(c['interface_kind'])} interfaces each")
        return
    fabrics = _table("Fabrics", ("fabric", "kind", "speed", "tiers", "host ports", "bisection", "oversub."), 3)
    tiers = _table("Switches and links per tier",
                   ("fabric", "leaf", "spine", "core", "node-leaf", "leaf-spine", "spine-core"), 1)
    for f in s["fabrics"]:
        fabrics.add_row(
            _safe(f["name"]),
            f["kind"],
            f["speed"] + ("" if f["uplink_speed"] == f["speed"] else f"/{f['uplink_speed']}"),
            str(f["tiers"]),
            str(f["host_ports"]),
            *_bandwidth_cells(f),
        )
        tiers.add_row(
            _safe(f["name"]),
            *(str(f["switches"].get(t, "")) for t in ("leaf", "spine", "core")),
            *(str(f["links"].get(t, "")) for t in ("node-leaf", "leaf-spine", "spine-core")),
        )
    _print_table(fabrics)
    _print_table(tiers)
    _print_server_blocks(s["fabrics"])
    bom = _table("Switches", ("model", "count"), 1)
    for model, count in s["switch_bom"].items():
        bom.add_row(_safe(model), str(count))
    _print_table(bom)
    if s["sheets"]:  # what a sheet on a clipboard is matched against: the revision in its page header
        sheets = _table("Cable sheets (the revision each prints; plan lists those that change)",
                        ("sheet", "revision", "printed in"), 3)
        for sheet in s["sheets"]:
            sheets.add_row(_safe(sheet["sheet"]), f"revision {sheet['revision']}", _safe(" ".join(sheet["files"])))
        _print_table(sheets)


def _print_server_blocks(fabrics: Sequence[dict[str, Any]]) -> None:
    """The declared server blocks (``topology.server_ports``), per leaf: how many of the block's ports servers
    use and which are free, so a server added is cabled into the block and no compute node there."""
    blocks = [(f["name"], b) for f in fabrics for b in f.get("server_blocks", ())]
    if not blocks:
        return
    table = _table("Server blocks (topology.server_ports: no compute node takes them)",
                   ("fabric", "leaf", "free ports", "ports", "used", "free"), 3)
    for fabric, b in blocks:
        table.add_row(_safe(fabric), _safe(b["leaf"]), " ".join(b["free"]) or "-", str(b["ports"]),
                      str(len(b["used"])), str(len(b["free"])))
    _print_table(table)


@app.command(short_help="Compare a discovered fabric (ibnetdiscover, LLDP) with the plan.")
def verify(
    spec: SpecArg,
    ibnetdiscover: Annotated[
        Path | None,
        typer.Option(
            "--ibnetdiscover",
            help="Saved output of `ibnetdiscover` or `ibnetdiscover -p` ('-' reads stdin).",
            show_default=False,
            metavar="FILE",
        ),
    ] = None,
    lldp: Annotated[
        Path | None,
        typer.Option("--lldp", help="LLDP neighbour tables (`lldpctl -f json`, SONiC `show lldp table`, NVUE `nv "
                                    "show interface -o json`, EOS `show lldp neighbors [detail] | json`): a file or "
                                    "a directory of files named <device>.json/.txt.", show_default=False,
                     metavar="FILE|DIR"),
    ] = None,
    only_present: Annotated[
        bool, typer.Option("--only-present", help="With --lldp, a partial capture (a lab started with --sample): a "
                                                  "port facing a device that gave no table is not reported missing "
                                                  "when it is dark.")
    ] = False,
    out_dir: OutOpt = None,
    fabric: Annotated[
        str | None, typer.Option("--fabric", help="Fabric to check (needed when the spec has several).",
                                  metavar="NAME")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable report on stdout.")] = False,
    speed_as: Annotated[
        IbSpeed | None,
        typer.Option(
            "--speed-as",
            case_sensitive=False,
            metavar="SPEED",
            help="Expect this lane speed instead of the planned one (width unchanged). For simulators: ibsim 0.10 "
            "knows speeds up to HDR only (net file at 4xHDR: --speed-as HDR; it brings a 4xNDR port line up at "
            f"4xSDR: --speed-as SDR). One of {', '.join(IbSpeed)}, in any case.",
        ),
    ] = None,
) -> None:
    """Compare a discovered fabric with the plan. InfiniBand (--ibnetdiscover): missing, unexpected and miswired
    links by cable label and port, devices whose NodeDescription or GUID differ, links at the wrong width or speed.
    Ethernet (--lldp, switch port names read from OUT's configurations): missing, miswired and unexpected
    neighbours by cable label and both planned ends. Exit 0 only when the fabric matches the plan, 1 on any
    mismatch or error."""
    from fabricgen.features.infiniband.discovery import parse_ibnetdiscover
    from fabricgen.features.infiniband.verify import (
        End,
        PortPlace,
        Report,
        compare,
        planned_rates,
        port_locations,
        report_to_json,
    )
    from fabricgen.features.infiniband.view import ib_fabric

    holder: dict[str, bool] = {"clean": False}

    def print_report(report: Report, rate: str, where: dict[tuple[str, int], PortPlace]) -> None:
        """The differences, each planned end where a technician finds it (rack, U, device, faceplate port) next to
        the InfiniBand port the fabric reports."""

        def located(end: End | None) -> str:
            if end is None:
                return "nothing"
            place = where.get((end.device, end.port)) or where.get((end.device, -1))
            return f"{place} (IB port {end.port})" if place else str(end)

        def rows(ends: Sequence[End | None]) -> str:
            return "\n".join(_safe(located(end)) for end in ends)

        if report.findings:
            table = Table(title=f"Fabric {report.fabric}: differences from the plan")
            for column in ("kind", "cable", "planned (rack, U, device, port)", "found"):
                table.add_column(column, overflow="fold")
            for f in report.findings:
                planned = rows(f.planned) if f.planned else _safe(f.planned_text)
                if not f.planned and f.device and (f.device, -1) in where:
                    planned = _safe(f"{where[(f.device, -1)]} {f.planned_text.removeprefix(f.device)}".strip())
                found = _safe(f.found_text)
                if f.found and f.kind.value in ("miswired", "unexpected"):
                    found = rows(f.found)
                table.add_row(f.kind.value, _safe(f.cable or "-"), planned, found)
            _print_table(table)
        summary = (
            f"Fabric {report.fabric}: {report.planned_links} planned links at {rate}, {report.found_links} found, "
            f"{report.matched_links} between the planned ports"
        )
        if report.clean:
            out.print(f"[bold green]{_safe(summary)}: the fabric matches the plan.[/]", soft_wrap=True)
            return
        counts = ", ".join(f"{n} {kind}" for kind, n in report.counts().items())
        out.print(f"[bold red]{_safe(summary)}; {len(report.findings)} differences: {_safe(counts)}.[/]",
                  soft_wrap=True)

    def action() -> None:
        if (ibnetdiscover is None) == (lldp is None):
            raise VerifyError("give one of --ibnetdiscover FILE (InfiniBand) or --lldp FILE|DIR (Ethernet)")
        compiled = _compile(spec)
        if lldp is not None:
            holder["clean"] = _verify_lldp(compiled, lldp, _out_dir(compiled, out_dir), fabric, as_json,
                                           only_present)
            return
        assert ibnetdiscover is not None
        ft = _ib_fabric(compiled, fabric)
        text = _read_discovery(ibnetdiscover)
        found = parse_ibnetdiscover(text)
        if not found.devices:
            first = next((line.strip() for line in text.splitlines() if line.strip()), "")
            raise VerifyError(
                f"{'stdin' if str(ibnetdiscover) == '-' else ibnetdiscover} is not ibnetdiscover output: no Switch "
                "or Ca record"
                + (f" (line 1: {first[:60]!r})" if first else " (it is empty)")
                + "; save the output of `ibnetdiscover` or `ibnetdiscover -p`"
            )
        rates = planned_rates(ft.fabric, speed_as.value if speed_as else None)
        width, speed = rates[ft.fabric.speed.name]
        _progress.step(f"comparing {len(found.links)} discovered links with the plan")
        report = compare(ib_fabric(compiled.topology, ft), found, width, speed, rates=rates)
        _progress.stop()
        holder["clean"] = report.clean
        where = port_locations(compiled.topology, ft)
        if as_json:
            data = report_to_json(report, where)
            data = {"spec": str(spec), "ibnetdiscover": str(ibnetdiscover), "form": found.form,
                    "expected_rate": f"{width}{speed}", **data}
            sys.stdout.write(json.dumps(data, indent=2) + "\n")
        else:
            print_report(report, f"{width}{speed}", where)
            _print_warnings(compiled.warnings)

    _run(action, as_json)
    _fail(EXIT_OK if holder["clean"] else EXIT_ERROR)


def _verify_lldp(compiled: Compiled, path: Path, out_dir: Path, fabric: str | None, as_json: bool,
                 only_present: bool) -> bool:
    """The LLDP comparison over the Ethernet fabrics fabricgen configures (or the one named); True when clean."""
    from fabricgen.features.ethernet import lldp as lldp_tables
    from fabricgen.features.infiniband.verify import PortPlace
    from fabricgen.features.lab import run as lab_run

    fabrics = lab_run.routed_fabrics(compiled.topology, fabric)
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    chosen = {ft.fabric.name for ft in fabrics}
    elsewhere, others = lldp_tables.cabled_elsewhere(
        ft for ft in compiled.topology.fabrics if ft.fabric.name not in chosen)
    devices = {d for ft in compiled.topology.fabrics for link in ft.links for d in (link.a.device, link.z.device)}
    devices |= {sw.name for ft in compiled.topology.fabrics for sw in ft.switches}
    found: dict[str, list[lldp_tables.Neighbor]] = {}
    origin: dict[str, Path] = {}
    problems = []
    for file in files:
        device = lldp_tables.device_of(file.stem, devices)
        if device is None:
            hint = did_you_mean(file.stem.split(".", 1)[0], sorted(devices))
            problems.append(f"{file}: {file.stem!r} is no planned device (the file is named <device>.json/.txt, "
                            "or by its FQDN)" + (f"; {hint}" if hint else ""))
            continue
        if device in origin:
            problems.append(f"{file}: a second table for {device} (the first is {origin[device]}): keep one")
            continue
        origin[device] = file
        try:
            found[device] = lldp_tables.parse(str(file), _read_discovery(file, "the LLDP table"))
        except lldp_tables.LldpError as exc:
            problems.append(str(exc))
    if problems:
        raise lldp_tables.LldpError("\n".join(problems))
    planned: dict[tuple[str, str], tuple[str, str, str]] = {}
    ids: dict[tuple[str, str], str] = {}
    where: dict[tuple[str, str], PortPlace] = {}
    for fl in lab_run.labs(compiled.topology, out_dir, fabric, 1):
        [ft] = [ft for ft in fabrics if ft.fabric.name == fl.lab.fabric]
        planned.update(lldp_tables.planned_ends(ft, fl.switches, compiled.topology.cables))
        ids.update(lldp_tables.port_ids(fl.switches))
        for (device, port), (rack, u, panel) in lldp_tables.places(
                (c for c in compiled.topology.cables if c.fabric == ft.fabric.name), fl.switches).items():
            where[(device, port)] = PortPlace(rack, u, device, panel)
    scope = lldp_tables.Scope(frozenset(elsewhere), frozenset(others), frozenset(lldp_tables.management_ports(fabrics)),
                              frozenset(e for ft in fabrics for e in lldp_tables.agentless(ft)))
    findings = list(lldp_tables.compare(planned, found, ids, only_present, scope))
    absent = lldp_tables.absent(planned, found)
    def place(device: str, port: str) -> dict[str, Any]:
        spot = where.get((device, port))
        return {"device": device, "port": port, "location": spot.as_json() if spot else None}

    def partners(f: lldp_tables.LldpFinding) -> str:
        return "".join(f"; {device}:{port} is planned for cable {label}"
                       + (f" ({where[(device, port)]})" if (device, port) in where else "")
                       for device, port, label in f.belongs)

    if as_json:
        sys.stdout.write(json.dumps({"devices": sorted(found), "devices_without_table": absent,
                                     "only_present": only_present, "findings": [
            {"kind": f.kind, "cable": f.label, "planned": f.planned, "found": f.found,
             "ends": [place(*end) for end in f.ends],
             "belongs": [{**place(device, port), "cable": label} for device, port, label in f.belongs]}
            for f in findings]}, indent=2) + "\n")
        return not findings
    if findings:
        table = Table(title="LLDP: differences from the plan")
        for column in ("kind", "cable", "planned", "at", "found"):
            table.add_column(column, overflow="fold")
        for f in findings:
            at = "; ".join(str(where[end]) for end in f.ends if end in where)
            table.add_row(f.kind, _safe(f.label or "-"), _safe(f.planned), _safe(at or "-"),
                          _safe(f.found + partners(f)))
        _print_table(table)
    if absent:
        judged = "not judged where dark (--only-present)" if only_present else "missing where dark"
        out.print(f"No table from {len(absent)} planned devices (their cables are judged from the other end, "
                  f"{judged}): {_safe(', '.join(absent))}.")
    ports = sum(len(n) for n in found.values())
    verdict = "the cabling matches the plan" if not findings else f"{len(findings)} differences"
    out.print(f"LLDP: {len(found)} devices, {ports} neighbours: {verdict}.")
    return not findings


def _ib_fabric(compiled: Compiled, name: str | None) -> FabricTopology:
    ib = [f for f in compiled.topology.fabrics if f.fabric.type is FabricType.INFINIBAND]
    names = ", ".join(f.fabric.name for f in ib)
    if name is not None:
        chosen = next((f for f in compiled.topology.fabrics if f.fabric.name == name), None)
        if chosen is None or chosen.fabric.type is not FabricType.INFINIBAND:
            what = "is not InfiniBand" if chosen else "is not in the spec"
            raise VerifyError(f"fabric {name!r} {what}; InfiniBand fabrics: {names or 'none'}")
        return chosen
    if not ib:
        raise VerifyError("the spec has no InfiniBand fabric to verify")
    if len(ib) > 1:
        raise VerifyError(f"the spec has several InfiniBand fabrics ({names}): choose one with --fabric")
    return ib[0]


MAX_DISCOVERY_BYTES = 512 * 1024 * 1024  # ibnetdiscover of a 64k-GPU fabric is ~100 MB


def _read_discovery(path: Path, what: str = "the ibnetdiscover output") -> str:
    """The saved discovery, from a file or stdin, read to a hard limit whatever the file is."""
    try:
        if str(path) == "-":
            data = sys.stdin.buffer.read(MAX_DISCOVERY_BYTES + 1)
            if len(data) > MAX_DISCOVERY_BYTES:
                raise TooLargeError(MAX_DISCOVERY_BYTES, None)
        else:
            data = read_bounded(path, MAX_DISCOVERY_BYTES)
    except TooLargeError as exc:
        raise VerifyError(exc.describe(f"{what} {path}")) from exc
    except OSError as exc:
        raise VerifyError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    return data.decode("utf-8", errors="replace")


@app.command(short_help="Print the spec's JSON Schema for editors.")
def schema() -> None:
    """Print the spec's JSON Schema (2020-12) as one self-contained document for editors and other tools."""
    from fabricgen.spec.editor_schema import editor_schema_text

    sys.stdout.write(editor_schema_text())


@app.command(short_help="Print the spec reference (Markdown).")
def docs() -> None:
    """Print the spec reference (Markdown, docs/reference.md) generated from the schema."""
    from fabricgen.spec.editor_schema import editor_schema, reference_markdown

    sys.stdout.write(reference_markdown(editor_schema()))


EDITOR_SCHEMA_BESIDE = "fabricgen.schema.json"  # the schema init writes beside a spec, which names it


def _presets() -> dict[str, Path]:
    return {p.stem: p for p in sorted(shipped_dir("inventories").glob("*.yaml"))}


def _preset_names(incomplete: str) -> list[str]:
    """Shell completion of --preset."""
    return [name for name in _presets() if name.startswith(incomplete)]


@app.command(short_help="Write a starter spec from a preset.")
def init(
    preset: Annotated[
        str,
        typer.Option("--preset", help=f"Starter spec to copy: {', '.join(_presets())}.", metavar="NAME",
                     autocompletion=_preset_names),
    ] = "lab-1su",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Spec file to write ('-' prints it) [default: <preset>.yaml].",
                     metavar="FILE", show_default=False),
    ] = None,
) -> None:
    """Write a starter spec from a preset, and beside it the editor schema its first line names
    (fabricgen.schema.json, unless one is there); refuse to overwrite an existing spec."""
    presets = _presets()
    if preset not in presets:
        guess = did_you_mean(preset, presets)
        err.print(f"[red]error:[/] unknown preset {_safe(repr(preset))}{_safe(' (' + guess + ')') if guess else ''}; "
                  f"presets: {_safe(', '.join(presets))}")
        _fail(EXIT_ERROR)
    text = presets[preset].read_text(encoding="utf-8").replace("../schemas/fabricgen.editor.json",
                                                               EDITOR_SCHEMA_BESIDE)
    if str(output) == "-":
        sys.stdout.write(text)
        return
    spec = output if output is not None else Path(f"{preset}.yaml")
    try:
        with spec.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        err.print(f"[red]error:[/] {_safe(str(spec))} exists; not overwriting it (-o names another file)")
        _fail(EXIT_ERROR)
    except OSError as exc:
        err.print(f"[red]error:[/] cannot write {_safe(str(spec))}: {_safe(exc.strerror or str(exc))}")
        _fail(EXIT_ERROR)
    schema_file = spec.parent / EDITOR_SCHEMA_BESIDE
    note = f"{schema_file} is there already (`fabricgen schema > {schema_file}` refreshes it)"
    if not schema_file.exists():
        from fabricgen.spec.editor_schema import editor_schema_text

        schema_file.write_text(editor_schema_text(), encoding="utf-8")
        note = f"wrote {schema_file} for editors (yaml-language-server, VS Code)"
    err.print(f"wrote {_safe(str(spec))}; {_safe(note)}; next: fabricgen plan {_safe(str(spec))}", soft_wrap=True)


lab_app = typer.Typer(no_args_is_help=True, help="Run the routed Ethernet fabrics in network namespaces (root).")
app.add_typer(lab_app, name="lab")
LabFabricOpt = Annotated[str | None, typer.Option("--fabric", help="Routed Ethernet fabric [default: all].")]
LabWaitOpt = Annotated[float, typer.Option("--wait", min=1, max=3600, metavar="SECONDS",
                                           help="How long to wait for every BGP session to come up.")]


def _lab(action: Any) -> None:
    """A lab command's errors: one report, exit 1, never a traceback (the lab writes nothing to OUT)."""
    try:
        action()
    except FabricgenError as exc:
        err.print(f"[bold red]error:[/] {_safe(str(exc))}", soft_wrap=True)
        _fail(EXIT_ERROR)
    except OSError as exc:
        err.print(f"[bold red]error:[/] {_safe(str(exc))}", soft_wrap=True)
        _fail(EXIT_ERROR)
    except KeyboardInterrupt:
        err.print("interrupted: `fabricgen lab down` removes what was made")
        _fail(EXIT_INTERRUPTED)


@lab_app.command("up")
def lab_up(
    spec: SpecArg,
    out_dir: OutOpt = None,
    fabric: LabFabricOpt = None,
    sample: Annotated[int, typer.Option("--sample", help="Hosts per leaf (storage servers always).")] = 1,
    wait: LabWaitOpt = 120,
) -> None:
    """Build each routed fabric in network namespaces from the artifacts in OUT: every switch (FRR from its
    configuration's read-back) and SAMPLE hosts per leaf (from their netplan). Again: unchanged, or rebuilt when
    OUT changed."""

    from fabricgen.features.lab import run as lab_run

    def action() -> None:
        compiled = _compile(spec)
        for fl in lab_run.labs(compiled.topology, _out_dir(compiled, out_dir), fabric, sample):
            out.print(f"fabric {_safe(fl.lab.fabric)}: {_safe(lab_run.up(fl, wait))}", soft_wrap=True)

    _lab(action)


@lab_app.command("check")
def lab_check(
    spec: SpecArg,
    out_dir: OutOpt = None,
    fabric: LabFabricOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable report on stdout.")] = False,
    wait: LabWaitOpt = 60,
) -> None:
    """Check each running lab: BGP sessions, each switch's routes and ECMP width, every sampled host reaching the
    others, the storage servers and its gateways at the planned MTU with DF set. Exit 0 only if all hold."""
    holder: dict[str, bool] = {"clean": False}

    from fabricgen.features.lab import run as lab_run

    def action() -> None:
        compiled = _compile(spec)
        sample = lab_run.recorded_sample(compiled.topology, fabric) or 1
        reports = [lab_run.run_check(fl, wait) for fl in
                   lab_run.labs(compiled.topology, _out_dir(compiled, out_dir), fabric, sample)]
        holder["clean"] = all(not r.failures for r in reports)
        if as_json:
            sys.stdout.write(json.dumps([{"fabric": r.fabric, "failures": list(r.failures), "notes": list(r.notes),
                                          "counts": dict(r.counts)} for r in reports], indent=2) + "\n")
            return
        for r in reports:
            for line in r.failures:
                out.print(f"[red]FAIL[/] {_safe(line)}", soft_wrap=True)
            for line in r.notes:
                out.print(f"[dim]note: {_safe(line)}[/]", soft_wrap=True)
            c = r.counts
            verdict = "[bold green]all hold[/]" if not r.failures else f"[bold red]{len(r.failures)} failures[/]"
            out.print(f"fabric {_safe(r.fabric)}: {c['switches']} switches, {c['sessions']} sessions, "
                      f"{c['routes']} routes, {c['hosts']} hosts ({c['addresses']} addresses): {verdict}")

    _lab(action)
    _fail(EXIT_OK if holder["clean"] else EXIT_ERROR)


@lab_app.command("lldp")
def lab_lldp(
    spec: SpecArg,
    to: Annotated[Path, typer.Option("--to", help="Directory for one <device>.json per lab device.",
                                     metavar="DIR")],
    out_dir: OutOpt = None,
    fabric: LabFabricOpt = None,
) -> None:
    """Save each running lab device's LLDP neighbours (`lldpctl -f json`, from the lldpd in its namespace) as
    DIR/<device>.json, for `fabricgen verify SPEC --lldp DIR`. One fabric (--fabric when the spec has several)."""

    from fabricgen.features.ethernet import lldp as lldp_tables
    from fabricgen.features.lab import run as lab_run

    def action() -> None:
        compiled = _compile(spec)
        if fabric is None and len(lab_run.routed_fabrics(compiled.topology, None)) > 1:
            raise LabError("the spec has several routed fabrics: choose one with --fabric (a host is in several, "
                           "and a directory holds one table per device)")
        sample = lab_run.recorded_sample(compiled.topology, fabric) or 1
        [fl] = lab_run.labs(compiled.topology, _out_dir(compiled, out_dir), fabric, sample)
        tables = lab_run.lldp_tables(fl)
        to.mkdir(parents=True, exist_ok=True)
        for device, text in sorted(tables.items()):
            (to / f"{device}.json").write_text(text, encoding="utf-8")
        neighbours = sum(len(lldp_tables.parse(device, text)) for device, text in tables.items())
        out.print(f"fabric {_safe(fl.lab.fabric)}: {len(tables)} LLDP tables, {neighbours} neighbours in "
                  f"{_safe(str(to))}; next: fabricgen verify {_safe(str(spec))} --lldp {_safe(str(to))}",
                  soft_wrap=True)

    _lab(action)


@lab_app.command("down")
def lab_down(spec: SpecArg, fabric: LabFabricOpt = None) -> None:
    """Remove each fabric's lab: the namespaces and FRR daemons its state file records, and nothing else."""

    from fabricgen.features.lab import run as lab_run

    def action() -> None:
        compiled = _compile(spec)
        for name, removed in lab_run.down(compiled.topology, fabric).items():
            out.print(f"fabric {_safe(name)}: " + (f"removed {len(removed)} namespaces" if removed else "no lab ran"))

    _lab(action)


netbox_app = typer.Typer(no_args_is_help=True, help="Put the cluster into a running NetBox (REST API).")
app.add_typer(netbox_app, name="netbox")
TOKEN_ENV = "NETBOX_TOKEN"


def _netbox_token(token_file: Path | None) -> str:
    """The API token from --token-file or $NETBOX_TOKEN; never printed, never an argument (ps would show it)."""
    from fabricgen.features.netbox.sync import token_value

    if token_file is not None:
        try:
            data = read_bounded(token_file, 4096)
        except TooLargeError as exc:
            raise OutputError(f"the token file {token_file} is over 4 KiB: not a token") from exc
        except OSError as exc:
            raise OutputError(f"cannot read the token file {token_file}: {exc.strerror or exc}") from exc
        return token_value(data.decode("utf-8", errors="replace"))
    if os.environ.get(TOKEN_ENV):
        return token_value(os.environ[TOKEN_ENV])
    raise OutputError(f"no NetBox token: give --token-file FILE or set {TOKEN_ENV}")


@netbox_app.command("sync", short_help="Make NetBox hold the cluster: create, update, delete by natural key.")
def netbox_sync_command(
    spec: SpecArg,
    url: Annotated[str, typer.Option("--url", help="NetBox's base URL (https://netbox.example.com).",
                                     show_default=False)],
    out_dir: Annotated[Path | None, typer.Option(
        "--out", "-o", metavar="OUT", help="Refuse unless OUT was applied from this very spec (so NetBox's labels "
        "are the printed sheets').")] = None,
    token_file: Annotated[Path | None, typer.Option(
        "--token-file", metavar="FILE", help=f"File holding the API token [default: ${TOKEN_ENV}].")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only read NetBox and count what a sync would change.")
                       ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable report on stdout.")] = False,
    detailed_exitcode: Annotated[bool, typer.Option(
        "--detailed-exitcode", help="With --dry-run: exit 2 when NetBox would change, 0 when it holds the plan.")
                                 ] = False,
) -> None:
    """Create, update and delete in NetBox what the spec changed, and nothing else: objects matched by natural
    key, written in bulk, every object fabricgen makes tagged 'fabricgen'; only tagged objects of the cluster's
    site are ever updated or deleted. A second sync of an unchanged spec writes nothing."""
    from fabricgen.features.netbox import sync as netbox_sync

    holder: dict[str, int] = {"changes": 0}

    def print_report(report: netbox_sync.Report) -> None:
        table = _table("NetBox: would change" if report.dry_run else "NetBox: changed", ("object", "create", "update",
                                                                                          "delete"), 1)
        for kind, c in report.counts.items():
            table.add_row(kind, str(c["create"]), str(c["update"]), str(c["delete"]))
        if report.counts:
            _print_table(table)
        requests = ", ".join(f"{n} {method}" for method, n in sorted(report.requests.items()))
        verdict = "no changes" if not report.changes else f"{report.changes} changes"
        done = "to make (dry run, nothing written)" if report.dry_run else "made"
        out.print(f"{verdict} {done}; {sum(report.requests.values())} requests ({requests}) in {report.seconds:.1f} s")
        if report.renamed:
            out.print(f"renamed in place (the same NetBox objects, their ids and data kept): "
                      f"{_safe(', '.join(report.renamed))}")
        if report.moved:
            out.print(f"moved in place (position cleared first where another device stood in the way): "
                      f"{_safe(', '.join(report.moved))}")
        if report.overruns:
            out.print(f"{sum(report.overruns.values())} batches NetBox did not answer in time, read back and sent "
                      f"again in halves ({', '.join(f'{n} {what}' for what, n in sorted(report.overruns.items()))}): "
                      "raise its gunicorn and proxy timeouts for loads this size (README \"NetBox sync\")")

    def action() -> None:
        token = _netbox_token(token_file)
        compiled = _compile(spec)
        if out_dir is not None:
            lock = read_lock(out_dir)
            if lock is None or lock.spec_digest != compiled.cluster.spec_digest:
                raise OutputError(f"{out_dir} was not applied from this spec (its lock file records another or "
                                  f"none): its sheets' labels would differ from NetBox's; run `fabricgen apply "
                                  f"{spec} -o {out_dir}` first")
        _progress.step(f"{'reading' if dry_run else 'syncing'} NetBox at {url}")
        report = netbox_sync.sync(compiled.topology, url, token, dry_run)
        _progress.stop()
        holder["changes"] = report.changes
        if as_json:
            sys.stdout.write(json.dumps({"dry_run": report.dry_run, "objects": report.counts,
                                         "requests": dict(report.requests), "overruns": dict(report.overruns),
                                         "renamed": report.renamed, "moved": report.moved,
                                         "seconds": round(report.seconds, 2)}, indent=2, sort_keys=True) + "\n")
            return
        print_report(report)

    _run(action, as_json)
    _fail(EXIT_CHANGES if detailed_exitcode and dry_run and holder["changes"] else EXIT_OK)


def _version_callback(value: bool) -> None:
    if value:
        out.print(f"fabricgen {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """fabricgen: one declarative AI-cluster spec in; every fabric artifact out."""


# Click's usage error (unknown option, missing argument, bad value), reached through the one subclass typer exports
# (typer >= 0.20 carries its own copy of click, whose classes the click package's are not).
_UsageError = cast(type[Exception], typer.BadParameter.__base__)


def main() -> None:
    """Run the command; a usage error exits 1 as every other error does (click's 2 would read as "changes
    pending" to a `plan --detailed-exitcode` in CI), and prints JSON under ``--json``."""
    try:
        code = app(standalone_mode=False)
    except _UsageError as exc:
        exc.show()  # type: ignore[attr-defined]  # click's usage line, "Try ... --help" and the error
        if "--json" in sys.argv[1:]:
            problem = {"severity": "error", "file": None, "line": None, "column": None, "path": "",
                       "message": exc.format_message(), "hint": ""}  # type: ignore[attr-defined]
            _print_json_error("usage", [problem], valid=None)
        code = EXIT_ERROR
    except typer.Abort:  # end of input at a confirmation prompt
        err.print("Aborted!")
        code = EXIT_ERROR
    sys.exit(code or EXIT_OK)
