"""``report --format html``: one self-contained page, checked in headless Chromium
(its text, its plots, and that it requests nothing beyond itself), and ``--plot``."""

from __future__ import annotations

import pytest

from browser import CHROMIUM, open_page
from conftest import exit_code, sweep_of
from receval.cli import report
from receval.cli.report import report_for
from receval.render import plots

NO_CHROMIUM = "headless Chromium is not installed (Debian: apt-get install chromium)"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    return sweep_of(tmp_path_factory, "retriever=bm25,tfidf", "chunking.max_words=120",
                    "chunking.headings=true,false")


@pytest.fixture(scope="module")
def page_file(sweep, tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "report.html"
    argv = [sweep, "--by", "kind", "--baseline", sweep / "2",
            "--format", "html", "--out", out]
    assert exit_code(report.main, argv) == 0
    return out


@pytest.mark.slow
def test_page_is_self_contained(page_file):
    text = page_file.read_text()
    for tag in ("src=", "href=", "<script", "<link", "<img", "@import", "url("):  # nothing to fetch
        assert tag not in text
    assert "default-src 'none'" in text  # and the browser is told to fetch nothing


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_page_renders_in_chromium_without_requests(page_file, sweep):
    labels = [r.label for r in report_for([str(sweep)]).runs]
    page = open_page(page_file, evaluate=(
        "document.querySelectorAll('svg circle').length",
        "document.querySelectorAll('table').length",
        "document.querySelectorAll('details').length",
        "(() => { const d = document.querySelector('details'); d.open = true;"
        " return d.innerText })()",
    ))
    assert page.requests == [page.url] and page.outside == []
    circles, n_tables, n_details, first_question = page.values
    assert circles == 4 + 3  # a dot per run, then per paired difference
    assert n_tables == 4  # main, latency with its spread, by kind, paired differences
    assert n_details == 49  # every question expands
    for words in ("receval report", "Latency per question (ms)", "hit@3 by kind", "Paired differences vs baseline #2",
                  "MRR per run (95% CI)", *labels):
        assert words in page.text
    assert first_question.startswith("q01 (direct) What is the loan period for DVDs?")
    assert "relevant: " in first_question and "* " in first_question  # relevant hits marked


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_the_request_check_sees_a_fetch(tmp_path):
    """The check above can fail: a page with an outside image is caught."""
    control = tmp_path / "control.html"
    control.write_text('<html><body>control<img src="http://receval.invalid/x.png"></body></html>')
    page = open_page(control)
    assert page.outside == ["http://receval.invalid/x.png"]


@pytest.mark.slow
def test_plot_panels_bars_and_forest_use_run_labels(sweep, tmp_path):
    from matplotlib.figure import Figure

    built = report_for([str(sweep)])
    figure = Figure()
    plots.panels(built, figure)
    # a panel per swept axis (the retriever, headings); not for bm25-only settings
    assert [a.get_xlabel() for a in figure.axes][1:] == ["headings"]
    first = figure.axes[0]
    assert built.runs[0].params[first.get_xlabel()] == "bm25"
    assert [t.get_text() for t in first.get_xticklabels()] == ["bm25", "tfidf"]
    assert [t.get_text() for t in first.get_legend().get_texts()] == ["headings=true", "headings=false"]
    means = sorted(y for line in first.get_lines() for y in line.get_ydata() if line.get_linestyle() == "-")
    assert means == pytest.approx(sorted(r.metrics["rr"].mean for r in built.runs))

    paired = report_for([str(sweep), "--baseline", str(sweep / "2")])
    figure = Figure()
    plots.forest(paired, figure)
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert sorted(labels) == sorted(r.label for i, r in enumerate(paired.runs) if i != 2)
    assert not any("#" in label for label in labels)

    for name in ("p.png", "p.svg"):
        assert exit_code(report.main, [sweep, "--by", "kind", "--plot", tmp_path / name]) == 0
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "p.svg").read_text().lstrip().startswith("<?xml")
    assert exit_code(report.main, [sweep, "--plot", tmp_path / "p.gif"]) == 2
