"""LanceDB as the search backend: ``retriever=lancedb`` (needs ``pip install 'receval[lancedb]'``).

The run's chunks and their embeddings (the same encoders and embedding cache as
``dense``: :func:`receval.retrievers.dense.shared_dense`) go into a LanceDB table in
the cache folder, keyed by content (vectors, texts) and index settings, so a sweep
over search-time settings (``nprobes``, ``ef``) builds it once; the table is
written to a temporary folder and renamed into place, so parallel jobs never see
half a table.

- ``search=vector``: nearest chunks by dot product of unit vectors (= cosine), score
  ``1 - distance``; with ``index=none`` it is exact, so it ranks exactly as ``dense``;
- ``search=fts``: LanceDB's own full-text index (BM25) on the chunk texts;
- ``search=hybrid``: LanceDB's hybrid search (vector + full text, its default
  reciprocal-rank reranker).

``index=ivf_pq`` / ``ivf_hnsw_sq`` build an approximate index (``partitions``,
``sub_vectors``; at search ``nprobes``, ``ef``, ``refine_factor``). Its price is
measured: for vector search, :meth:`LanceRetriever.facts` gives ``ann_recall@<depth>``,
the mean share of the exact top-depth chunks (numpy, the tie rule) that the ANN
ranking found; it goes into run.json.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Optional

import numpy as np

from receval.core.secrets import clip
from receval.run.components import Context, RetrieverConfig, component
from receval.core.errors import ConfigError
from receval.run.ranking import select_top
from receval.retrievers.dense import EncoderFields, shared_dense
from receval.retrievers.ranked import RankOnly, top_lists
from receval.schema import SHORTLIST, range_

INSTALL = "pip install 'receval[lancedb]'"
TABLE = "chunks"


class Search(StrEnum):
    vector = "vector"
    fts = "fts"
    hybrid = "hybrid"


class Index(StrEnum):
    none = "none"  # exact (flat) search
    ivf_pq = "ivf_pq"
    ivf_hnsw_sq = "ivf_hnsw_sq"


@dataclass
class LanceConfig(RetrieverConfig, EncoderFields):  # kind stays after the encoder's fields
    kind: str = "lancedb"
    search: Search = Search.vector
    index: Index = Index.none
    # IVF partitions (0: LanceDB's default, about sqrt(rows)); more than a million
    # partitions would hold about one vector each on any corpus receval reads
    partitions: int = field(default=0, metadata=range_(0, 1_000_000, hint="0: LanceDB's default"))
    # ivf_pq: PQ sub-vectors, at most one per dimension (0: LanceDB's default)
    sub_vectors: int = field(default=0, metadata=range_(0, 65_536, hint="0: LanceDB's default"))
    nprobes: int = field(default=20, metadata=range_(1, 1_000_000))  # IVF partitions searched per question
    # ivf_hnsw_sq: candidate list size at search (0: LanceDB's default)
    ef: int = field(default=0, metadata=range_(0, 1_000_000, hint="0: LanceDB's default"))
    # re-score refine_factor * k candidates exactly
    refine_factor: Optional[int] = field(default=None, metadata=range_(1, 1000, null="no exact re-scoring"))
    pool: int = field(default=100, metadata=range_(*SHORTLIST))  # results asked per question when fused or re-ranked

    def problems(self) -> list[str]:
        problems = super().problems()
        if self.search == Search.fts and self.index != Index.none:
            problems.append(f"index={self.index}: an ANN index serves vector or hybrid search, not search=fts")
        return problems

    @staticmethod
    def describe(node) -> str:
        index = "" if str(node.index) == "none" else f", {node.index}"
        return f"lancedb ({node.search}{index})"


def _lancedb():
    os.environ.setdefault("LANCE_LOG", "error")  # its deprecation chatter is not the user's business
    try:
        import lancedb
    except ImportError:
        raise ConfigError(f"retriever=lancedb needs the lancedb package, which is not installed: {INSTALL}") from None
    logging.getLogger("lancedb").setLevel(logging.ERROR)
    return lancedb


class LanceRetriever(RankOnly):
    def __init__(self, node, context: Context):
        super().__init__("lancedb", context, int(node.pool))
        _lancedb()  # a missing extra is reported before anything runs
        self.node = node
        self.search_kind = str(node.search)
        self.dense = shared_dense(node, context) if self.search_kind != "fts" else None
        self.table = None
        self._temp: tempfile.TemporaryDirectory | None = None
        self.asked: list[tuple[np.ndarray, np.ndarray]] = []  # (question vectors, ANN top idx) per call

    @property
    def api_calls(self) -> int:
        return self.dense.api_calls if self.dense is not None else 0

    @property
    def asks_per_question(self) -> bool:
        return self.dense is not None and self.dense.asks_per_question

    @property
    def truncated(self) -> int | None:
        """Chunks the dense model cut at its token limit (run.json ``truncated``)."""
        return self.dense.truncated if self.dense is not None else None

    def encoder_threads(self) -> int | None:
        return self.dense.encoder_threads() if self.dense is not None else None

    def table_dir(self, vectors: np.ndarray, texts: list[str]) -> Path:
        """The folder of this content's table with this index (built once)."""
        node = self.node
        digest = hashlib.sha256(np.ascontiguousarray(vectors).tobytes())
        for text in texts:
            digest.update(text.encode("utf-8") + b"\0")
        index = {"index": str(node.index), "partitions": int(node.partitions), "sub_vectors": int(node.sub_vectors)}
        digest.update(repr(sorted(index.items())).encode())
        if self.context.cache_dir is None:
            self._temp = tempfile.TemporaryDirectory(prefix="receval-lancedb-")
            root = Path(self._temp.name)
        else:
            root = Path(self.context.cache_dir) / "lancedb"
        return root / digest.hexdigest()[:32]

    def index(self, records, texts: list[str]) -> None:
        lancedb = _lancedb()
        import pyarrow as pa

        if self.dense is not None:
            self.dense.fit(texts, self.tie_rank)
            vectors = self.dense.chunk_vectors
        else:
            vectors = np.zeros((len(texts), 1), dtype=np.float32)
        where = self.table_dir(vectors, texts)
        if not (where / "done").exists():
            where.parent.mkdir(parents=True, exist_ok=True)
            building = Path(tempfile.mkdtemp(prefix=".building-", dir=where.parent))
            db = lancedb.connect(str(building))
            dim = vectors.shape[1]
            data = pa.table({
                "idx": pa.array(np.arange(len(texts), dtype=np.int32)),
                "text": pa.array(texts, pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), dim),
            })
            table = db.create_table(TABLE, data)
            self.build_indexes(table)
            (building / "done").touch()
            try:
                building.rename(where)
            except OSError:  # another job built it first
                shutil.rmtree(building, ignore_errors=True)
        self.table = lancedb.connect(str(where)).open_table(TABLE)

    def build_indexes(self, table) -> None:
        node = self.node
        from lancedb.index import FTS

        table.create_index("text", config=FTS())
        if str(node.index) == "none":
            return
        try:
            table.create_index("vector", config=ann_index(node))
        except Exception as error:  # LanceDB's own message names the problem (e.g. too few rows)
            raise ConfigError(
                f"retriever.index={node.index}: LanceDB could not build it: {clip(str(error).splitlines()[0], 200)}"
            ) from None

    def query(self, question: str, vector: np.ndarray | None, k: int):
        node = self.node
        if self.search_kind == "fts":
            return self.table.search(question, query_type="fts").limit(k).to_arrow(), "_score"
        if self.search_kind == "hybrid":
            builder = self.table.search(query_type="hybrid").vector(vector).text(question)
            return builder.limit(k).to_arrow(), "_relevance_score"
        return vector_search(self.table, vector, k, node), "_distance"

    def answer(self, questions: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        vectors = None
        if self.dense is not None:
            vectors = np.asarray(self.dense.encoder.encode(list(questions)), dtype=np.float32)
            self.dense.questions_encoded += len(questions)
        answers = []
        for i, question in enumerate(questions):
            found, column = self.query(question, None if vectors is None else vectors[i], k)
            idx = found["idx"].to_numpy()
            values = found[column].to_numpy().astype(np.float64)
            scores = 1.0 - values if column == "_distance" else values
            answers.append([(int(c), s) for c, s in zip(idx, scores)])
        top = top_lists(answers, None, self.tie_rank, k, "lancedb", questions)
        if self.search_kind == "vector" and str(self.node.index) != "none":
            self.asked.append((vectors, top[0]))  # for ann_recall, computed after the timed search
        return top

    def facts(self) -> dict:
        """``ann_recall@<k>`` (:func:`ann_recall`) for each k asked (the run's depth; ``pool`` when fused)."""
        shares: dict[int, list[np.ndarray]] = {}
        chunks = self.dense.chunk_vectors if self.dense is not None else None
        for vectors, found in self.asked:
            shares.setdefault(found.shape[1], []).append(ann_recall(vectors, chunks, found, self.tie_rank))
        return {f"ann_recall@{k}": float(np.mean(np.concatenate(parts))) for k, parts in sorted(shares.items())}


def ann_index(node):
    """LanceDB's index config for ``node.index`` (ivf_pq, ivf_hnsw_sq; dot product on unit
    vectors), with ``partitions`` and ``sub_vectors`` (0: LanceDB's defaults)."""
    from lancedb.index import IvfHnswSq, IvfPq

    options = {"distance_type": "dot", "num_partitions": int(node.partitions) or None}
    if str(node.index) == "ivf_pq":
        return IvfPq(**options, num_sub_vectors=int(node.sub_vectors) or None)
    return IvfHnswSq(**options)


def vector_search(table, vector: np.ndarray, k: int, node):
    """The ``k`` nearest rows to ``vector`` by dot product (an Arrow table with ``_distance``),
    through the ANN index with ``node``'s search settings when ``node.index`` names one."""
    builder = table.search(vector).distance_type("dot").limit(k)
    if str(node.index) != "none":
        builder = builder.nprobes(int(node.nprobes))
        if node.ef:
            builder = builder.ef(int(node.ef))
        if node.refine_factor:
            builder = builder.refine_factor(int(node.refine_factor))
    return builder.to_arrow()


def ann_recall(vectors: np.ndarray, chunks: np.ndarray, found: np.ndarray, tie_rank: np.ndarray) -> np.ndarray:
    """Per question, the share of its exact top k chunks (``vectors @ chunks.T``, numpy, the tie
    rule; k = ``found``'s width) that the ANN ranking ``found`` (Q, k; -1 padded) holds."""
    exact, _ = select_top(vectors @ chunks.T, found.shape[1], tie_rank, floor=None)
    hit = ((found[:, :, None] == exact[:, None, :]) & (exact[:, None, :] >= 0)).any(axis=1)
    return hit.sum(axis=1) / np.maximum((exact >= 0).sum(axis=1), 1)


@component("retriever", "lancedb", LanceConfig)
def build_lancedb(node, context: Context) -> LanceRetriever:
    return LanceRetriever(node, context)
