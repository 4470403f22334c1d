"""One name for a run, everywhere (issue 22, section 3): :mod:`receval.results.labels`
and every place that shows runs -- the run line, the report (JSON, markdown, HTML, plot),
``select``, ``list`` and ``compare``."""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import shutil
from http.server import BaseHTTPRequestHandler

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from conftest import exit_code, loopback
from forge import forged
from receval.cli import compare as compare_mod
from receval.cli import list as list_mod
from receval.cli import report
from receval.cli.report import report_for
from receval.cli import select as select_mod
from receval.run.config import config_dir, default_dense_backend
from receval.run.pipeline import resolved, run, summary_line
from receval.core.formatting import shown
from receval.results import labels
from receval.analysis.differences import differences_of
from receval.results.format import RUN_JSON
from receval.run.written import label_facts
from receval.core.overrides import swept_suffix

URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")
DENSE = default_dense_backend()  # conf/'s dense options: onnx where the onnx extra is installed, else local
DENSE_LABEL = "dense" if DENSE == "local" else f"dense ({DENSE})"


_COMPOSED: dict[tuple, dict] = {}


def config(*overrides: str) -> dict:
    """A run's config as it is saved (plain data), composed as ``receval`` would."""
    if overrides not in _COMPOSED:
        with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
            _COMPOSED[overrides] = resolved(compose("config", overrides=list(overrides)))
    return copy.deepcopy(_COMPOSED[overrides])


def naming(configs: list[dict], overrides=None) -> labels.Naming:
    """:func:`labels.naming` of runs of ``configs``, with what each run writes (run.json's label)."""
    return labels.naming(configs, overrides, written=[label_facts(c) for c in configs])


def differences(a: dict, b: dict):
    """``compare``'s differences of runs of ``a`` and ``b``, read as the runs wrote them."""
    (a, texts_a), (b, texts_b) = (labels.as_written(c, label_facts(c)) for c in (a, b))
    return differences_of(a, b, texts=(texts_a, texts_b))


def with_(saved: dict, key: str, value) -> dict:
    """``saved`` with one dotted key set: a variant without composing again."""
    node = saved
    *path, last = key.split(".")
    for part in path:
        node = node[part]
    node[last] = value
    return saved


def clean(label: str) -> bool:
    return "null" not in label and not URL.search(label)


# ------------------------------------------------------------------ values


def test_shown_values_never_null_never_a_url():
    assert shown(None, "label") == "none"
    assert shown(True, "label") == "true"
    assert shown(1.3232202558909871, "label") == "1.323"
    assert shown(120, "label") == "120"
    assert shown([1, 3, 5], "label") == "[1, 3, 5]"
    assert shown("http://user:secret@embed.example.org:8089/v1?key=k", "label") == "embed.example.org"
    assert shown("/models/ms-marco-MiniLM-L-6-v2", "label") == "ms-marco-MiniLM-L-6-v2"
    assert labels.without_urls("rrf(a+b) via https://10.0.0.2:9/x, more") == "rrf(a+b) via 10.0.0.2, more"
    # the sweep line's swept values too
    argv = ["rerank=dense", "rerank.base_url=http://127.0.0.1:9/v1,http://h:1/v1", "rerank.first_size=null,3", "-m"]
    job = ["rerank=dense", "rerank.base_url=http://127.0.0.1:9/v1", "rerank.first_size=null"]
    assert swept_suffix(job, argv) == "  [base_url=127.0.0.1 first_size=none]"


# ------------------------------------------------------------------ one function, several runs


