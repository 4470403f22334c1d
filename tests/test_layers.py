"""The two sides hold: each side's packages say who may import them (allow-lists: the
run side is imported only by the run side and the command line; stats, analysis and
render only by the read side and the command line; results by both sides' writers and
readers; scoring and clients by everything but core), the read side flows one way (cli ->
render -> analysis -> stats | results -> clients | scoring -> core) and imports neither
Hydra nor OmegaConf, stats no YAML either; every top-level package takes exactly one
side; and no two modules import each other in a circle (function-level imports and
package ``__init__`` re-exports included).

The contracts are in pyproject.toml ([tool.importlinter]); this runs them through
import-linter's Python API (no subprocess) on the graph grimp builds."""

from __future__ import annotations

import sys
from pathlib import Path

import grimp
import importlinter.api  # noqa: F401 - configures import-linter's adapters
from importlinter.application import use_cases

import receval

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"


def test_the_import_contracts_are_kept(capsys):
    options = use_cases.read_user_options(str(PYPROJECT))
    assert {c["id"] for c in options.contracts_options} == {
        "run-side", "read-side", "results", "shell", "base", "read-flow", "read-not-hydra", "stats-plain",
        "scoring-plain",
    }
    kept = use_cases.lint_imports(str(PYPROJECT), cache_dir=None, no_logo=True, is_debug_mode=True)
    printed = capsys.readouterr().out  # each broken contract with its import chains
    assert kept, printed
    assert "9 kept, 0 broken" in printed


def test_every_top_level_package_takes_one_side():
    """The allow-lists cover a package added later only once it is named: every top-level
    package or module of receval is protected by exactly one side's contract, but for core
    (which everything may import, and which imports only itself: no contract allows it to
    import anything else) and the package's own ``__init__``/``__main__``; and receval/ holds
    at most three modules of its own (the run side's modules live in receval/run/)."""
    options = {c["id"]: c for c in use_cases.read_user_options(str(PYPROJECT)).contracts_options}
    protected = [m for id_ in ("run-side", "read-side", "results", "shell", "base")
                 for m in options[id_]["protected_modules"]]
    assert len(protected) == len(set(protected))
    root = Path(receval.__file__).parent
    top = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert {m.removeprefix("receval.") for m in protected} == top - {"core"}
    modules = sorted(p.name for p in root.glob("*.py"))
    assert modules == ["__init__.py", "__main__.py"] and len(modules) <= 3


def test_scoring_imports_only_core_and_numpy():
    """What the scoring contract's list cannot say of a module added later: every import
    of scoring/ (function-level ones included) is scoring/, core/, numpy or the standard
    library."""
    graph = grimp.build_graph(receval.__name__, include_external_packages=True, cache_dir=None)
    scoring = {m for m in graph.modules if m == "receval.scoring" or m.startswith("receval.scoring.")}
    assert "receval.scoring.rows" in scoring
    imported = {i for m in scoring for i in graph.find_modules_directly_imported_by(m)}
    outside = {i for i in imported - scoring if not i.startswith("receval.core")} - sys.stdlib_module_names
    assert outside <= {"numpy"}, sorted(outside)
    assert "receval.scoring.measures" in imported  # rows.py scores with the formulas


