"""The thin Hydra shell of ``receval traces`` (also ``python -m receval.traces``): import
OpenInference retriever spans, exported one JSON span a line, as a stored run that every
read command takes (``report --show Q`` prints each question's calls). Composes
``conf/traces.yaml``, calls :func:`receval.traces.import_traces` on the run folder,
prints what it did.

Exit status 0 when the run was written (spans that matched no question are counted,
named on stderr and in run.json), 2 for every user error: a bad config value, a
missing file, a line that is not a span, traces that match no question of the dataset
(nothing is written), and a config Hydra cannot compose.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hydra.core.hydra_config import HydraConfig

from receval.cli.run import hydra_command, hydra_saved
from receval.results.claim import taken
from receval.traces.config import register_traces
from receval.traces.job import check_config, import_traces, notes, summary_line


def import_one(cfg) -> None:
    saved = hydra_saved(cfg)
    check_config(cfg)
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    with taken(run_dir) as claim:  # held before the import starts: a second import into it is refused
        summary = import_traces(cfg, run_dir, claim, saved)
    for line in notes(summary):
        print(f"receval: note: {line}", file=sys.stderr)
    print(summary_line(summary), flush=True)


register_traces()
main = hydra_command("traces", import_one)

if __name__ == "__main__":
    main()
