"""Hostile and odd input through the CLI: a file name built to inject a shell command, devices, pipes and huge
inputs as the spec, output that must print verbatim, secrets that must never print, a symlinked state directory.
The mutation fuzz over the schema and the example specs is tests/test_fuzz.py; hostile OUT trees are
tests/unit/outdir/test_hostile_tree.py; the bad specs themselves are tests/negative/."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from typer.testing import CliRunner

from fabricgen.cli import app
from fabricgen.pipeline import compile_spec, render_spec
from fabricgen.spec.load import MAX_NODES, MAX_SPEC_BYTES
from tests.conftest import INVENTORIES, REPO, require_tool

runner = CliRunner()
LAB = INVENTORIES / "lab-1su.yaml"
EXAMPLES = ["lab-1su", "h100-4su", "aws-p5-efa", "alicloud-erdma", "gcp-a3-tcpxo"]
# A file name as an attacker would write it: newlines, command substitution, quotes, a comment, XML's "--".
HOSTILE_NAME = "x\n$(touch PWNED1)\n`touch PWNED2`;touch PWNED3 #'\"\r\u2028--> <b>.yaml"


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    def timeout(_signum: int, _frame: FrameType | None) -> None:
        raise TimeoutError("fabricgen blocked on its input")

    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _text(path: str, content: bytes) -> str:
    """What an artifact says: a PDF's Flate streams and an XLSX's parts decompressed (their raw bytes are
    compressed, where any sequence, U+2028's UTF-8 bytes too, turns up by chance), other files as they are."""
    if path.endswith(".xlsx"):
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            return "".join(archive.read(name).decode("utf-8", errors="replace") for name in archive.namelist())
    if path.endswith(".pdf"):
        # each stream's own /Length bytes: a lazy match up to "\r?\nendstream" cut a stream ending in a CR byte
        streams = [content[m.end():m.end() + int(m[1])] for m in
                   re.finditer(rb"/Length (\d+) /Filter /FlateDecode >>\r?\nstream\r?\n", content)]
        return "".join(zlib.decompress(s).decode("latin-1") for s in streams)
    return content.decode("utf-8", errors="replace")


# -- the spec's file name reaches no artifact as it is ------------------------------------------------------------
@pytest.mark.parametrize("example", EXAMPLES)
def test_a_hostile_file_name_reaches_no_artifact(example: str, tmp_path: Path) -> None:
    spec = tmp_path / HOSTILE_NAME
    shutil.copy(INVENTORIES / f"{example}.yaml", spec)
    artifacts = render_spec(compile_spec(spec))
    # headers name the cluster, never the file (review D10): the bytes are those of the spec under its own name
    assert artifacts == render_spec(compile_spec(INVENTORIES / f"{example}.yaml"))
    for artifact in artifacts:
        assert b"PWNED" not in artifact.content, artifact.path
        text = _text(artifact.path, artifact.content)
        for fragment in ("$(touch", "`touch", ";touch", "\u2028", "--> <b>"):
            assert fragment not in text, f"{artifact.path} holds {fragment!r}"
        assert not re.search(r"^\s*touch PWNED", text, re.MULTILINE), artifact.path
    scripts = [a for a in artifacts if a.path.endswith(".sh") or a.path.endswith(".env")]
    for artifact in scripts:
        path = tmp_path / "scripts" / artifact.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(artifact.content)
        assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0, artifact.path
        if artifact.path.endswith(".env"):  # sourcing it (as the README says to) must run nothing
            subprocess.run(["bash", "-c", f"set -a; . '{path}'"], cwd=tmp_path, check=True, capture_output=True)
    assert not list(tmp_path.glob("PWNED*"))
    if shutil.which("shellcheck") or os.environ.get("FABRICGEN_REQUIRE_EXTERNAL") == "1":
        shellcheck = require_tool("shellcheck")
        shells = [str(tmp_path / "scripts" / a.path) for a in scripts if a.path.endswith(".sh")]
        done = subprocess.run([shellcheck, "-S", "style", *shells], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout


def test_a_hostile_file_name_prints_on_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "bad\nname\x1b[2J.yaml"
    spec.write_text((REPO / "tests/negative/count-zero.yaml").read_text())
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 1
    report = [line for line in result.stdout.splitlines() if "nodes[0].count" in line]
    assert len(report) == 1 and "bad\\nname\\x1b[2J.yaml:" in report[0], result.stdout
    assert "    12 |     count: 0" in result.stdout.splitlines()  # the source line below it, on its own line
    assert "\x1b" not in result.stdout


# -- devices, pipes, directories and huge inputs as the spec ---------------------------------------------------
def test_dev_zero_is_read_to_the_limit_only() -> None:
    result = runner.invoke(app, ["plan", "/dev/zero", "-o", "/nonexistent/out"])
    assert result.exit_code == 1
    assert f"/dev/zero: spec holds more than the {MAX_SPEC_BYTES} byte limit" in result.stderr


def test_a_pipe_nobody_writes_to_reads_as_empty(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    result = runner.invoke(app, ["validate", str(fifo)])
    assert result.exit_code == 1
    assert f"{fifo}:1:1: error: spec is empty; expected exactly one YAML document" in result.stdout


def test_a_pipe_with_a_writer_is_a_spec(tmp_path: Path) -> None:
    """As `fabricgen validate <(generate-spec)` gives it: the writer is there when fabricgen opens the pipe."""
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(LAB.read_bytes()))
    writer.start()
    fd = os.open(fifo, os.O_RDONLY)  # wait until the writer is in, then hand the pipe to fabricgen
    try:
        result = runner.invoke(app, ["validate", str(fifo)])
    finally:
        os.close(fd)
        writer.join()
    assert result.exit_code == 0, result.stdout


def test_a_directory_is_no_spec(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 1
    assert f"{tmp_path}: error: cannot read spec: Is a directory" in result.stdout


def test_a_list_of_millions_is_refused_before_it_is_built(tmp_path: Path) -> None:
    """8M one-digit entries fit in 16 MiB; they are counted on the parser's events and refused at MAX_NODES (it
    took 70 s and 5 GB to build them and say "unknown key"; bench/adversarial.py measures the time now)."""
    spec = tmp_path / "big.yaml"
    spec.write_bytes(LAB.read_bytes() + b"huge: [" + b"1," * 8_000_000 + b"1]\n")
    assert spec.stat().st_size <= MAX_SPEC_BYTES
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 1
    line = LAB.read_bytes().count(b"\n") + 1
    expected = rf"big\.yaml:{line}:[0-9]+: error: the file holds more than {MAX_NODES} YAML values"
    assert re.search(expected, result.stdout)


def test_a_huge_free_text_is_refused_without_being_echoed(tmp_path: Path) -> None:
    """One 15 MB vendor string multiplied through the outputs (3 GB RSS, a 720 MB CSV); now it is refused."""
    spec = tmp_path / "vendor.yaml"
    text = LAB.read_text().replace("    switch: SN4700\n", "    switch: LAB-SW\n", 1)
    catalog = ("catalog:\n  switches:\n    LAB-SW:\n      vendor: " + "N" * 15_000_000 +
               "\n      fabric_type: ethernet\n      height_u: 1\n      port_groups:\n"
               "        - {name: main, cages: 32, form_factor: QSFP-DD, ports_per_cage: {200G: 2}}\nfacility:\n")
    spec.write_text(text.replace("facility:\n", catalog, 1))
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 1
    assert "catalog.switches.LAB-SW.vendor: '" + "N" * 36 + "... is not a valid name" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) < 1000


# -- reports print verbatim and never hold a secret ----------------------------------------------------------
def _line_100_spec(tmp_path: Path) -> Path:
    """lab-1su padded with comments so that a bad value sits on line 100, with markup and emoji codes in it."""
    lines = LAB.read_text().splitlines()
    index = lines.index("  site: lab")
    lines[index] = "  site: ':100:[bold red]x'"
    padded = lines[:index] + ["# padding"] * (99 - index) + lines[index:]
    spec = tmp_path / "spec.yaml"
    spec.write_text("\n".join(padded) + "\n")
    return spec


@pytest.mark.parametrize("command", [["validate"], ["plan"], ["apply", "--yes"], ["explain"]])
def test_positions_and_values_print_verbatim(command: list[str], tmp_path: Path) -> None:
    spec = _line_100_spec(tmp_path)
    result = runner.invoke(app, [*command, str(spec), *(["-o", str(tmp_path / "out")] if "validate" not in command
                                                          and "explain" not in command else [])])
    assert result.exit_code == 1
    output = result.stdout + result.stderr
    assert f"{spec}:100:9: " in output and "metadata.site: ':100:[bold red]x' is not a valid name" in output, output
    assert "\U0001f4af" not in output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("form", ["json", "github"])
def test_machine_formats_print_verbatim(form: str, tmp_path: Path) -> None:
    spec = _line_100_spec(tmp_path)
    result = runner.invoke(app, ["validate", "--format", form, str(spec)])
    assert result.exit_code == 1
    if form == "json":
        problem = json.loads(result.stdout)[0]["problems"][0]
        assert (problem["line"], problem["message"]) == (100, "':100:[bold red]x' is not a valid name here")
    else:
        assert result.stdout.startswith(f"::error file={str(spec).replace(':', '%3A')},line=100,col=9,")
        assert "':100:[bold red]x'" in result.stdout


@pytest.mark.parametrize("form", ["text", "json", "github"])
@pytest.mark.parametrize("case", ["secret-in-clear-forms", "secret-in-clear-tagged", "secret-in-clear-tag-literal"])
def test_a_secret_in_the_spec_is_never_printed(case: str, form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    result = runner.invoke(app, ["validate", "--format", form, f"tests/negative/{case}.yaml"])
    assert result.exit_code == 1
    output = result.stdout + result.stderr
    assert "<redacted>" in output
    for secret in ("5ec1e7", "6827992497256447727", "6827992497256447726"):  # hex, and the decimal YAML reads
        assert secret not in output.lower(), output


# -- OUT ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["plan"], ["apply", "--yes"]])
def test_a_symlinked_state_dir_stops_plan_and_apply(command: list[str], tmp_path: Path) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir()
    (outside / "staging-x").mkdir(parents=True)
    (outside / "staging-x" / "file").write_text("someone else's")
    (out / ".fabricgen").symlink_to(outside)
    result = runner.invoke(app, [*command, str(LAB), "-o", str(out)])
    assert result.exit_code == 1
    assert ".fabricgen is a symlink" in result.stderr and "nothing was written" in result.stderr
    assert sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*")) == ["staging-x", "staging-x/file"]
    assert [p.name for p in out.iterdir()] == [".fabricgen"]
