"""Statistics over per-question arrays, pure functions on numpy arrays and small
dataclasses: :mod:`.bootstrap` (intervals over questions), :mod:`.pairing` (many
intervals from one bootstrap call, aligning ids, the fixed/broken rule), :mod:`.holm`
(multiple comparisons), :mod:`.noninferiority` (shown not worse), :mod:`.power` (how
many questions a comparison needs), :mod:`.cheaper` (the selection's cost order and
tie rule), :mod:`.gate` (the regression gate's verdict). Nothing here reads a run."""
