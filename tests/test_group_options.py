"""A mistyped config group option (``retriever=bm52``) is one line naming the nearest
option and the group's options, before Hydra runs (receval.run.argv.group_problems): never
Hydra's list with its internal ``base_*`` schema names. The command's exit 2, one line,
no folder: tests/test_cli.py's bad-config cases."""

from pathlib import Path

import pytest

from receval.run.argv import check_argv, config_folders, group_options, group_problems
from receval.run.config import config_dir
from receval.core.errors import ConfigError

CONF = Path(config_dir())


@pytest.mark.parametrize(
    "override, nearest",
    [
        ("retriever=bm52", "bm25"),
        ("chunking=word", "words"),
        ("rerank=cross", "cross_encoder"),
        ("dataset=bier", "beir"),
        ("+experiment=stagess", "stages"),
        ("retriever/fusion=rfr", "rrf"),
        ("transform=rm33", "rm3"),
        ("+stage=vectr", "vector"),
        ("bootstrap=defualt", "default"),
        ("judge=lm", "llm"),
        ("synth=defaults", "default"),
        ("collection=scifat", "scifact"),
        ("suite=locl", "local"),
        ("search=ful", "full"),
        ("retriever=bm25,tfdif", "tfidf"),  # a sweep's every value
        ("rerank=null", "none"),
    ],
)
def test_a_mistyped_option_names_the_nearest(override, nearest):
    (problem,) = group_problems([override], CONF)
    group, value = override.lstrip("+").split("=")
    value = value.split(",")[-1]
    options = group_options(CONF)[group]
    assert problem == f"{group}={value}: no such option; did you mean {nearest}? (options: {', '.join(options)})"
    assert "base_" not in problem


def test_every_group_is_checked_and_lists_only_its_files():
    groups = group_options(CONF)
    on_disk = {p.parent.relative_to(CONF).as_posix() for p in CONF.rglob("*.yaml")} - {"."}
    assert set(groups) == {g for g in on_disk if not g.startswith("hydra")}
    for group, options in groups.items():
        assert options == sorted(p.stem for p in (CONF / group).glob("*.yaml"))
        assert group_problems([f"{group}={o}" for o in options], CONF) == []  # every real option passes
        (problem,) = group_problems([f"{group}={options[0]}x"], CONF)
        assert problem.startswith(f"{group}={options[0]}x: no such option; did you mean ")


def test_what_is_not_a_group_option_is_left_alone():
    assert group_problems([
        "retriever.k1=0.9", "name=x", "dataset.path=data", "-m", "retriever=base_bm25", "+cost.rerank.per_1k_requests=2",
        "hydra/launcher=joblib",
    ], CONF) == []
    (problem,) = group_problems(["retriever=zzzzzz"], CONF)
    assert problem.startswith("retriever=zzzzzz: no such option (options: bm25, ")  # nothing near: no guess


def test_options_of_an_added_config_folder_count(tmp_path):
    (tmp_path / "retriever").mkdir()
    (tmp_path / "retriever" / "bm52.yaml").write_text("defaults:\n  - bm25\n")
    assert config_folders(["-cd", str(tmp_path)]) == [tmp_path]
    check_argv(["-cd", str(tmp_path), "retriever=bm52"], CONF)
    check_argv([f"--config-dir={tmp_path}", "retriever=bm52"], CONF)
    with pytest.raises(ConfigError, match="did you mean bm25"):
        check_argv(["retriever=bm52"], CONF)
    (tmp_path / "mine.yaml").write_text("hydra:\n  searchpath: [file:///elsewhere]\n")
    assert config_folders(["-cp", str(tmp_path), "-cn", "mine"]) is None  # Hydra judges then
    assert config_folders(["hydra.searchpath=[file:///x]"]) is None

