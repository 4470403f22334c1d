"""One judging job: read the pool, judge its holes and calibration pairs, write the labels
JSONL and the agreement beside it (``<out>.agreement.json``).

Labels lines: ``{"question_id", "id", "grade", "judge", ...provenance}`` for every hole
the judge graded (a hole it could not grade is left out and counted). Calibration pairs
are judged blind (the judge never sees ``known_grade``) and compared with it; with
``reference=FILE`` the graded holes are also compared with that file's labels (a hole
the file lacks is skipped, or with ``reference_missing=zero`` compared as grade 0). Both
agreements (:mod:`.agreement`), the judge's calls, tokens and money are written to the
agreement file and printed. The output never replaces the pool or the reference, and
an existing ``out`` only with ``force=true``.
"""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import OmegaConf

from receval import components
from receval.clients import failures
from receval.core import notices, outputs
from receval.core.errors import ConfigError, RecevalError
from receval.core.io import atomic_write
from receval.core.secrets import brief, cut, without_keys
from receval.datasets import MAX_GRADE
from receval.judge.agreement import agreement
from receval.results.judgments import read_any_labels

ROLES = ("hole", "calibration", "reference")


def check_config(cfg) -> None:
    """Keys, ranges and the judge's own checks, before anything is read or sent."""
    from receval import config as config_schema

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
                ok = isinstance(record["question_id"], str) and isinstance(record["id"], str)
            except (ValueError, KeyError, TypeError, RecursionError):
                ok = False
            if not ok or record.get("role", "hole") not in ROLES:
                raise RecevalError(
                    f"{path}:{number}: not a pool line; each is a JSON object with question_id, id, question, "
                    "text and role (hole, calibration or reference), as receval pool writes"
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
    records = read_pool(cfg.pool)
    node = components.typed("judge", cfg.judge, "judge")
    judge = components.build("judge", node, components.Context(), "judge")
    references: dict[str, list[str]] = {}
    for r in records:
        if r.get("role") == "reference":
            references.setdefault(r["question_id"], []).append(r.get("text") or "")
    asked = [r for r in records if r.get("role", "hole") in ("hole", "calibration")]
    verdicts = judge.judge(asked, references)
    notices.say()
    counts = pair_counts(judge, verdicts)
    if counts is None and asked and all(grade is None for grade, _ in verdicts):  # a local judge: the same rule
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
    labels, calibration = [], ([], [])
    for record, (grade, provenance) in zip(asked, verdicts):
        if grade is None:
            continue
        if record.get("role", "hole") == "calibration":
            calibration[0].append(int(record["known_grade"]))
            calibration[1].append(int(grade))
        else:
            labels.append({"question_id": record["question_id"], "id": record["id"], "grade": int(grade),
                           "judge": judge.name, **provenance})
    holes = sum(r.get("role", "hole") == "hole" for r in records)
    summary = {
        "pool": str(cfg.pool), "judge": judge.name,
        "config": without_keys(OmegaConf.to_container(node, resolve=True)),  # resolved: ${oc.env:...} too
        "holes": holes, "labelled": len(labels), "unlabelled": holes - len(labels),
        "grades": {str(g): sum(1 for x in labels if x["grade"] == g) for g in sorted({x["grade"] for x in labels})},
        "usage": dict(judge.usage),
    }
    if counts is not None:
        summary["counts"] = {"sent": counts.sent, "asked": counts.asked, "usable": counts.usable,
                             "failed": counts.failed, "last_reason": counts.last_reason, "replayed": counts.replayed}
    summary["config"].pop("api_key_env", None)
    if calibration[0]:
        summary["calibration"] = agreement(*calibration).to_dict()
    if cfg.reference:
        known = read_any_labels(str(cfg.reference), "reference")
        zero = str(cfg.reference_missing) == "zero"
        pairs = [(known.get(x["question_id"], {}).get(x["id"], 0), x["grade"]) for x in labels
                 if zero or x["id"] in known.get(x["question_id"], {})]
        summary["reference"] = {"path": str(cfg.reference), **agreement([k for k, _ in pairs], [g for _, g in pairs]).to_dict()}
    text = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in labels)
    atomic_write(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    atomic_write(side, lambda tmp: tmp.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8"))
    summary["out"], summary["agreement_file"] = str(out), str(side)
    return summary


def summary_lines(summary: dict) -> list[str]:
    from receval.judge.agreement import Agreement

    lines = [f"receval judge {summary['judge']}: {summary['labelled']} of {summary['holes']} holes labelled "
             f"(grades {summary['grades']}); wrote {summary['out']} and {summary['agreement_file']}"]
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
    for key, what in (("calibration", "the calibration sample's known labels"), ("reference", "the reference labels")):
        if key in summary:
            found = {k: v for k, v in summary[key].items() if k != "path"}
            lines += Agreement(**found).lines(what)
    return lines
