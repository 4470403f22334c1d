"""``python -m receval.schema``: every number receval's configs hold, with its range
(Markdown; docs/pages/reference/ranges.md is this output)."""

from receval.run.config import ranges_table

print(ranges_table(), end="")