@pytest.mark.slow
def test_null_settings_and_urls_of_other_kinds_are_no_label():
    """The report once called these "bm25 null null null null" and "fused 3 tiny
    http://127.0.0.1:8089 http": settings a run does not have, and a URL."""
    remote = ["retriever.fusion.k=3", "retriever.members.1.backend=http",
              "+retriever.members.1.base_url=http://127.0.0.1:8089/v1", "retriever.members.1.model=tiny"]
    bm25, remote_hybrid, local_hybrid = config("retriever=bm25"), config("retriever=hybrid", *remote), config(
        "retriever=hybrid")
    assert naming([bm25, remote_hybrid]).labels == ["bm25", "rrf(bm25+dense (http))"]
    # among hybrids alone, the settings that differ; a member's default (backend local)
    # counts as set, the URL shows as its host
    named = naming([local_hybrid, remote_hybrid])
    assert named.labels == [
        f"model=all-MiniLM-L6-v2 backend={DENSE} base_url=none k=60",
        "model=tiny backend=http base_url=127.0.0.1 k=3",
    ]
    assert named.columns == ["model", "backend", "base_url", "k"]
    assert all(clean(label) for label in named.labels)


def test_a_setting_of_another_kind_is_no_difference():
    runs = [with_(config("retriever=bm25"), "retriever.k1", k1) for k1 in (0.9, 1.5)] + [config("retriever=tfidf")]
    named = naming(runs)
    assert named.labels == ["bm25 k1=0.9", "bm25 k1=1.5", "tfidf"]
    assert named.params[2] == {"retriever": "tfidf"}  # no k1 column value: tfidf has none
    grid = [with_(config(f"retriever={r}"), "chunking.max_words", w) for r in ("bm25", "tfidf") for w in (20, 120)]
    assert naming(grid).labels == ["bm25 max_words=20", "bm25 max_words=120",
                                          "tfidf max_words=20", "tfidf max_words=120"]


@pytest.mark.slow
def test_a_component_added_or_removed_is_a_difference():
    plain = config("retriever=bm25")
    llm = config("retriever=bm25", "rerank=llm", "rerank.base_url=http://127.0.0.1:8089/v1",
                 "rerank.model=qwen2.5:7b", "rerank.first_size=30")
    assert naming([plain, llm]).labels == ["rerank=none", "rerank=llm:qwen2.5:7b@30"]
    # hybrid and hybrid + re-rank: once both "fused"
    assert naming([config("retriever=hybrid"), config("retriever=hybrid", "rerank=dense")]).labels == [
        "rerank=none", f"rerank={DENSE_LABEL}@30"]


@pytest.mark.slow
def test_experiment_stages_are_named_by_the_stage():
    stages = ("keyword", "vector", "hybrid", "hybrid_rerank")
    named = naming([config(f"+stage={s}") for s in stages])
    assert named.labels == list(stages)
    assert named.columns == ["name", "retriever", "rerank"]  # the table still says what each is
    assert named.params[3] == {"name": "hybrid_rerank", "retriever": f"rrf(bm25+{DENSE_LABEL})",
                               "rerank": "dense (wordllama)@30"}
    # what the name does not tell apart is added
    by_size = naming([with_(config(f"+stage={s}"), "chunking.max_words", w)
                             for s in ("keyword", "hybrid") for w in (20, 40)])
    assert by_size.labels == ["keyword max_words=20", "keyword max_words=40",
                              "hybrid max_words=20", "hybrid max_words=40"]
    # a run saved before the name was: its +stage= override names it
    old = config("+stage=hybrid")
    old.pop("name")
    assert naming([old, config("retriever=bm25")], [["+stage=hybrid", "+experiment=stages"], []]).labels[0] == "hybrid"


def test_one_run_alone_is_described_not_numbered():
    assert naming([config("retriever=bm25")]).labels == ["bm25, 120 words, headings"]
    assert naming([config("+stage=hybrid_rerank")]).labels == ["hybrid_rerank"]
    hybrid_rerank = config("+stage=hybrid_rerank")
    assert labels.describe(hybrid_rerank, None, label_facts(hybrid_rerank)["components"]) == (
        f"hybrid_rerank: rrf(bm25+{DENSE_LABEL}) > dense (wordllama)@30, 120 words, headings")
    twins = naming([config("retriever=tfidf"), config("retriever=tfidf")]).labels
    assert twins == ["tfidf, 120 words, headings #0", "tfidf, 120 words, headings #1"]


