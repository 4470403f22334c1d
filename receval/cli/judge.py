"""The thin Hydra shell of ``receval judge``: compose ``conf/judge.yaml``, call
:func:`receval.judge.job.run_judge`, print what it did.

Exit status 0 when the pool was judged (holes the judge could not grade are counted and
left out; a rerun retries them), 2 for every user error (a bad key or value, a missing
pool, an unreachable server).
"""

from __future__ import annotations

from receval.run import config as config_schema
from receval.cli.run import hydra_command
from receval.judge.job import run_judge, summary_lines


def judge_one(cfg) -> None:
    for line in summary_lines(run_judge(cfg)):
        print(line, flush=True)


config_schema.register_judge()
main = hydra_command("judge", judge_one)

if __name__ == "__main__":
    main()
