"""The command line: the only module that reads argv, prints to the console and chooses exit codes.

Each command is a thin shell over the pipeline, the output directory or its feature's command module (verify:
:mod:`fabricgen.features.infiniband.verify`, explain: :mod:`fabricgen.features.topology.explain`, apply --cloud:
:mod:`fabricgen.features.cloud.deploy`). Its ~560 lines are the seven commands and the printers of their reports,
kept in one module because only this module may touch the console.

Exit codes: 0 success (plan: no changes), 1 invalid spec / failed checks / output error, 2 changes pending
(plan --detailed-exitcode; apply --cloud without a pulumi CLI: files written, deployment pending), 130 interrupted.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fabricgen import __version__
from fabricgen.core.errors import (
    CheckError,
    FabricgenError,
    Finding,
    OutputError,
    Severity,
    SpecError,
    SpecIssue,
    printable,
)
from fabricgen.core.files import TooLargeError, read_bounded
from fabricgen.core.resources import shipped_dir
from fabricgen.features.cloud import deploy
from fabricgen.features.infiniband.discovery import parse_ibnetdiscover
from fabricgen.features.infiniband.verify import IbSpeed, VerifyError, compare, planned_rates, report_to_json
from fabricgen.features.infiniband.verify import Report as VerifyReport
from fabricgen.features.infiniband.view import ib_fabric
from fabricgen.features.topology.explain import cluster_summary
from fabricgen.model.cluster import FabricType
from fabricgen.model.topology import FabricTopology
from fabricgen.outdir.apply import apply_plan
from fabricgen.outdir.plan import Action, Plan, compute_plan, plan_to_json
from fabricgen.pipeline import Compiled, compile_spec, render_spec
from fabricgen.spec.editor_schema import editor_schema, editor_schema_text, reference_markdown

EXIT_OK, EXIT_ERROR, EXIT_CHANGES, EXIT_INTERRUPTED = 0, 1, 2, 130

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Turn one AI-cluster spec into every artifact its fabric needs.",
)
# Every text from a spec or the disk is printed verbatim: markup in it is escaped, and emoji codes stay text (with
# emoji on, an error at line 100 printed as "spec.yaml💯5:" and a value ":pile_of_poo:" as a pile of poo).
out = Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, emoji=False)


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"
    GITHUB = "github"


SpecArg = Annotated[Path, typer.Argument(help="Cluster spec (YAML).", show_default=False)]
OutOpt = Annotated[
    Path | None, typer.Option("--out", "-o", help="Output directory [default: out/<cluster name>].")
]


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
        "line": p.line,
        "column": p.column,
        "path": issue.path,
        "message": issue.message,
        "hint": issue.hint,
    }


def _finding_dict(finding: Finding) -> dict[str, Any]:
    p = finding.position
    return {
        "severity": finding.severity.value,
        "file": p.file if p else None,
        "line": p.line if p else None,
        "column": p.column if p else None,
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


def _print_error(exc: FabricgenError) -> None:
    if isinstance(exc, SpecError):
        err.print(
            f"[bold red]error:[/] the spec has {len(exc.issues)} problem{'s' if len(exc.issues) > 1 else ''}"
        )
        for issue in exc.issues:
            err.print(f"  {_safe(str(issue))}", soft_wrap=True)
    elif isinstance(exc, CheckError):
        errors = [f for f in exc.findings if f.severity is Severity.ERROR]
        err.print(f"[bold red]error:[/] {len(errors)} check{'s' if len(errors) > 1 else ''} failed")
        for finding in exc.findings:
            err.print(f"  {_safe(str(finding))}", soft_wrap=True)
    else:
        err.print(f"[bold red]error:[/] {_safe(str(exc))}", soft_wrap=True)
    if isinstance(exc, deploy.DeployError) and exc.after_apply:
        err.print("the artifacts were written; the cloud deployment did not finish")
        return
    err.print("nothing was written")


def _print_warnings(compiled: Compiled) -> None:
    for finding in compiled.warnings:
        err.print(f"[yellow]{_safe(str(finding))}[/]", soft_wrap=True)


def _compile(spec: Path) -> Compiled:
    """Run the pipeline up to checks; show a spinner only on a terminal (large specs take a moment)."""
    if err.is_terminal:
        with err.status(f"compiling {_safe(str(spec))}", spinner="dots"):
            return compile_spec(spec)
    return compile_spec(spec)


def _out_dir(compiled: Compiled, out_opt: Path | None) -> Path:
    return out_opt if out_opt is not None else Path("out") / compiled.cluster.metadata.name


def _plan(spec: Path, out_opt: Path | None) -> tuple[Compiled, Plan]:
    compiled = _compile(spec)
    artifacts = render_spec(compiled)
    plan = compute_plan(
        artifacts,
        _out_dir(compiled, out_opt),
        spec_digest=compiled.cluster.spec_digest,
        tool_version=__version__,
    )
    return compiled, plan


_STYLE = {Action.CREATE: ("+", "green"), Action.UPDATE: ("~", "yellow"), Action.DELETE: ("-", "red")}


def _print_plan(plan: Plan) -> None:
    for change in plan.changes:
        if change.action is Action.UNCHANGED:
            continue
        sign, colour = _STYLE[change.action]
        notes = [change.reason] if change.reason else []
        note = f"  [dim]({_safe('; '.join(notes))})[/]" if notes else ""
        out.print(f"[{colour}]{sign} {_safe(change.path)}[/]{note}", soft_wrap=True)
    c = plan.counts
    summary = (
        f"Plan for {plan.out_dir}: {c['create']} to create, {c['update']} to update, {c['delete']} to delete, "
        f"{c['unchanged']} unchanged."
    )
    if not plan.has_changes:
        summary += " No changes." + (" The lock file will be refreshed." if plan.lock_changed else "")
    out.print(f"[bold]{_safe(summary)}[/]", soft_wrap=True)
    if plan.unmanaged:
        out.print(
            f"[red]{len(plan.unmanaged)} path(s) hold files fabricgen did not create; apply needs --force "
            "to replace them[/]"
        )


def _run(action: Any) -> None:
    """Map fabricgen errors to exit code 1 with one clear report; Ctrl-C to 130."""
    try:
        action()
    except FabricgenError as exc:
        _print_error(exc)
        _fail(EXIT_ERROR)
    except KeyboardInterrupt:
        err.print("interrupted")
        _fail(EXIT_INTERRUPTED)


# -- commands --------------------------------------------------------------------------------------------------
@app.command()
def validate(
    specs: Annotated[list[Path], typer.Argument(help="Spec files.", show_default=False)],
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="text, json or github.")
    ] = OutputFormat.TEXT,
) -> None:
    """Validate specs (schema, semantics, topology checks). Exit 0 when all are valid, 1 otherwise."""
    results: list[dict[str, Any]] = []
    for spec in specs:
        try:
            compiled = compile_spec(spec)
            problems = [_finding_dict(f) for f in compiled.warnings]
            results.append({"file": str(spec), "valid": True, "problems": problems})
        except FabricgenError as exc:
            results.append({"file": str(spec), "valid": False, "problems": _problems(exc)})
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
                where = f"{p['file']}:{p['line']}:{p['column']}: " if p["file"] else ""
                hint = f" (hint: {p['hint']})" if p["hint"] else ""
                out.print(
                    f"  {_safe(where + p['severity'] + ': ' + p['path'] + ': ' + p['message'] + hint)}",
                    soft_wrap=True,
                )
    _fail(EXIT_OK if all(r["valid"] for r in results) else EXIT_ERROR)


@app.command()
def plan(
    spec: SpecArg,
    out_dir: OutOpt = None,
    detailed_exitcode: Annotated[
        bool, typer.Option("--detailed-exitcode", help="Exit 0 no changes, 2 changes, 1 error.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable plan on stdout.")] = False,
) -> None:
    """Show what apply would create (+), update (~) and delete (-) in the output directory."""
    holder: dict[str, Plan] = {}

    def action() -> None:
        compiled, holder["plan"] = _plan(spec, out_dir)
        if as_json:
            data = plan_to_json(holder["plan"])
            data["warnings"] = [_finding_dict(f) for f in compiled.warnings]
            sys.stdout.write(json.dumps(data, indent=2) + "\n")
        else:
            _print_warnings(compiled)
            _print_plan(holder["plan"])

    _run(action)
    _fail(EXIT_CHANGES if detailed_exitcode and holder["plan"].needs_apply else EXIT_OK)


@app.command()
def apply(
    spec: SpecArg,
    out_dir: OutOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Apply without asking.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace files fabricgen did not create.")] = False,
    cloud: Annotated[bool, typer.Option("--cloud", help="Then run `pulumi up` on the cloud cluster's project "
                                                        "(exit 2 with the commands to run when pulumi is missing).")
                     ] = False,
) -> None:
    """Write the changed artifacts atomically; a second apply with the same spec changes nothing."""
    holder: dict[str, int] = {"code": EXIT_OK}

    def action() -> None:
        compiled, current = _plan(spec, out_dir)
        target = deploy.project(compiled.cluster, current.out_dir) if cloud else None
        _print_warnings(compiled)
        _print_plan(current)
        if _write(current, yes, force) and target is not None:
            holder["code"] = _deploy(target)

    _run(action)
    _fail(holder["code"])


def _write(current: Plan, yes: bool, force: bool) -> bool:
    """Apply the plan after confirmation; False when the user declined."""
    if not current.needs_apply:
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
        if not typer.confirm("Apply these changes?", default=False):
            err.print("apply cancelled; nothing was written")
            return False
    result = apply_plan(current, force=force)
    out.print(
        f"[bold green]Applied:[/] {len(result.written)} written, {len(result.deleted)} deleted in "
        f"{_safe(str(result.plan.out_dir))}"
    )
    return True


def _deploy(target: deploy.Project) -> int:
    """pulumi up through the Automation API, or the exact commands when the pulumi CLI is missing (exit 2)."""
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


@app.command()
def explain(
    spec: SpecArg,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable summary on stdout.")] = False,
) -> None:
    """Summarise the compiled cluster: counts per tier, bandwidth, oversubscription and the switch BOM."""

    def action() -> None:
        compiled = _compile(spec)
        summary = cluster_summary(compiled.topology)
        if as_json:
            sys.stdout.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")
            return
        _print_warnings(compiled)
        _print_summary(summary)

    _run(action)


def _print_summary(s: dict[str, Any]) -> None:
    out.print(
        f"[bold]{_safe(s['cluster'])}[/] at {_safe(s['site'])}: {s['nodes']} nodes, {s['gpus']} GPUs in "
        f"{s['racks_used']} racks; {s['switch_total']} switches, {s['link_total']} links"
    )
    if "cloud" in s:
        c = s["cloud"]
        out.print(f"{_safe(c['provider'])} {_safe(c['zone'])}: {s['nodes']} x {_safe(c['instance_type'])}, "
                  f"{c['interfaces']} {_safe(c['interface_kind'])} interfaces each")
        return
    table = Table(title="Fabrics", show_lines=False)
    for column in (
        "fabric",
        "kind",
        "speed",
        "tiers",
        "host ports",
        "leaf",
        "spine",
        "core",
        "node-leaf",
        "leaf-spine",
        "spine-core",
        "bisection",
        "oversub.",
    ):
        table.add_column(column, justify="left" if column in ("fabric", "kind", "speed") else "right")
    for f in s["fabrics"]:
        table.add_row(
            _safe(f["name"]),
            f["kind"],
            f["speed"] + ("" if f["uplink_speed"] == f["speed"] else f"/{f['uplink_speed']}"),
            str(f["tiers"]),
            str(f["host_ports"]),
            *(str(f["switches"].get(t, "")) for t in ("leaf", "spine", "core")),
            *(str(f["links"].get(t, "")) for t in ("node-leaf", "leaf-spine", "spine-core")),
            f"{f['bisection_gbps'] / 1000:g} Tb/s",
            f"{f['oversubscription']:.2f}:1",
        )
    out.print(table)
    bom = Table(title="Switches")
    bom.add_column("model")
    bom.add_column("count", justify="right")
    for model, count in s["switch_bom"].items():
        bom.add_row(_safe(model), str(count))
    out.print(bom)


@app.command()
def verify(
    spec: SpecArg,
    ibnetdiscover: Annotated[
        Path,
        typer.Option(
            "--ibnetdiscover",
            help="Saved output of `ibnetdiscover` or `ibnetdiscover -p` ('-' reads stdin).",
            show_default=False,
        ),
    ],
    fabric: Annotated[
        str | None, typer.Option("--fabric", help="InfiniBand fabric to check (needed when the spec has several).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable report on stdout.")] = False,
    speed_as: Annotated[
        IbSpeed | None,
        typer.Option(
            "--speed-as",
            case_sensitive=False,
            help="Expect this lane speed instead of the planned one (width unchanged). For simulators: ibsim 0.10 "
            "knows speeds up to HDR only (net file at 4xHDR: --speed-as HDR; it brings a 4xNDR port line up at "
            "4xSDR: --speed-as SDR).",
        ),
    ] = None,
) -> None:
    """Compare a discovered InfiniBand fabric with the plan: missing, unexpected and miswired links by cable label
    and port, devices whose NodeDescription or GUID differ, links at the wrong width or speed. Exit 0 only when
    the fabric matches the plan, 1 on any mismatch or error."""
    holder: dict[str, VerifyReport] = {}

    def action() -> None:
        compiled = _compile(spec)
        ft = _ib_fabric(compiled, fabric)
        text = _read_discovery(ibnetdiscover)
        found = parse_ibnetdiscover(text)
        rates = planned_rates(ft.fabric, speed_as.value if speed_as else None)
        width, speed = rates[ft.fabric.speed.name]
        report = holder["report"] = compare(ib_fabric(compiled.topology, ft), found, width, speed, rates=rates)
        if as_json:
            data = report_to_json(report)
            data = {"spec": str(spec), "ibnetdiscover": str(ibnetdiscover), "form": found.form,
                    "expected_rate": f"{width}{speed}", **data}
            sys.stdout.write(json.dumps(data, indent=2) + "\n")
        else:
            _print_warnings(compiled)
            _print_verify(report, f"{width}{speed}")

    _run(action)
    _fail(EXIT_OK if holder["report"].clean else EXIT_ERROR)


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


def _read_discovery(path: Path) -> str:
    """The saved discovery, from a file or stdin, read to a hard limit whatever the file is."""
    try:
        if str(path) == "-":
            data = sys.stdin.buffer.read(MAX_DISCOVERY_BYTES + 1)
            if len(data) > MAX_DISCOVERY_BYTES:
                raise TooLargeError(MAX_DISCOVERY_BYTES, None)
        else:
            data = read_bounded(path, MAX_DISCOVERY_BYTES)
    except TooLargeError as exc:
        raise VerifyError(exc.describe(f"the ibnetdiscover output {path}")) from exc
    except OSError as exc:
        raise VerifyError(f"cannot read the ibnetdiscover output {path}: {exc.strerror or exc}") from exc
    return data.decode("utf-8", errors="replace")


def _print_verify(report: VerifyReport, rate: str) -> None:
    if report.findings:
        table = Table(title=f"Fabric {report.fabric}: differences from the plan")
        for column in ("kind", "cable", "planned", "found"):
            table.add_column(column, overflow="fold")
        for f in report.findings:
            table.add_row(f.kind.value, _safe(f.label or f.cable or "-"), _safe(f.planned_text), _safe(f.found_text))
        out.print(table)
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


@app.command()
def schema() -> None:
    """Print the spec's JSON Schema (2020-12) as one self-contained document for editors and other tools."""
    sys.stdout.write(editor_schema_text())