def test_the_groups_best_yaml_types_are_the_run_sides():
    """best.yaml's defaults list (core.groups, read side) names the groups the run side
    types (components.BASES) and the schema conf/config.yaml starts from."""
    from receval.run import components
    from receval.run.config import config_dir
    from receval.core.groups import GROUPS, SCHEMA, primary_defaults

    assert set(GROUPS) == set(components.BASES)
    conf = (Path(config_dir()) / "config.yaml").read_text(encoding="utf-8")
    assert f"- {SCHEMA}" in conf
    run = {"retriever": {"kind": "bm25"}, "rerank": None, "chunking": {"kind": "words"}, "depth": 10}
    assert primary_defaults(run) == [SCHEMA, {"chunking": "base_words"}, {"retriever": "base_bm25"}, "_self_"]


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """Tarjan's strongly connected components of the module import graph, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
    return found


def test_strongly_connected_finds_a_cycle_and_nothing_else():
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.d", "p.a")):
        graph.add_import(importer=importer, imported=imported)
    assert sorted(strongly_connected(graph)) == [["p"], ["p.a", "p.b", "p.c"], ["p.d"]]


def test_no_import_cycle_anywhere_in_receval():
    graph = grimp.build_graph(receval.__name__, cache_dir=None)
    assert "receval.analysis.api" in graph.find_modules_directly_imported_by("receval.analysis")
    cycles = [component for component in strongly_connected(graph) if len(component) > 1]
    details = [
        " <-> ".join(component) + ": " + "; ".join(
            f"{a} -> {b} (line {imp['line_number']})"
            for a in component for b in component
            for imp in graph.get_import_details(importer=a, imported=b)
        )
        for component in cycles
    ]
    assert not cycles, "\n".join(details)


def test_every_package_of_receval_ships_in_the_wheel():
    """[tool.setuptools] lists the packages by hand: a new one (scoring/) left out of it
    would import here, from the source tree, and be missing from an installed receval."""
    import tomllib

    listed = set(tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    root = Path(receval.__file__).resolve().parent
    packages = {
        ".".join(("receval", *init.parent.relative_to(root).parts))
        for init in root.rglob("__init__.py")
        if "__pycache__" not in init.parts and init.parent.name != "hydra_plugin"
    }
    assert packages - listed == set()


def _callers(names: set[str]) -> dict[str, set[str]]:
    """Function name -> the modules of receval (paths under receval/) that call it, read from
    the source: ``name(...)`` or ``x.name(...)``; a name given as ``.name``: only the latter
    (a method: ``claim.seal()``, ``manifest.seal(...)``)."""
    import ast

    root = Path(receval.__file__).parent
    found: dict[str, set[str]] = {name: set() for name in names}
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if not any(f"{name.lstrip('.')}(" in text for name in names):  # no call of them: not parsed
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute):
                    named = [func.attr, f".{func.attr}"]
                else:
                    named = [getattr(func, "id", None)]
                for name in named:
                    if name in found:
                        found[name].add(path.relative_to(root).as_posix())
    return found


def test_one_module_writes_and_seals_a_run_folder():
    """results.parquet, run.json and chunks.json are written, and the folder sealed, by one
    module (receval/results/run_writer.py: ``write_run``, ``seal_again``): the run, the
    traces importer and resume go through it; the claim's seal alone writes the manifest."""
    found = _callers({"write_results", "write_run_json", "write_json_lines", "write_json", ".seal", ".keep",
                      "write_run", "seal_again"})
    writer = {"results/run_writer.py"}
    assert found["write_results"] == found["write_run_json"] == found["write_json_lines"] == writer, found
    assert found[".seal"] == writer | {"results/claim.py"} and found[".keep"] == writer, found
    assert found["write_json"] <= {"results/write.py"}, found  # run.json's own writer, nothing else
    assert {"run/pipeline.py", "traces/job.py"} <= found["write_run"], found  # (trec.write_run: a TREC file)
    assert found["seal_again"] == {"cli/run.py"}, found
    claim = (Path(receval.__file__).parent / "results" / "claim.py").read_text(encoding="utf-8")
    assert claim.count("manifest.seal(") == 1  # Claim.seal: the manifest, last, with the run id


#: The longest a function of receval may be (issue 47): past it, split it by job.
MAX_FUNCTION_LINES = 80


def test_no_function_of_receval_is_over_80_lines():
    """Every function and method in receval/, decorators left out, spans at most
    :data:`MAX_FUNCTION_LINES` lines (its signature, docstring and body)."""
    import ast

    long = []
    for path in sorted((ROOT / "receval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "split by job: " + "; ".join(long)
