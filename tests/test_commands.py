"""The one command, ``receval`` (:mod:`receval.cli.main`): its registry reaches every
command, ``receval --help`` lists them, each ``receval COMMAND --help`` works, and a
first word that is no command's name runs a configuration."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib

import pytest
from conftest import ROOT, run_cli

from receval.cli import main as cli_main

#: the commands issue 39 names, reached by ``receval NAME``
NAMED = ["run", "report", "compare", "reproduce", "select", "list", "pool", "judge", "synth", "sql", "export"]
HYDRA = {"run", "judge", "synth"}  # main() reads sys.argv; the others take argv


def test_help_lists_every_command_with_its_line(capsys):
    assert cli_main.main(["--help"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.split("commands:\n")[1].split("\n\n")[0].splitlines()]
    assert listed == list(cli_main.available())
    assert set(NAMED) <= set(listed)
    for name in listed:
        assert f"  {name.ljust(max(map(len, listed)))}  {cli_main.COMMANDS[name].summary}\n" in out


def test_a_command_whose_module_is_absent_is_not_listed(monkeypatch):
    monkeypatch.setitem(cli_main.COMMANDS, "nothing", cli_main.Command("receval.cli.no_such_module", "x"))
    assert "nothing" not in cli_main.available()
    assert cli_main.split(["nothing", "a=1"]) == ("run", ["nothing", "a=1"])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["retriever=bm25,tfidf", "-m"], ("run", ["retriever=bm25,tfidf", "-m"])),
        ([], ("run", [])),
        (["-m", "retriever=bm25"], ("run", ["-m", "retriever=bm25"])),
        (["run", "retriever=bm25"], ("run", ["retriever=bm25"])),
        (["report", "runs/x", "--format", "json"], ("report", ["runs/x", "--format", "json"])),
        (["judge", "pool=p.jsonl"], ("judge", ["pool=p.jsonl"])),
    ],
)
def test_the_first_word_names_the_command_else_it_is_a_run(argv, expected):
    assert cli_main.split(argv) == expected


def test_every_command_module_has_a_main_and_no_shim_is_left():
    for name, command in cli_main.available().items():
        assert importlib.util.find_spec(command.module) is not None, name
    for name in ["compare", "export", "list", "pool", "report", "reproduce", "select", "sql"]:
        assert importlib.util.find_spec(f"receval.{name}") is None, f"receval/{name}.py is back"


def test_the_console_script_is_the_registry_entry():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    module, function = project["scripts"]["receval"].split(":")
    assert (module, function) == ("receval.cli.main", "entry")


@pytest.mark.slow  # the first import of report or sql costs seconds
@pytest.mark.parametrize("name", [n for n in NAMED if n not in HYDRA])
def test_each_argparse_command_help_exits_0_under_its_name(name, capsys):
    with pytest.raises(SystemExit) as stop:
        cli_main.main([name, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: receval {name} ")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HYDRA | {"traces"}))
def test_each_hydra_command_help_exits_0(name, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["receval"])
    with pytest.raises(SystemExit) as stop:
        cli_main.main([name, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert f"receval {name}" in out if name != "run" else "receval retriever=bm25,tfidf" in out
    assert "== Config groups" in out or "Config groups" in out
    if name == "traces":  # what it is: an import of spans, whose calls report --show prints
        assert "import OpenInference retriever spans" in out and "--show" in out


def test_traces_is_described_as_what_it_does():
    summary = cli_main.COMMANDS["traces"].summary
    assert "OpenInference" in summary and "stored run" in summary and "agentic" not in summary


@pytest.mark.slow
def test_python_dash_m_receval_reaches_the_same_commands(tmp_path):
    listed = run_cli("--help", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert all(f"\n  {name} " in listed.stdout for name in NAMED)
    help_of_list = run_cli("--help", cwd=tmp_path, command="list")
    assert help_of_list.returncode == 0 and help_of_list.stdout.startswith("usage: receval list ")
    bad = run_cli("--no-such-flag", cwd=tmp_path, command="list")
    assert bad.returncode == 2 and "receval: error: receval list:" in bad.stderr and "Traceback" not in bad.stderr


def test_no_file_names_a_removed_entry_point():
    """``receval report`` and its kin are gone: code, configs, tests and docs say
    ``receval report`` (a branch merged later may bring an old spelling back)."""
    commands = "compare|export|list|pool|report|reproduce|select|sql"
    old = re.compile(rf"receval\.({commands})\b|\"-m\", \"receval\.({commands})\"")
    found = []
    for path in [ROOT / "README.md", ROOT / "Makefile", *ROOT.glob("docs/**/*.md")] + [
        p for folder in ("receval", "conf", "tests", "benchmarks") for p in (ROOT / folder).rglob("*")
        if p.suffix in (".py", ".yaml", ".md")
    ]:
        if path.is_file() and path.name != "test_commands.py":
            found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in old.finditer(path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)
