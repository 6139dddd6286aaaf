"""How long LibreOffice Calc takes to open each cabling workbook of a 16,384-GPU cluster (issue 19: "the 16k
workbook split so each file opens in seconds").

Each workbook is opened by its own LibreOffice process with a fresh profile, one after another, so every figure is
one file's whole open: loaded and its first sheet saved as CSV (`soffice --headless --convert-to csv`; Calc loads
every sheet of the file to do it). With ``--print`` each is also printed to PDF (every page laid out), which for a
network row's workbook of thousands of pages takes minutes. LibreOffice's own start-up on an empty file is timed
first and reported beside them.

    PYTHONPATH=cli .venv/bin/python bench/libreoffice_open.py [--gpus 16384] [--print]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import spec_text  # bench/bench.py (this directory is on sys.path when run as a script)

from fabricgen.pipeline import compile_spec, render_spec


def _open(soffice: str, book: Path, work: Path, to: str = "csv") -> float:
    """Seconds for one LibreOffice process to open ``book`` and convert it (``csv``: open only; ``pdf``: print)."""
    profile = Path(tempfile.mkdtemp(dir=work))
    start = time.perf_counter()
    subprocess.run([soffice, f"-env:UserInstallation={profile.as_uri()}", "--headless", "--convert-to", to,
                    "--outdir", str(work / to), str(book)], check=True, capture_output=True, timeout=3600)
    took = time.perf_counter() - start
    shutil.rmtree(profile)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=16384)
    parser.add_argument("--print", action="store_true", help="also print every workbook to PDF (minutes)")
    args = parser.parse_args()
    gpus = args.gpus
    soffice = shutil.which("soffice")
    if soffice is None:
        print("LibreOffice (soffice) is not installed: skipping the workbook open measurement (Debian:"
              " libreoffice-calc-nogui, fonts-crosextra-carlito)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spec = work / "bench.yaml"
        spec.write_text(spec_text(gpus))
        books = {a.path: a.content for a in render_spec(compile_spec(spec), ("workbook",))}
        for path, content in books.items():
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_bytes(content)
        empty = work / "empty.csv"
        empty.write_text("a\n")
        start_up = _open(soffice, empty, work)
        load = os.getloadavg()[0]
        opened = {path: _open(soffice, work / path, work) for path in sorted(books)}
        printed = {path: _open(soffice, work / path, work, "pdf") for path in sorted(books)} if args.print else {}
        print(f"{gpus:,} GPUs: {len(books)} workbooks, {sum(map(len, books.values())) / 1e6:.1f} MB; LibreOffice"
              f" start-up alone {start_up:.1f} s; load {load:.1f} at start, {os.getloadavg()[0]:.1f} at end")
        for path, took in sorted(opened.items(), key=lambda kv: -kv[1])[:5]:
            also = f", printed in {printed[path]:.1f} s" if printed else ""
            print(f"  {path}: {len(books[path]) / 1e6:.2f} MB opened in {took:.1f} s{also}")
        print(f"  opened: median {statistics.median(opened.values()):.1f} s, slowest {max(opened.values()):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
