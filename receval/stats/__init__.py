"""Statistics over per-question arrays, pure functions on numpy arrays and small
dataclasses: :mod:`.bootstrap` (intervals over questions), :mod:`.pairing` (many
intervals from one bootstrap call, aligning ids, the fixed/broken rule), :mod:`.holm`
(multiple comparisons), :mod:`.noninferiority` (shown not worse), :mod:`.power` (how
many questions a comparison needs), :mod:`.cheaper` (the selection's cost order and
tie rule), :mod:`.gate` (the regression gate's verdict); :mod:`.significance` (paired
randomization, t and bootstrap p-values), :mod:`.corrections` (Holm, BH, MaxT over a
family of pairs), :mod:`.effects` (Hedges' g_z with its interval), :mod:`.detectable`
(the minimum detectable difference and questions needed), :mod:`.ranks` (rank intervals
over questions), :mod:`.calibration` (A/A type I rates), :mod:`.pairwise` (all of these
for each shown pair from one score matrix), :mod:`.meta` (a difference pooled over
collections: fixed effect, DerSimonian-Laird random effects), :mod:`.suite` (mean over
collections, Borda count and rank intervals by a two-level bootstrap), :mod:`.quantiles`
(a latency quantile with its order-statistic interval). Nothing here reads a run."""
