"""The thin Hydra shell of ``receval synth``: compose ``conf/synth.yaml``,
call :func:`receval.synth.generate`.

Exit status 0 when the job ran to the end (units that failed are listed on stderr
and in the summary; a rerun retries them), 2 for every user error: a bad config
value, a wrong key, URL or model, an unreachable server, too many failures in a row,
a refused set (mostly near-duplicate or empty questions), and a config Hydra cannot
compose.
"""

from __future__ import annotations

from receval.run import config as config_schema
from receval.cli.run import hydra_command
from receval.synth.job import generate, summary_line


def generate_one(cfg) -> None:
    print(summary_line(generate(cfg)), flush=True)


config_schema.register_synth()
main = hydra_command("synth", generate_one)

if __name__ == "__main__":
    main()
