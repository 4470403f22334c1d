"""The measure families receval ships, each declared once (:class:`~receval.scoring.family.Family`),
in the order runs store them and the reference page lists them: the ranking measures over
units (formulas: :mod:`receval.scoring.measures`), then the measures of the text sent
over chunks (formulas: :mod:`receval.scoring.chunks`)."""

from __future__ import annotations

from receval.scoring import chunks, measures
from receval.scoring.family import CHUNKS, Family

_BUDGET = {"at_budget": True}
_CHUNK = {"reads": CHUNKS, "at_budget": True}

SHIPPED: tuple[Family, ...] = (
    Family("rr", measures.reciprocal_rank, label="MRR", at_depth=True, at_k=False, aliases=("mrr",),
           trec_eval=("recip_rank",), no_cutoff=" here: it is MRR@depth (set depth instead)", **_BUDGET,
           help="How soon the first relevant unit comes; its mean is MRR. `rr@k` (MRR@k) is derived from "
                "the stored first relevant rank."),
    Family("hit", measures.hit, trec_eval=("success_{k}",), **_BUDGET,
           help="Whether any of the first k units is relevant (success@k)."),
    Family("recall", measures.recall, trec_eval=("recall_{k}",), **_BUDGET,
           help="The share of the question's relevant units found in the first k."),
    Family("precision", measures.precision, trec_eval=("P_{k}",), **_BUDGET,
           help="The share of the first k ranks that hold a relevant unit."),
    Family("ndcg", measures.ndcg, label="nDCG", trec_eval=("ndcg_cut_{k}",), **_BUDGET,
           help="The graded gain of the first k units, discounted by rank, against the best order of the labels."),
    Family("ap", measures.average_precision, label="MAP", at_depth=True, aliases=("map",),
           trec_eval=("map", "map_cut_{k}"), **_BUDGET,
           help="Precision averaged over the ranks of the relevant units; its mean is MAP."),
    Family("rprec", measures.r_precision, label="R-prec", at_depth=True, at_k=False, trec_eval=("Rprec",),
           help="Precision at R, R the question's number of relevant units."),
    Family("bpref", measures.bpref, at_depth=True, at_k=False, trec_eval=("bpref",),
           help="How rarely judged non-relevant units come before the relevant ones (for incomplete judgements)."),
    Family("judged", measures.judged_share,
           help="The share of the first k ranks the labels judge at all: how much of a run its other measures "
                "can see (trec_eval: its -J judged-only count at k / k)."),
    Family("token_recall", chunks.token_recall, needs="evidence", **_CHUNK,
           help="The share of the units' tokens the first k chunks hold."),
    Family("token_precision", chunks.token_precision, needs="evidence", **_CHUNK,
           help="The share of the text sent that is the units' text."),
    Family("token_iou", chunks.token_iou, needs="evidence", **_CHUNK,
           help="The overlap of the text sent and the units' text (intersection over union)."),
    Family("context_tokens", chunks.context_tokens, better="lower", bounded=False, **_CHUNK,
           help="How many tokens the first k chunks send a generator."),
    Family("redundancy", chunks.redundancy, better="lower", needs="new", **_CHUNK,
           help="The share of the tokens sent that an earlier chunk already sent."),
    Family("alpha_ndcg", chunks.alpha_ndcg, label="alpha-nDCG", needs="novelty", **_CHUNK,
           help="nDCG over the question's units where a unit sent again earns less each time (diversity)."),
    Family("nugget_recall", chunks.nugget_recall, needs="nugget_at", own_nulls=True, **_CHUNK,
           help="The share of the question's nuggets the first k chunks support."),
    Family("vital_nugget_recall", chunks.vital_nugget_recall, needs="nugget_at", own_nulls=True, **_CHUNK,
           help="The share of the question's vital nuggets the first k chunks support."),
)