@app.command()
def docs() -> None:
    """Print the spec reference (Markdown, docs/reference.md) generated from the schema."""
    sys.stdout.write(reference_markdown(editor_schema()))


def _presets() -> dict[str, Path]:
    return {p.stem: p for p in sorted(shipped_dir("inventories").glob("*.yaml"))}


@app.command()
def init(
    preset: Annotated[str, typer.Option("--preset", help="Starter spec to copy.")] = "lab-1su",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Print a starter spec from a preset (see --preset); refuse to overwrite an existing file."""
    presets = _presets()
    if preset not in presets:
        err.print(f"[red]error:[/] unknown preset {_safe(repr(preset))}; presets: {_safe(', '.join(presets))}")
        _fail(EXIT_ERROR)
    text = presets[preset].read_text(encoding="utf-8")
    if output is None:
        sys.stdout.write(text)
        return
    if output.exists():
        err.print(f"[red]error:[/] {_safe(str(output))} exists; not overwriting it")
        _fail(EXIT_ERROR)
    output.write_text(
        text.replace("../schemas/fabricgen.editor.json", "fabricgen.schema.json"), encoding="utf-8"
    )
    err.print(
        f"wrote {_safe(str(output))}; `fabricgen schema > fabricgen.schema.json` gives editors the schema"
    )


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


def main() -> None:
    app()
