"""Per-question measures beyond the ranked-list ones of :mod:`receval.run.metrics`: evidence
spans judged against the retrieved chunks (:mod:`.spans`, the token measures, with the
one coverage rule in :mod:`.coverage`), and how much of each question is copied from
its passage (:mod:`.overlap`, ROUGE precision); and what each question cost
(:mod:`.cost`: prices -> the ``cost_usd`` columns)."""
