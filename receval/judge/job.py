"""One judging job: read the pool, judge its holes and calibration pairs, write the labels
JSONL and the agreement beside it (``<out>.agreement.json``).

Labels lines: ``{"question_id", "id", "grade", "judge", ...provenance}`` for every hole
the judge graded (a hole it could not grade is left out and counted); a hole of a
sampled pool keeps its design (``inclusion``, ``stratum``, ``drawn``, ``design``), a
depth pool's its ``depth``, so ``report --labels`` knows what the labels decide or
estimates from them. Calibration pairs are judged blind (the judge never sees
``known_grade``) and compared with it, grade by grade and by passage length; with
``reference=FILE`` the graded holes are also compared with that file's labels (a hole
the file lacks is skipped, or with ``reference_missing=zero`` compared as grade 0). Both
agreements (:mod:`.agreement`), the judge's calls, tokens and money are written to the
agreement file and printed. ``judge.probe=N`` also grades N probe pairs
(:mod:`.probe`), whose rates go to ``<out>.probe.json``; the pool's run lines give the
circularity notes (:mod:`.circularity`). A pool's ``support`` lines (``receval pool
--nuggets``) are asked whether the unit supports a nugget (``judge=llm``, :mod:`.support`)
and written as ``{"question_id", "id", "nugget", "support", "judge", ...}`` lines. The
output never replaces the pool or the reference, and an existing ``out`` only with
``force=true``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from omegaconf import OmegaConf

from receval.run import components
from receval.clients import failures
from receval.core import notices, outputs
from receval.core.errors import ConfigError, RecevalError
from receval.core.io import atomic_write
from receval.core.secrets import brief, cut, without_keys
from receval.datasets import MAX_GRADE
from receval.judge import circularity, probe
from receval.judge.agreement import agreement, by_length
from receval.judge.support import judge_support
from receval.results.judgments import design_problem, read_any_labels

ROLES = ("hole", "calibration", "reference", "support", "run")
DESIGN = ("depth", "inclusion", "stratum", "drawn", "design")  # a hole's design fields, carried into its label


def check_config(cfg) -> None:
    """Keys, ranges and the judge's own checks, before anything is read or sent."""
    from receval.run import config as config_schema

    if OmegaConf.is_missing(cfg, "pool"):
        raise ConfigError("pool is required and has no value: set it on the command line (pool=pool.jsonl)")
    problems = config_schema.judge_problems(cfg)
    if problems:
        raise ConfigError(problems)


def read_pool(path: str | Path) -> list[dict]:
    """The pool's lines; a bad line (not a JSON object, ids that are not strings, a question
    or text that is not a string, a role or known grade out of place) is an error naming
    the file and line, before anything is sent."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise RecevalError(f"pool={path}: file not found; write one with receval pool RUNS --out {path}")
    records = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(handle, 1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
                ok = record.get("role") == "run" or (isinstance(record["question_id"], str)
                                                     and isinstance(record["id"], str))
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                ok = False
            if not ok or record.get("role", "hole") not in ROLES:
                raise RecevalError(
                    f"{path}:{number}: not a pool line; each is a JSON object with question_id, id, question, "
                    "text and role (hole, calibration or reference), as receval pool writes"
                )
            if record.get("role") == "support" and not (isinstance(record.get("nugget"), str)
                                                         and isinstance(record.get("nugget_text"), str)):
                raise RecevalError(
                    f"{path}:{number}: a support line names its nugget and nugget_text, as receval pool --nuggets writes"
                )
            for name in ("question", "text"):  # what is sent to a judge: text, never a number or a list
                if record.get(name) is not None and not isinstance(record[name], str):
                    raise RecevalError(
                        f"{path}:{number}: {name} is {cut(brief(record[name]))}, not text; a pool line's question "
                        "and text are strings, as receval pool writes"
                    )
            if record.get("role") == "calibration" or "known_grade" in record:
                grade = record.get("known_grade")
                if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
                    raise RecevalError(
                        f"{path}:{number}: known_grade {cut(brief(grade))} is not a grade; a calibration line's "
                        f"known_grade is an integer from 0 to {MAX_GRADE}, as receval pool writes"
                    )
            if problem := design_problem(record):
                raise RecevalError(f"{path}:{number}: {problem}, as receval pool --budget writes")
            records.append(record)
    return records


def agreement_path(out: Path) -> Path:
    return out.with_name(out.name + ".agreement.json")


def pair_counts(judge, verdicts: list[tuple[int | None, dict]]) -> failures.Counts | None:
    """The remote judge's counts for the one failure rule (:mod:`receval.clients.failures`);
    None for a judge that sends no request (``oneshot``)."""
    if "requests_sent" not in judge.usage:
        return None
    usable = sum(grade is not None for grade, _ in verdicts)
    return failures.Counts(
        step=f"receval.judge {judge.name}", sent=int(judge.usage["requests_sent"]), asked=len(verdicts),
        usable=usable, failed=len(verdicts) - usable, last_reason=getattr(judge, "last_reason", None), item="pair",
        replayed=int(judge.usage.get("replayed", 0)),
    )


def _supports(judge, records: list[dict], pool) -> tuple[list[dict], list[tuple[str | None, dict]]]:
    """The pool's support lines and each one's label (:mod:`.support`); they need a chat model."""
    to_support = [r for r in records if r.get("role") == "support"]
    if to_support and not hasattr(judge, "ask"):
        raise RecevalError(f"pool={pool}: its support lines (a nugget and a passage) need a chat model: judge=llm")
    return to_support, judge_support(judge, to_support) if to_support else []


def _support_lines(name: str, to_support: list[dict], supports: list[tuple[str | None, dict]]) -> list[dict]:
    """The labels lines of the support lines judged (a failed one is left out)."""
    return [{"question_id": r["question_id"], "id": r["id"], "nugget": r["nugget"], "support": label,
             "judge": name, **provenance} for r, (label, provenance) in zip(to_support, supports) if label is not None]


def _support_summary(asked: int, supported: list[dict]) -> dict:
    """The summary's ``support`` entry (none when the pool held no support line)."""
    if not asked:
        return {}
    return {"support": {"asked": asked, "labelled": len(supported),
                        "labels": dict(sorted(Counter(x["support"] for x in supported).items()))}}


