"""The report composed once: :func:`compose` turns a :class:`ReportOptions` into the
:class:`receval.analysis.report.Report` (or, with ``suite``, the
:class:`receval.analysis.suite.Suite`) that ``receval report`` renders and the Python API
returns (:func:`receval.analysis.api.report_for`).

The steps: the runs read (:mod:`.report_runs`: one at a time when nothing needs their
whole tables) -> the runs' summaries, cautions and what the questions cannot decide ->
added labels (``labels``, ``human``, ``agreement``) -> the gate, pairs, chain, ``by``,
per question and every pair -> corrections and sureness -> what came back (``show``).
"""

from __future__ import annotations

from receval.analysis import filters, show as shown_questions
from receval.analysis.breakdown import by_table, ranks_per_question
from receval.analysis.chain import chain_pairs
from receval.analysis.costs import answered
from receval.analysis.decidable import undecided
from receval.analysis.derived import with_derived
from receval.analysis.gate import gate_runs
from receval.analysis.holes import judged_cautions, label_agreement, ppi_intervals
from receval.analysis.humans import certifications, judge_labels, stratified_ppi
from receval.analysis.pairs import every_pair, paired
from receval.analysis.report import Report, ReportOptions
from receval.analysis.report_runs import Prepared, load, loaded_runs, streamed_runs, streams
from receval.analysis.settings import BOOTSTRAP_ARGS, bootstrap_settings
from receval.analysis.significance import correct_family, sureness
from receval.analysis.suite import Suite, suite
from receval.analysis.summary import latency_cautions
from receval.core.errors import RecevalError, named
from receval.stats.gate import check_margin

__all__ = ["ReportOptions", "compose", "compose_suite"]

#: What a suite report does not take: options of the report of runs side by side.
SUITE_ALONE = ("gate", "chain", "by", "per_question", "all_pairs", "correct", "detect", "ranks", "calibrate",
               "show", "qrels")


def compose(options: ReportOptions) -> Report | Suite:
    """Everything the report shows for ``options``, composed from the functions of
    :mod:`receval.analysis`: runs and questions kept -> measures -> summaries -> the
    gate, pairs, chain, ``by``, per question, ``show``. With ``gate`` the report is of
    the baseline and the run gated, the baseline first and the pairs against it (unless
    ``baseline`` names another), and ``report.gate`` holds the verdict."""
    if options.suite:
        return compose_suite(options)
    margin = check_margin(options.margin, option="--margin")
    _check_labels(options)
    found = streamed_runs(options) if streams(options) else None
    found = found or loaded_runs(options)
    report = _summarised(found, options)
    _add_labels(report, found, options)
    _add_pairs(report, found, options, margin)
    _add_sureness(report, found.runs, options)
    if options.show is not None:
        report.shown = shown_questions.show(found.runs, found.naming.labels, options.show, options.top, options.names)
    return report


def compose_suite(options: ReportOptions) -> Suite:
    """The suite report (``suite``): configurations x collections over the runs read
    whole (:mod:`receval.analysis.suite`)."""
    runs = load(options)
    given = [name for name in SUITE_ALONE if getattr(options, name) not in (None, False)]
    if given:
        raise RecevalError(f"--suite: --{given[0].replace('_', '-')} is not taken with --suite; leave it out")
    runs = filters.filter_questions(runs, options.where, option="--where")
    boot = bootstrap_settings(runs, options.n_resamples, options.seed, options.level, options.method,
                              named(options.names, "bootstrap", BOOTSTRAP_ARGS))
    return suite(runs, options.metric, boot, options.baseline, option="--baseline")


def _check_labels(options: ReportOptions) -> None:
    """The added-label options that need another (one message naming what to add)."""
    if options.agreement and not options.labels:
        raise RecevalError("--agreement compares label sets: add --labels LABELS.jsonl")
    if options.human and not options.labels:
        raise RecevalError("--human corrects a judge's labels: give the judge's with --labels")
    if options.versus and not options.agreement:
        raise RecevalError("--versus names the labels --agreement compares against: add --agreement")


def _summarised(found: Prepared, options: ReportOptions) -> Report:
    """The report's runs, header and cautions, and what the questions cannot decide."""
    runs, boot, naming, metric = found.runs, found.boot, found.naming, found.metric
    report = Report(
        runs=found.summary, params=naming.columns, metrics=found.names, metric=metric, questions=found.questions,
        boot=boot, where=options.where, baseline=found.base, floors=found.floors,
        cautions=latency_cautions(runs, found.summary) + judged_cautions(
            runs, naming.labels, metric, sampled=bool(found.relabelled and found.relabelled.estimation),
            sample_depth=found.relabelled.sample_depth if found.relabelled else None),
        relabelled=found.relabelled.cautions() if found.relabelled else [],
        latency=found.latency,
    )
    report.undecided = undecided(runs, found.names, metric, 1.0 - boot.level, kinds=report.questions["kinds"],
                                 n_resamples=boot.n_resamples, seed=boot.seed, separated=found.separated,
                                 stored=found.stored_measures)
    return report


