"""One error vocabulary for every stage: spec issues with positions, findings, and the exit-code map."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar


def printable(text: str) -> str:
    """``text`` with every non-printable character (newline, escape, U+2028...) written as a Python escape: a file
    name or key from the spec must not start a line of its own in a report, or move the cursor of a terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


@dataclass(frozen=True, order=True)
class SourcePosition:
    """Where a YAML node starts: 1-based line and column in a named file; line 0 is the file as a whole (it could
    not be read)."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        if self.line == 0:
            return printable(self.file)
        return f"{printable(self.file)}:{self.line}:{self.column}"


@dataclass(frozen=True)
class SpecIssue:
    """One problem with the spec, printed as ``file:line:col: path: message (hint)``."""

    position: SourcePosition
    path: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = f"{self.position}: {self.path}: " if self.path else f"{self.position}: "
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{where}{self.message}{hint}"

    def sort_key(self) -> tuple[str, int, int, str, str]:
        p = self.position
        return (p.file, p.line, p.column, self.path, self.message)


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    """A result of a check over the compiled topology; errors stop the pipeline, warnings do not."""

    severity: Severity
    check: str
    subject: str
    message: str
    hint: str = ""
    position: SourcePosition | None = None

    def __str__(self) -> str:
        hint = f" (hint: {self.hint})" if self.hint else ""
        where = f"{self.position}: " if self.position else ""
        return f"{where}{self.severity.value}: [{self.check}] {self.subject}: {self.message}{hint}"


class FabricgenError(Exception):
    """Base class of every error fabricgen reports to its user; the CLI maps subclasses to exit codes.

    ``stage``: where the command stopped, for tools reading ``--json``; ``spec_at_fault``: whether the spec itself is
    wrong (invalid, failing its checks, or giving configurations that do not read back), as opposed to a valid spec
    whose command could not run (the output directory, a discovery file, a remote system)."""

    stage: ClassVar[str] = "command"
    spec_at_fault: ClassVar[bool] = False

    @property
    def outcome(self) -> str:
        """What the failed command left behind, the last line of its report."""
        return "nothing was written"


class SpecError(FabricgenError):
    """The spec is invalid; carries every issue found in one pass."""

    stage = "spec"
    spec_at_fault = True

    def __init__(self, issues: Iterable[SpecIssue]) -> None:
        self.issues = tuple(sorted(issues, key=SpecIssue.sort_key))
        super().__init__("\n".join(str(i) for i in self.issues))


class CheckError(FabricgenError):
    """Checks over the compiled topology found errors; carries all findings (warnings too)."""

    stage = "checks"
    spec_at_fault = True

    def __init__(self, findings: Iterable[Finding]) -> None:
        self.findings = tuple(findings)
        errors = [f for f in self.findings if f.severity is Severity.ERROR]
        super().__init__("\n".join(str(f) for f in errors))


class OutputError(FabricgenError):
    """The output directory cannot be planned or written (lock held, unmanaged file in the way, I/O)."""

    stage = "output"


class ConfigReadError(FabricgenError):
    """A rendered configuration artifact cannot be read back as its consumer reads it, or lacks what that consumer
    needs (a switch config without an ASN or a loopback): the device would not run as planned."""

    stage = "read-back"
    spec_at_fault = True


class VerifyError(FabricgenError):
    """The verification cannot run: no fabric to check, or the discovery cannot be read."""

    stage = "verify"

    @property
    def outcome(self) -> str:
        return "nothing was verified"  # verify never writes


class LabError(FabricgenError):
    """The lab could not build, check or remove the network namespaces it runs a fabric in."""

    stage = "lab"