def probe_path(out: Path) -> Path:
    return out.with_name(out.name + ".probe.json")


def run_judge(cfg) -> dict:
    """Judge ``cfg.pool`` with ``cfg.judge``; returns the summary written beside the labels."""
    check_config(cfg)
    notices.clear()  # this job says what its own answers held
    inputs = [cfg.pool, *([cfg.reference] if cfg.reference else []),
              *([cfg.judge.path] if "path" in cfg.judge else [])]
    if Path(cfg.out).expanduser().is_file() and not cfg.force:
        raise RecevalError(f"out={cfg.out}: already exists; add force=true to replace it, or choose another name")
    out = outputs.check_output(cfg.out, force=True, protected_dirs=inputs, flag="out")
    side = outputs.check_output(agreement_path(out), force=cfg.force, protected_dirs=inputs,
                                flag="out's agreement file", force_flag="force=true")
    n_probes = int(cfg.judge.get("probe", 0) or 0)
    probe_file = outputs.check_output(probe_path(out), force=cfg.force, protected_dirs=inputs,
                                      flag="out's probe file", force_flag="force=true") if n_probes else None
    records = read_pool(cfg.pool)
    node = components.typed("judge", cfg.judge, "judge")
    judge = components.build("judge", node, components.Context(), "judge")
    references: dict[str, list[str]] = {}
    for r in records:
        if r.get("role") == "reference":
            references.setdefault(r["question_id"], []).append(r.get("text") or "")
    asked = [r for r in records if r.get("role", "hole") in ("hole", "calibration")]
    to_support, supports = _supports(judge, records, cfg.pool)
    probes = probe.build(records, n_probes, int(node.get("seed", 0) or 0)) if n_probes else []
    verdicts = judge.judge(asked + probes, references) if asked or probes or not to_support else []
    notices.say()
    counts = pair_counts(judge, verdicts + supports)
    check_graded(judge, counts, asked + probes, verdicts, out)
    verdicts, probed = verdicts[: len(asked)], verdicts[len(asked):]
    labels, calibration = graded(asked, verdicts, judge.name)
    supported = _support_lines(judge.name, to_support, supports)
    holes = sum(r.get("role", "hole") == "hole" for r in records)
    summary = {
        "pool": str(cfg.pool), "judge": judge.name,
        "config": without_keys(OmegaConf.to_container(node, resolve=True)),  # resolved: ${oc.env:...} too
        "holes": holes, "labelled": len(labels), "unlabelled": holes - len(labels),
        "grades": {str(g): sum(1 for x in labels if x["grade"] == g) for g in sorted({x["grade"] for x in labels})},
        "usage": dict(judge.usage), **_support_summary(len(to_support), supported),
    }
    if counts is not None:
        summary["counts"] = {"sent": counts.sent, "asked": counts.asked, "usable": counts.usable,
                             "failed": counts.failed, "last_reason": counts.last_reason, "replayed": counts.replayed}
    summary["config"].pop("api_key_env", None)
    if calibration[0]:
        summary["calibration"] = agreement(*calibration[:2]).to_dict()
        summary["calibration"]["by_length"] = [b.to_dict() for b in by_length(*calibration)]
    if cfg.reference:
        known = read_any_labels(str(cfg.reference), "reference")
        zero = str(cfg.reference_missing) == "zero"
        pairs = [(known.get(x["question_id"], {}).get(x["id"], 0), x["grade"]) for x in labels
                 if zero or x["id"] in known.get(x["question_id"], {})]
        summary["reference"] = {"path": str(cfg.reference), **agreement([k for k, _ in pairs], [g for _, g in pairs]).to_dict()}
    summary["circularity"] = circularity.notes(node, [r for r in records if r.get("role") == "run"])
    text = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in labels + supported)
    atomic_write(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    atomic_write(side, lambda tmp: tmp.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8"))
    if probe_file is not None:
        summary["probe"], summary["probe_file"] = write_probes(probe_file, probes, [grade for grade, _ in probed])
    summary["out"], summary["agreement_file"] = str(out), str(side)
    return summary


def write_probes(path: Path, probes: list[dict], grades: list[int | None]) -> tuple[dict, str]:
    """``<out>.probe.json``: the rates (:func:`receval.judge.probe.rates`) and each probe's grade."""
    rates = probe.rates(probes, grades)
    found = {**rates, "pairs": [{k: p[k] for k in ("kind", "question_id", "id", "source_question")} | {"grade": g}
                                for p, g in zip(probes, grades)]}
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8"))
    return rates, str(path)


def check_graded(judge, counts, asked: list[dict], verdicts: list, out: Path) -> None:
    """The failure rule (:mod:`receval.clients.failures`) for a remote judge; a local one
    that graded nothing fails the same way."""
    if counts is None and asked and all(grade is None for grade, _ in verdicts):
        raise RecevalError(
            f"receval.judge {judge.name}: graded none of the {len(asked)} pairs asked, so there is nothing to "
            "write: judge=oneshot grades a question's pairs only when the pool holds a known relevant unit for it "
            "(its reference lines: receval pool ... --calibrate N), judge=qrels only the pairs its file labels"
        )
    if counts is not None:
        failures.check(
            counts, fix="check judge.base_url, judge.model and that the model answers {\"grade\": n}, then rerun",
            kept=f"Nothing was written to {out}; the answers that came back are cached, so a rerun asks only for the rest",
        )


def graded(asked: list[dict], verdicts: list, name: str) -> tuple[list[dict], tuple[list, list, list]]:
    """The label lines of the graded holes (with their design fields), and the calibration
    pairs' known grades, judged grades and passage lengths in words."""
    labels: list[dict] = []
    calibration: tuple[list, list, list] = ([], [], [])
    for record, (grade, provenance) in zip(asked, verdicts):
        if grade is None:
            continue
        if record.get("role", "hole") == "calibration":
            calibration[0].append(int(record["known_grade"]))
            calibration[1].append(int(grade))
            calibration[2].append(len((record.get("text") or "").split()))
        else:
            design = {k: record[k] for k in DESIGN if k in record}
            labels.append({"question_id": record["question_id"], "id": record["id"], "grade": int(grade),
                           "judge": name, **provenance, **design})
    return labels, calibration


def summary_lines(summary: dict) -> list[str]:
    from receval.judge.agreement import Agreement, length_lines

    rates = ""
    if "probe" in summary:
        shown = {k: "-" if v["rate"] is None else f"{v['rate']:.2f}" for k, v in summary["probe"].items()}
        rates = f"; probes graded relevant: keyword {shown['keyword']}, instruction {shown['instruction']}"
    lines = [f"receval judge {summary['judge']}: {summary['labelled']} of {summary['holes']} holes labelled "
             f"(grades {summary['grades']}){rates}; wrote {summary['out']} and {summary['agreement_file']}"]
    if "support" in summary:
        found = summary["support"]
        lines.append(f"  nugget support: {found['labelled']} of {found['asked']} (nugget, unit) pairs labelled "
                     f"({found['labels']})")
    usage = summary["usage"]
    if "counts" in summary:
        counts = failures.Counts(step=summary["judge"], item="pair", **summary["counts"])
        failed = " (a rerun asks again)" if counts.failed else ""
        live = usage.get("live_cost_usd")
        asked_live = f" (${live:.4f} when asked live)" if counts.replayed and live and live > usage["cost_usd"] else ""
        lines.append(
            f"  {counts.line()}{failed}; tokens in {int(usage['input_tokens'])}, out {int(usage['output_tokens'])}"
            f"{' (estimated)' if usage['tokens_estimated'] else ''}; ${usage['cost_usd']:.4f} this run{asked_live}"
        )
    if "probe" in summary:
        lines.append(probe.line(summary["probe"]) + f"; wrote {summary['probe_file']}")
    for key, what in (("calibration", "the calibration sample's known labels"), ("reference", "the reference labels")):
        if key in summary:
            found = {k: v for k, v in summary[key].items() if k not in ("path", "by_length")}
            lines += Agreement(**found).lines(what)
            lines += length_lines(summary[key].get("by_length", []))
    lines += [f"  {note}" for note in summary.get("circularity", [])]
    return lines