def _add_labels(report: Report, found: Prepared, options: ReportOptions) -> None:
    """What added labels bring: the judged estimate, ``human``'s corrections (PPI, or
    stratified PPI over a person's sample) and ``agreement``."""
    runs, metric, boot, relabelled = found.runs, found.metric, found.boot, found.relabelled
    if relabelled is not None and relabelled.estimation is not None:
        relabelled.estimation.judge_intervals(runs, [metric, *found.names], boot.level, boot.n_resamples, boot.seed)
        report.estimation = relabelled.estimation
    if found.human is not None:
        report.ppi = ppi_intervals(runs, found.human.runs, found.human.questions, metric, boot.level)
        report.relabelled += [f"--human: {line}" for line in found.human.cautions()]
    if found.sampled_human is not None:
        stored_runs = {run.run_dir: run for run in filters.filter_questions(found.original, options.where,
                                                                            option="--where")}
        if any(run.run_dir not in stored_runs for run in runs):
            raise RecevalError("--human: the person's sample corrects the runs given as RUN; give --baseline among them")
        report.stratified_ppi = stratified_ppi(
            [stored_runs[run.run_dir] for run in runs], judge_labels(options.labels), found.sampled_human,
            metric, boot.level, min(boot.n_resamples, 500), boot.seed)
    if relabelled is not None and options.agreement:
        report.certify = certifications(options.labels, options.precision, boot.level)
        report.label_agreement = label_agreement(
            with_derived(found.stored, [metric], "--metric"), runs, metric, boot,
            what="stored + " + ", ".join(options.versus) if options.versus else "stored labels",
        )


def _add_pairs(report: Report, found: Prepared, options: ReportOptions, margin: float) -> None:
    """The gate's verdict, the pairs against the baseline, the chain, ``by``, per question
    and every pair."""
    runs, metric, boot, base, intersect = found.runs, found.metric, found.boot, found.base, options.intersect
    if found.gated is not None:
        by_dir = {str(run.run_dir): run for run in runs}
        report.gate = gate_runs(by_dir[found.gated[1]], by_dir[found.gated[0]], metric, boot, margin, intersect,
                                option="--intersect")
    if base is not None and len(runs) > 1:
        others = [run for i, run in enumerate(runs) if i != base]
        report.pairs = paired(runs[base], others, metric, boot, intersect, option="--intersect")
    if options.chain and len(runs) > 1:
        report.chain = chain_pairs(runs, metric, boot, intersect, option="--intersect")
    if options.by is not None:
        scored = [answered(run, metric) for run in runs]  # the header's questions: unanswerable ones left out
        report.by, *report.by_more = [by_table(scored, options.by, m, boot, options.names) for m in found.by_names]
    if options.per_question:
        report.per_question = ranks_per_question(runs)
    if options.all_pairs and len(runs) > 1:
        report.all_pairs = every_pair(runs, metric, boot, intersect, option="--intersect")


def _add_sureness(report: Report, runs: list, options: ReportOptions) -> None:
    """The pairs shown corrected as one family (``correct``), and their effects, the
    questions needed to ``detect`` a difference, rank intervals and calibration."""
    if options.detect is not None and not 0 < options.detect < float("inf"):
        raise RecevalError(f"--detect {options.detect}: give the difference to detect, a number > 0 (e.g. 0.02)")
    wanted = [flag for flag, on in (("--correct", options.correct), ("--effects", options.effects),
                                     ("--detect", options.detect is not None)) if on]
    if wanted and not report.shown_pairs():
        raise RecevalError(f"{wanted[0]}: no pair is shown; add --baseline RUN, --chain or --all-pairs")
    boot = report.boot
    report.pairs, report.chain, report.all_pairs = correct_family(
        [report.pairs, report.chain, report.all_pairs], options.correct, boot)
    if options.correct or options.effects or options.detect is not None or options.ranks or options.calibrate:
        report.sure = sureness(
            runs, report.shown_pairs(), report.metric, boot, options.effects, options.correct,
            options.detect, options.ranks, options.calibrate, options.intersect,
        )
