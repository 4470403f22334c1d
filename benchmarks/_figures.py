"""Where a benchmark's figures go, and its small mode.

Every benchmark parses its flags with :func:`parse`, which adds two:

- ``--small``: tiny sizes that run the real code path in seconds (``make test`` runs each
  script so, tests/test_benchmarks.py); a peer that is not installed is skipped with a
  printed reason. Its figures are written to ``--figures`` or a temporary file, never to
  the committed one;
- ``--figures FILE``: the figures file to update (default ``benchmarks/figures.json``).

and ends with :func:`record`, which updates the benchmark's entry in that file: its
figures (numbers, by name), the command, the date (UTC), the load average and the
machine. ``benchmarks/figures.json`` is committed; the table at the top of the
benchmarks page is generated from it (``docs/gen_reference.py``, checked by its
``--check``). An entry's key is the script's name plus the flags that change what is
measured (sizes, the peer compared) when they differ from the defaults, so a run at
another size adds an entry instead of overwriting the default one. The entry's fields a
person writes (``what``, ``goal``, ``shown``: how the page shows the figures) are kept.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
import tempfile
from pathlib import Path

FILE = Path(__file__).resolve().parent / "figures.json"
SMALL_FILE = Path(tempfile.gettempdir()) / "receval-bench-figures.json"


def parse(parser: argparse.ArgumentParser, argv: list[str] | None = None, *, small: dict,
          keys: tuple[str, ...] = ()) -> argparse.Namespace:
    """The benchmark's flags, with ``--small`` and ``--figures``. ``small`` gives the
    values ``--small`` sets (tiny sizes); ``keys`` the destinations that name the entry
    when they differ from their defaults."""
    parser.add_argument("--small", action="store_true",
                        help="tiny sizes, a few seconds: checks the code path runs; the figures go to --figures "
                        "or a temporary file, never to benchmarks/figures.json")
    parser.add_argument("--figures", type=Path, help="the figures file to update (default benchmarks/figures.json)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    script = Path(sys.argv[0]).name
    flags = [f"--{dest.replace('_', '-')} {getattr(args, dest)}" for dest in keys
             if getattr(args, dest) != parser.get_default(dest)]
    args.entry = " ".join([script, *flags])
    args.script = script
    args.command = " ".join(["python", f"benchmarks/{script}", *(shlex.quote(a) for a in argv)])
    if args.small:
        for dest, value in small.items():
            setattr(args, dest, value)
    return args


def record(args: argparse.Namespace, figures: dict[str, float | int], machine: str | None = None) -> Path:
    """Update the entry ``args.entry`` of the figures file with these figures; return the file."""
    path = args.figures or (SMALL_FILE if args.small else FILE)
    entries = json.loads(path.read_text()) if path.is_file() else {}
    entry = entries.setdefault(args.entry, {"script": args.script})
    entry.update(
        command=args.command,
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        load_average=round(os.getloadavg()[0], 1),
        machine=machine or this_machine(),
        figures={name: _rounded(value) for name, value in figures.items()},
    )
    text = json.dumps(entries, indent=1, ensure_ascii=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)  # whole or not at all
    print(f"figures: {args.entry!r} -> {path}")
    return path


def this_machine() -> str:
    """Cores, CPU model and memory, as the page names a machine."""
    model = platform.machine()  # not platform.processor(): it starts `uname -p`
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        memory = int(Path("/proc/meminfo").read_text().split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        return f"{os.cpu_count()}-core {model}"
    return f"{os.cpu_count()}-core {model}, {memory:.0f} GiB"


def skip(peer: str, why: str) -> None:
    """Say that small mode leaves a peer out, and why."""
    print(f"skipped the peer {peer}: {why}")


def installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _rounded(value):
    """Four significant digits: what a benchmark on a shared machine can claim."""
    if isinstance(value, bool) or isinstance(value, int):
        return int(value)
    return float(f"{float(value):.4g}")
