"""receval.select on a real sweep: Holm-corrected contenders, the choice, best.yaml, test split."""

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import exit_code, one_error_line, run_cli, sweep_of

from receval import choice, chosen
from receval.holm import holm
from receval.reproduce import compare_tables
from receval.results import Run, load_runs
from receval.results.pairing import BootSettings
from receval.select import main, select

# retriever x chunk size with headings off: only then is a tiny chunk clearly worse on the
# 25 dev questions (with headings on, every chunk carries its section's title and even
# 5-word chunks are not distinguishable from the best)
GRID = ("retriever=bm25,tfidf", "chunking.max_words=3,40,120", "chunking.headings=false")


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    return sweep_of(tmp_path_factory, *GRID)


def as_json(capsys, *argv) -> dict:
    assert main([*map(str, argv), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


# ----------------------------------------------------------------- Holm


def test_holm_worked_example():
    # sorted p: 0.005 <= .05/4 reject; 0.01 <= .05/3 reject; 0.03 > .05/2 stop; 0.04 kept
    steps = holm([0.01, 0.04, 0.03, 0.005], 0.05)
    assert [s.rejected for s in steps] == [True, False, False, True]
    assert [s.alpha for s in steps] == pytest.approx([0.05 / 3, 0.025, 0.025, 0.0125])


def test_holm_stops_at_the_first_kept_even_if_a_later_p_would_pass_alone():
    # 0.03 > .05/2 stops the procedure; 0.04 <= .05 alone but Holm keeps it
    steps = holm([0.04, 0.03], 0.05)
    assert [s.rejected for s in steps] == [False, False]
    assert holm([0.025, 0.05], 0.05)[1].rejected  # boundary: p == alpha / (m - i) rejects


def test_corrected_intervals_agree_with_verdicts_and_levels():
    rng = np.random.default_rng(1)
    diffs = np.column_stack([rng.normal(-0.3, 0.5, 60), rng.normal(0.0, 0.5, 60), rng.normal(-0.2, 0.5, 60)])
    boot = BootSettings()
    out = choice.corrected(diffs, 0.0, boot)
    for (interval, level, is_out), column in zip(out, diffs.T):
        assert interval.mean == pytest.approx(column.mean())
        assert is_out == (interval.hi < 0)  # every shown interval reads as its verdict
    assert [v[2] for v in out] == [True, False, True]
    # the clearer loser is tested first at 1 - .05/3, the next at 1 - .05/2; the kept one
    # (after the stop) at the stop's level 1 - .05
    means = diffs.mean(axis=0)
    first, second = (0, 2) if means[0] < means[2] else (2, 0)
    assert out[first][1] == pytest.approx(1 - 0.05 / 3)
    assert out[second][1] == pytest.approx(1 - 0.05 / 2)
    assert out[1][1] == pytest.approx(1 - 0.05)


# ----------------------------------------------------------------- the pinned choice


@pytest.mark.slow
def test_grid_choice_is_pinned(grid, capsys):
    got = as_json(capsys, grid, "--split", "dev", "--prefer", "chunks")
    labels = [r["label"] for r in got["runs"]]
    assert labels[3] == "tfidf max_words=3"
    assert got["leader"] == 1  # bm25 at 40 words
    assert [r["contender"] for r in got["runs"]] == [True, True, True, False, True, True]
    assert got["chosen"] == 2  # bm25 at 120 words: 99 chunks, tied with tfidf 120, smaller index
    assert got["runs"][2]["cost"] == 99 and got["runs"][5]["cost"] == 99
    assert got["runs"][1]["mean"] == pytest.approx(0.6083, abs=5e-4)
    out = got["runs"][3]
    assert out["diff"] == pytest.approx(-0.1683, abs=5e-4) and out["diff_ci"][1] < 0
    assert out["level"] == pytest.approx(1 - 0.05 / 5)
    assert "Holm (1979)" in got["correction"] and "5 comparisons" in got["correction"]


@pytest.mark.slow
def test_a_margin_readmits_a_run_barely_worse(grid, capsys):
    got = as_json(capsys, grid, "--prefer", "chunks", "--margin", "0.05")
    assert all(r["contender"] for r in got["runs"])


@pytest.mark.slow
def test_table_marks_the_choice_and_says_holm(grid, capsys):
    assert main([str(grid), "--prefer", "chunks"]) == 0
    text = capsys.readouterr().out
    assert "Holm (1979) step-down over 5 comparisons" in text
    chosen_rows = [line for line in text.splitlines() if line.rstrip().endswith("chosen")]
    assert len(chosen_rows) == 1 and chosen_rows[0].startswith("#2")
    assert "cheapest of 5 contenders by chunks (99)" in text


@pytest.mark.slow
def test_best_yaml_reruns_to_identical_results(grid, tmp_path):
    out = tmp_path / "conf" / "best.yaml"
    assert main([str(grid), "--prefer", "chunks", "--out", str(out)]) == 0
    text = out.read_text()
    assert 'python -m receval -cp "$(pwd)" -cn best' in text
    assert yaml.safe_load(text)["chunking"]["max_words"] == 120
    done = run_cli("-cp", str(out.parent), "-cn", "best", f"hydra.run.dir={tmp_path}/rerun", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    stored = pq.read_table(grid / "2" / "results.parquet")
    new = pq.read_table(tmp_path / "rerun" / "results.parquet")
    found = compare_tables(stored, new)
    assert found["differences"] == {} and not found["only_stored"] and not found["only_reproduced"]
    hashes = [json.loads((d / "run.json").read_text())["config_hash"] for d in (grid / "2", tmp_path / "rerun")]
    assert hashes[0] == hashes[1]


@pytest.mark.slow
def test_report_on_test_scores_the_held_out_questions_once(grid):
    selection, best = select([str(grid)], prefer="chunks", report_on="test")
    table = pq.read_table(grid / "2" / "results.parquet").to_pydict()
    test = [rr for rr, split in zip(table["rr"], table["split"]) if split == "test" and rr is not None]
    dev = [rr for rr, split in zip(table["rr"], table["split"]) if split == "dev" and rr is not None]
    held = selection.held_out
    assert held["n_questions"] == len(test) == 23
    assert held["mean"] == pytest.approx(np.mean(test))
    assert held["overstated"] == pytest.approx(np.mean(dev) - np.mean(test))
    assert held["ci"][0] <= held["mean"] <= held["ci"][1]
    assert "dev overstated it by" in selection.to_text()


@pytest.mark.slow
def test_plot_and_pareto_front(grid, tmp_path):
    assert chosen.pareto_front([1, 2, 3, 3, 4], [0.5, 0.4, 0.7, 0.6, 0.7]) == [0, 2]
    selection, _ = select([str(grid)], prefer="chunks")
    path = tmp_path / "choice.png"
    chosen.plot(selection, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------- costs


@pytest.mark.slow
def test_money_without_costs_falls_back_to_latency_and_says_so(grid):
    selection, _ = select([str(grid)], prefer="money")
    assert selection.cost_by == "p50_ms"
    assert any(note.startswith("money: no cost recorded") for note in selection.notes)
    assert "money: no cost recorded" in selection.to_text()


def _fake(run_dir, columns: dict, stages: dict) -> Run:
    table = pa.table({"question_id": [f"q{i}" for i in range(3)], **columns})
    return Run(Path(run_dir), table, {}, {"stages": stages, "n_chunks": 5}, {})


def test_money_from_cost_columns():
    paid = _fake("a", {"cost_usd.rerank": [0.001, 0.002, None], "cost_usd.embed": [0.0, 0.0, 0.003]},
                 {"rerank": {"search_api_calls": 3}})
    assert choice.money(paid) == pytest.approx(2.0)  # (0.001 + 0.002 + 0.003) / 3 * 1000
    local = _fake("b", {}, {"bm25": {"search_api_calls": 0}})
    assert choice.money(local) == 0.0
    unknown = _fake("c", {}, {"dense": {"search_api_calls": 3}})
    assert choice.money(unknown) is None


# ----------------------------------------------------------------- bad input


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra, says",
    [
        (["--margin", "-0.1"], "--margin -0.1: use a value >= 0"),
        (["--report-on", "dev"], "--report-on dev: the same split as --split"),
        (["--metric", "hit@7"], "hit@7 is not stored"),
        (["--split", "nosuch"], "no questions with split=nosuch"),
        (["--out", "best.txt"], "--out best.txt: name a .yaml file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(grid, capsys, tmp_path, monkeypatch, extra, says):
    monkeypatch.chdir(tmp_path)
    assert exit_code(main, [grid, *extra, "--plot", "p.png"]) == 2
    assert says in one_error_line(capsys)
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.slow
def test_runs_return_their_dev_objective(grid):
    from omegaconf import OmegaConf

    from receval import objective

    cfg = OmegaConf.create({"objective": {"metric": "MRR", "split": "dev"}})
    (run,) = load_runs([grid / "1"])
    dev = run.values("rr")[np.asarray(run.strings("split")) == "dev"]
    assert objective.value(cfg, grid / "1") == pytest.approx(np.nanmean(dev))
    cfg.objective.split = "nosuch"
    assert objective.value(cfg, grid / "1") is None


def test_an_unknown_objective_metric_is_refused_before_any_work(make_config):
    """A grid sweep never reads the objective, so the config check is where a typo shows."""
    from receval import config
    from receval.errors import ConfigError

    with pytest.raises(ConfigError, match=r"objective.metric=hit3: unknown measure 'hit3'"):
        config.check(make_config("objective.metric=hit3"))
    config.check(make_config("objective.metric=ndcg@10"))


# ----------------------------------------------------------------- Optuna


def test_search_spaces_name_real_config_keys(make_config):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from receval.config import config_dir

    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    full = ["retriever=hybrid", "retriever/fusion=weighted", "rerank=dense"]  # as its comment says
    for space, extra in (("bm25", []), ("full", full)):
        with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
            cfg = compose("config", overrides=[*extra, "hydra/sweeper=optuna", f"+search={space}"],
                          return_hydra_config=True)
        params = cfg.hydra.sweeper.params
        assert cfg.hydra.sweeper.direction == "maximize"
        for key in params:
            assert OmegaConf.select(cfg, key, default="absent") != "absent", key


@pytest.mark.slow
def test_optuna_search_of_20_trials_is_read_by_select(tmp_path_factory, capsys):
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    sweep = sweep_of(tmp_path_factory, "hydra/sweeper=optuna", "+search=bm25")
    assert len([p for p in sweep.iterdir() if (p / "results.parquet").is_file()]) == 20
    got = as_json(capsys, sweep, "--prefer", "chunks")
    assert len(got["runs"]) == 20
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    # Optuna's best objective is select's leader: both are mean MRR on the dev questions
    assert got["runs"][got["leader"]]["mean"] == pytest.approx(best["best_value"], abs=1e-12)
    assert math.isfinite(got["runs"][got["chosen"]]["mean"])


@pytest.mark.slow
def test_a_sweeper_without_the_objective_split_is_told_what_to_set(grid):
    from omegaconf import OmegaConf

    from receval import objective
    from receval.errors import ConfigError

    cfg = OmegaConf.create({"objective": {"metric": "rr", "split": "nosuch"}})
    with pytest.raises(ConfigError, match="objective.split=nosuch: no scored question"):
        objective.value(cfg, grid / "1", required=True)


def test_optuna_without_its_extra_is_one_message(monkeypatch, capsys):
    import importlib.util

    from receval import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec",
        lambda name, *a: None if name == "hydra_plugins.hydra_optuna_sweeper" else real(name, *a),
    )
    monkeypatch.setattr("sys.argv", ["receval", "hydra/sweeper=optuna", "+search=bm25", "-m"])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 2
    assert "pip install 'receval[optuna]'" in one_error_line(capsys)


@pytest.mark.slow
def test_one_run_is_its_own_choice(grid):
    selection, best = select([str(grid / "4")], prefer="chunks")
    assert selection.chosen == selection.leader == 0 and selection.why == "the only run"
    assert best.run_dir == grid / "4"