def test_short_names_tell_keys_apart():
    shorts = labels._short_names(["retriever.k1", "retriever.members.0.k1", "chunking.max_words"])
    assert shorts == {"retriever.k1": "retriever.k1", "retriever.members.0.k1": "members.0.k1",
                      "chunking.max_words": "max_words"}


@pytest.mark.slow
def test_differences_list_every_change_a_component_added_included():
    plain = config("retriever=bm25")
    llm = config("retriever=bm25", "rerank=llm", "rerank.base_url=http://u:pw@127.0.0.1:8089/v1",
                 "rerank.model=qwen", "rerank.first_size=30", "search_batch=4")
    found = differences(plain, llm)
    assert [d.key for d in found] == ["rerank", "search_batch"]  # in config order
    assert [d.affects_results for d in found] == [True, False]
    text = found[0].text
    # in the schema's order: the endpoint's settings (core.settings.ApiFields) first, then the component's
    assert text.startswith("rerank: none -> llm:qwen@30 (first_size 30, base_url 127.0.0.1, api_key_env OPENAI_API_KEY, "
                           "timeout 60, retries 4, backoff 1, max_backoff 30, model qwen, ")
    assert "pw" not in text and not URL.search(text)
    assert differences(llm, plain)[0].text.endswith("-> none")
    # a member's default written out or left out is no difference; a changed one is
    hybrid = config("retriever=hybrid")
    remote = config("retriever=hybrid", "retriever.members.1.backend=http",
                    "+retriever.members.1.base_url=http://h:1/v1")
    assert [d.text for d in differences(hybrid, remote)] == [
        f"retriever.members.1.backend: {DENSE} -> http", "retriever.members.1.base_url: none -> h"]
    assert differences(hybrid, config("retriever=hybrid")) == []


# ------------------------------------------------------------------ everywhere, end to end


class Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-style ``/embeddings`` endpoint: letter counts, so dense runs need no model."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        rows = []
        for i, text in enumerate(texts):
            counts = [0.0] * 26
            for ch in text.lower():
                if "a" <= ch <= "z":
                    counts[ord(ch) - 97] += 1.0
            rows.append({"index": i, "embedding": [c + 0.01 for c in counts]})
        body = json.dumps({"data": rows}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The stages experiment's four runs (dense on a loopback embeddings API), a bm25
    run and a hybrid whose fusion k and dense URL differ, all in one folder."""
    root = tmp_path_factory.mktemp("labelled")
    with loopback(Embeddings) as server:
        remote = [f"base_url={server.root}/v1", "model=tiny"]
        member = ["retriever.members.1.backend=http", f"+retriever.members.1.base_url={server.root}/v1",
                  "retriever.members.1.model=tiny"]
        reranker = ["rerank.backend=http", *(f"rerank.{o}" for o in remote)]
        jobs = {
            "0": ["+stage=keyword"],
            "1": ["+stage=vector", "retriever.backend=http", *(f"retriever.{o}" for o in remote)],
            "2": ["+stage=hybrid", *member],
            "3": ["+stage=hybrid_rerank", *member, *reranker],
            "4": ["retriever=bm25"],
            "5": ["retriever=hybrid", "retriever.fusion.k=3", *member],
        }
        lines = {}
        for name, overrides in jobs.items():
            with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
                cfg = compose("config", overrides=[*overrides, "cache_dir=null"])
            lines[name] = summary_line(cfg, run(cfg, root / name))
    return root, lines


def labels_in(data) -> list[str]:
    """Every ``label`` (or ``label_a``/``label_b``) value anywhere in a JSON document."""
    found = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key in ("label", "label_a", "label_b") and isinstance(value, str):
                found.append(value)
            else:
                found += labels_in(value)
    elif isinstance(data, list):
        for item in data:
            found += labels_in(item)
    return found


def output(capsys, main, argv) -> str:
    assert exit_code(main, argv) == 0
    return capsys.readouterr().out


@pytest.mark.slow
def test_every_command_names_runs_without_null_or_url(stored, capsys, tmp_path):
    root, lines = stored
    expected = ["keyword", "vector", "hybrid", "hybrid_rerank", "bm25 rerank=none",
                "rrf(bm25+dense (http)) rerank=none k=3"]
    assert lines["3"].startswith("hybrid_rerank: rrf(bm25+dense (http)) > dense (http)@30  120 words, headings")
    assert all(clean(line.split(" -> ")[0]) for line in lines.values())

    data = json.loads(output(capsys, report.main, [root, "--format", "json"]))
    assert [r["label"] for r in data["runs"]] == expected
    assert data["params"] == ["name", "retriever", "rerank", "k"]
    markdown = output(capsys, report.main, [root, "--format", "markdown", "--baseline", root / "4"])
    csv_text = output(capsys, report.main, [root, "--format", "csv"])
    assert [row["label"] for row in csv.DictReader(io.StringIO(csv_text))] == expected
    assert "null" not in csv_text and not URL.search(csv_text)
    html_file = tmp_path / "r.html"
    assert exit_code(report.main, [root, "--format", "html", "--out", html_file, "--baseline", root / "4"]) == 0
    capsys.readouterr()
    html = html_file.read_text()
    assert "baseline: #4 bm25 rerank=none" in markdown  # the table's rows: its columns
    assert "| 3 | hybrid_rerank | rrf(bm25+dense (http)) | dense (http)@30 | 60 |" in markdown
    assert "| 4 | - | bm25 | none | - |" in markdown  # bm25 has no fusion k
    assert all(label in html for label in expected)  # the intervals plot's rows
    assert "null" not in markdown and not URL.search(markdown)
    # the page's only URL is the SVG namespace; no run is called "null"
    assert "null" not in html and set(URL.findall(html)) <= {"http://"}
    assert html.count("http://") == html.count('xmlns="http://www.w3.org/2000/svg"')

    chosen = json.loads(output(capsys, select_mod.main, [root, "--split", "dev", "--metric", "hit@3",
                                                         "--format", "json"]))
    assert sorted(labels_in(chosen)) == sorted(expected)
    listed = json.loads(output(capsys, list_mod.main, [root, "--format", "json"]))
    assert [r["label"] for r in listed] == expected
    table = output(capsys, list_mod.main, [root])
    assert "hybrid_rerank" in table and "null" not in table and not URL.search(table)

    one = json.loads(output(capsys, report.main, [root, "--runs", "name=vector", "--format", "json"]))
    assert [r["label"] for r in one["runs"]] == ["vector"]
    alone = json.loads(output(capsys, report.main, [root / "4", "--format", "json"]))
    assert [r["label"] for r in alone["runs"]] == ["bm25, 120 words, headings"]
    shown = output(capsys, report.main, [root, "--runs", "retriever=bm25", "--show", "q01", "--top", "1"])
    # narrowed to keyword and the plain bm25 run, which differ in nothing but a name
    assert "\n  keyword: first relevant at 1\n" in shown
    assert "\n  bm25, 120 words, headings: first relevant at 1\n" in shown


@pytest.mark.slow
def test_the_plot_uses_the_labels(stored):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from receval.render import plots

    root, _ = stored
    built = report_for([str(root / n) for n in "0123"])
    figure = Figure()
    plots.panels(built, figure)
    # one panel: the stage; its retriever and re-ranker follow from it
    assert [a.get_xlabel() for a in figure.axes] == ["name"]
    ticks = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert sorted(ticks) == ["hybrid", "hybrid_rerank", "keyword", "vector"]
    paired = report_for([str(root), "--baseline", str(root / "4")])
    figure = Figure()
    plots.forest(paired, figure)
    texts = [t.get_text() for t in figure.axes[0].get_yticklabels()] + [figure.axes[0].get_xlabel()]
    assert all(clean(t) for t in texts) and "bm25 rerank=none" in texts[-1]


@pytest.mark.slow
def test_a_stage_run_saved_before_names_existed_is_named_by_its_override(stored, tmp_path):
    root, _ = stored
    old = tmp_path / "old"
    shutil.copytree(root / "2", old)
    info = json.loads((old / RUN_JSON).read_text())
    info["config"].pop("name")
    (old / RUN_JSON).write_text(json.dumps(info))
    (old / ".hydra").mkdir()
    (old / ".hydra" / "overrides.yaml").write_text("- +stage=hybrid\n- +experiment=stages\n")
    forged(old)
    built = report_for([str(root / "0"), str(old)])
    assert [r.label for r in built.runs] == ["keyword", "hybrid"]


@pytest.mark.slow
def test_runs_selects_by_the_names_the_report_columns_show(stored):
    """One rule names runs: ``--runs COLUMN=VALUE`` takes the report's parameter columns
    and the values they show (``retriever=rrf(bm25+dense (http))``, ``k=3``) and picks
    exactly the runs whose row shows that value."""
    from receval.analysis.filters import pick
    from receval.results import load_runs

    root, _ = stored
    runs = load_runs([root])
    named = labels.naming_of(runs)
    assert named.columns == ["name", "retriever", "rerank", "k"]
    assert named.keys == {"name": "name", "retriever": "retriever", "rerank": "rerank", "k": "retriever.fusion.k"}
    tried = 0
    for column in named.columns:
        for value in {shown(row[column], "label") for row in named.params if column in row}:
            picked = {r.run_dir for r in pick(runs, f"{column}={value}")}
            assert picked == {r.run_dir for r, row in zip(runs, named.params)
                              if column in row and shown(row[column], "label") == value}, (column, value)
            tried += 1
    assert tried >= 10
    hybrid = [r.run_dir.name for r in pick(runs, "retriever=rrf(bm25+dense (http)),k=3")]
    assert [named.labels[[r.run_dir.name for r in runs].index(n)] for n in hybrid] == [
        "rrf(bm25+dense (http)) rerank=none k=3"]


@pytest.mark.slow
def test_compare_names_a_reranker_added(stored, capsys, tmp_path):
    """bm25 against bm25 + an LLM re-ranker once printed "config: identical"."""
    root, _ = stored
    b = tmp_path / "b"
    shutil.copytree(root / "4", b)
    info = json.loads((b / RUN_JSON).read_text())
    llm = config("retriever=bm25", "rerank=llm", "rerank.base_url=http://127.0.0.1:8089/v1",
                 "rerank.model=qwen", "rerank.first_size=30")
    info["config"]["rerank"] = llm["rerank"]
    info["label"] = label_facts(info["config"])  # as a run with that re-ranker writes it
    (b / RUN_JSON).write_text(json.dumps(info))
    forged(b)
    text = output(capsys, compare_mod.main, [root / "4", b])
    header = text.split("\n\n")[0]
    assert "config: identical" not in header
    line = next(x for x in header.splitlines() if x.startswith("config: "))
    assert line.startswith("config: rerank: none -> llm:qwen@30 (")  # its settings in run.json's (sorted) order
    assert all(f"{setting}," in line or f"{setting})" in line
               for setting in ("first_size 30", "base_url 127.0.0.1", "model qwen"))
    assert f"A rerank=none  ({root / '4'})" in header and f"B rerank=llm:qwen@30  ({b})" in header
    assert not URL.search(header)
    data = json.loads(output(capsys, compare_mod.main, [root / "4", b, "--format", "json"]))
    assert data["params"]["rerank"][0] is None and data["params"]["rerank"][1]["kind"] == "llm"
    assert (data["label_a"], data["label_b"]) == ("rerank=none", "rerank=llm:qwen@30")
    # the stages: hybrid against hybrid + re-rank, and a name alone changes no result
    header = output(capsys, compare_mod.main, [root / "2", root / "3"]).split("\n\n")[0]
    assert "config: rerank: none -> dense (http)@30 (backend http, base_url 127.0.0.1, batch_size 64, first_size 30, model tiny)" in header
    assert "also differ (results unaffected): name: hybrid -> hybrid_rerank" in header
