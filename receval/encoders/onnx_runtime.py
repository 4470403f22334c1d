"""A local sentence-transformers model run by onnxruntime, int8-quantised (``backend=onnx``).

The first use exports the model's transformer to ONNX with torch's exporter (offline,
from the same files :mod:`.local` loads, with the plain "eager" attention so the graph
has the textbook pattern), fuses it with onnxruntime's transformer optimizer (one
``Attention`` op per layer and the embedding LayerNorm; see :func:`_fuse`), quantises the
weights of its matrix products and fused attention projections to int8 with
onnxruntime's dynamic quantisation (per output channel; see :func:`_float_nodes` for
the two left in float32), and keeps the result in
``<cache_dir>/onnx/<name>-<hash of the model identity and EXPORT>/model-int8.onnx``
(the system's temporary folder when the cache is off);
later runs load that file and need neither torch nor sentence-transformers. Encoding
repeats what sentence-transformers does for these models: the model's own tokenizer
(``tokenizer.json``, truncated at ``max_seq_length``), mean pooling over the
attention mask, L2 normalisation. Texts are encoded in batches of similar token
counts (sorted longest first) so little padding is computed. Quantisation moves vectors a
little: cosines with the torch vectors are >= 0.99 (tests check it on the built-in
sections), so the cache keeps these vectors apart from the torch ones.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import tempfile
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from pathlib import Path

import numpy as np

from receval.encoders.base import normalize
from receval.encoders.local import LocalModel, resolve_local_model
from receval.core.errors import ConfigError
from receval.core.progress import Progress
from receval.core.io import atomic_write

EXPORT = 3  # bump when the export or quantisation recipe changes
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
INSTALL_HINT = "install the onnx extra: pip install 'receval[onnx]'"
EXPORT_HINT = (
    "exporting the model to ONNX (once; the result is cached) needs torch and transformers: "
    "pip install torch==2.13.0, then pip install 'receval[dense]'"
)
RUN_BATCH = 32  # texts per onnxruntime call at most: on 2 cores 32 ran ~10% faster than 64
_SESSIONS: dict[str, object] = {}  # one session per model file per process


def _require(*modules: str, hint: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"retriever.backend=onnx needs {', '.join(missing)}, which is not installed: {hint}")


def _transformer_config(model: LocalModel) -> int:
    """``max_seq_length``, after checking the model is a transformer + mean pooling + normalize."""
    try:
        modules = json.loads((model.path / "modules.json").read_text(encoding="utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling = next(m for m in modules if m["type"].endswith("Pooling"))
        mean = json.loads((model.path / pooling["path"] / "config.json").read_text(encoding="utf-8"))
        about = json.loads((model.path / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, StopIteration):
        kinds, mean, about = [], {}, {}
    if (
        kinds != ["Transformer", "Pooling", "Normalize"]
        or modules[0].get("path") not in ("", ".")
        or not mean.get("pooling_mode_mean_tokens")
        or not (model.path / "tokenizer.json").is_file()
    ):
        raise ConfigError(
            f"retriever.backend=onnx runs models made of a transformer, mean pooling and "
            f"normalisation with a tokenizer.json; {model.path} is not one: use retriever.backend=local"
        )
    return int(about.get("max_seq_length") or 512)


def _float_nodes(path: Path) -> list[str]:
    """Nodes left in float32: the feed-forward output projections of the first two layers.

    Measured on the built-in sections (all-MiniLM-L6-v2, fused graph, batches of 8 to
    32): with every weight product in int8 the lowest cosine with the torch vectors is
    0.989; keeping layer 0's in float32 gives 0.990-0.992, layers 0 and 1 0.991-0.993,
    at the cost of 2 of the 24 weight products (a fused attention projection counts as one).
    """
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    return [n.name for n in graph.node if n.op_type == "MatMul" and _FLOAT_NODE.search(n.name)]


_FLOAT_NODE = re.compile(r"layer\.[01]/output/dense/MatMul$")
FLOAT = 1  # onnx.TensorProto.FLOAT: the type of the fused ops' outputs, which shape inference misses


def _fuse(source: Path, target: Path, config) -> None:
    """Fuse the exported graph with onnxruntime's BERT optimizer: one ``Attention`` op per
    layer and the embedding LayerNorm, leaving residual adds, LayerNorms and GELUs apart.

    On this 2-core CPU the fused int8 graph encodes about 3x faster than the unfused
    one, whose attention is a chain of small ops; unfused, int8 barely beat torch.
    ``SkipLayerNormalization`` is left out: onnxruntime 1.32's CPU kernel runs at about
    150 M values/s against 740 M for ``Add`` + ``LayerNormalization`` (32 x 186 x 384,
    one thread), and it took 17% of encoding; with ``BiasGelu`` left out as well the bias
    joins the int8 product before it. Together: 1.35x faster (:data:`UNFUSED` keeps
    the session from fusing them back). Patterns the optimizer does not recognise are
    left as they are (still correct).
    """
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    heads, hidden = getattr(config, "num_attention_heads", 0), getattr(config, "hidden_size", 0)
    options = FusionOptions("bert")
    options.enable_skip_layer_norm = options.enable_bias_skip_layer_norm = options.enable_bias_gelu = False
    optimize_model(
        str(source), model_type="bert", num_heads=heads, hidden_size=hidden, optimization_options=options
    ).save_model_to_file(str(target))


UNFUSED = ["SkipLayerNormFusion", "BiasGeluFusion"]  # onnxruntime's session optimizers that would undo _fuse's choice


def open_session(path: Path, optimized: Path | None = None):
    """An onnxruntime session on one core (``encode`` runs batches side by side) that keeps
    :func:`_fuse`'s choices; ``optimized`` saves the graph the session actually runs."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    if optimized is not None:
        options.optimized_model_filepath = str(optimized)
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"], disabled_optimizers=UNFUSED)


class OnnxEncoder:
    """The int8 ONNX copy of a local model; ``identity`` keeps its vectors apart in the cache."""

    api_calls = 0

    def __init__(self, model: str, cache_dir: str | Path | None, batch_size: int = 64, threads: int | None = None):
        if batch_size < 1:
            raise ConfigError(f"retriever.batch_size={batch_size}: use an integer >= 1 (texts per batch)")
        _require("onnxruntime", "tokenizers", hint=INSTALL_HINT)
        self.model_info = resolve_local_model(model, need=())
        self.max_length = _transformer_config(self.model_info)
        self.batch_size = int(batch_size)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        self.threads = int(threads or cores or 1)  # batches run at once, one core each
        self.label = self.model_info.label
        self.identity = {**self.model_info.identity, "backend": "onnx", "export": EXPORT, "opset": OPSET}
        blob = json.dumps(self.identity, sort_keys=True).encode()
        root = Path(cache_dir) if cache_dir is not None else Path(tempfile.gettempdir()) / "receval"
        self.folder = root / "onnx" / f"{self.label}-{hashlib.sha256(blob).hexdigest()[:16]}"
        self._session = self._tokenizer = None

    def __repr__(self) -> str:
        return f"OnnxEncoder({str(self.model_info.path)!r}, folder={str(self.folder)!r})"

    @property
    def path(self) -> Path:
        return self.folder / "model-int8.onnx"

    def load(self) -> None:
        """Export and quantise once (cached), then open an onnxruntime session."""
        if self._session is not None:
            return
        from tokenizers import Tokenizer

        if not self.path.is_file():
            self._export()
        key = str(self.path)
        if key not in _SESSIONS:
            try:
                _SESSIONS[key] = open_session(self.path)
            except Exception as error:  # a damaged file: export it again
                self.path.unlink(missing_ok=True)
                raise ConfigError(f"{self.path}: not a usable ONNX model ({error}); removed, run again to rebuild it") from None
        self._session = _SESSIONS[key]
        tokenizer = Tokenizer.from_file(str(self.model_info.path / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=self.max_length)
        self._pad_id = tokenizer.padding["pad_id"] if tokenizer.padding else 0
        tokenizer.no_padding()  # padded per batch in _batch
        self._tokenizer = tokenizer

    def _export(self) -> None:
        _require("torch", "transformers", hint=EXPORT_HINT)
        with Progress(f"exporting {self.label} to ONNX (int8), once"):
            import torch
            from onnxruntime.quantization import QuantType, quantize_dynamic
            from transformers import AutoModel

            from transformers.utils import logging as hf_logging

            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            hf_logging.disable_progress_bar()
            base = AutoModel.from_pretrained(str(self.model_info.path), attn_implementation="eager").eval()

            class Hidden(torch.nn.Module):  # keyword call: positional order differs across versions
                def __init__(self, inner):
                    super().__init__()
                    self.inner = inner

                def forward(self, input_ids, attention_mask, token_type_ids):
                    out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
                    return out.last_hidden_state

            example = torch.ones((2, 8), dtype=torch.long)
            self.folder.mkdir(parents=True, exist_ok=True)
            fp32 = self.folder / f"model-fp32-{os.getpid()}.onnx"
            axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
            try:
                with warnings.catch_warnings(), torch.no_grad():
                    warnings.simplefilter("ignore")
                    torch.onnx.export(
                        Hidden(base), (example, example, torch.zeros_like(example)), str(fp32),
                        input_names=list(INPUTS), output_names=["last_hidden_state"], dynamic_axes=axes,
                        opset_version=OPSET, dynamo=False,
                    )
                logging.disable(logging.WARNING)  # onnxruntime's "consider pre-processing" advice
                try:
                    _fuse(fp32, fp32, base.config)
                    atomic_write(self.path, lambda tmp: quantize_dynamic(
                        str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                        op_types_to_quantize=["MatMul", "Attention"], nodes_to_exclude=_float_nodes(fp32),
                        extra_options={"MatMulConstBOnly": True, "DefaultTensorType": FLOAT},
                    ))
                finally:
                    logging.disable(logging.NOTSET)
            finally:
                fp32.unlink(missing_ok=True)
            about = self.folder / "model.json"
            text = json.dumps(self.identity, indent=2, sort_keys=True) + "\n"
            atomic_write(about, lambda tmp: tmp.write_text(text, encoding="utf-8"))

    def encode(self, texts: list[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Tokenise all texts once, then run batches of texts with the same or nearly the same
        number of tokens (sorted by token count, longest first), so almost no padding is computed.
        Batches hold ``batch_size`` texts but at most :data:`RUN_BATCH`, which suits onnxruntime;
        ``threads`` batches (default: one per core) run at once, each on one core: on a shared
        2-core machine that beat one batch on two cores (no waiting for the slower core)."""
        self.load()
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        encoded = self._tokenizer.encode_batch(texts)  # truncated, not padded
        lengths = np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(encoded))
        order = np.argsort(-lengths, kind="stable")
        step = min(self.batch_size, RUN_BATCH)
        batches = [order[start : start + step] for start in range(0, len(texts), step)]
        parts = []
        with ThreadPoolExecutor(self.threads) as pool:  # onnxruntime releases the GIL while it runs
            for chosen, part in zip(batches, pool.map(lambda b: self._batch([encoded[i].ids for i in b], lengths[b]), batches)):
                parts.append(part)
                if on_progress:
                    on_progress(len(chosen))
        vectors = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        vectors[order] = np.concatenate(parts)
        return vectors

    def _batch(self, ids: list[list[int]], lengths: np.ndarray) -> np.ndarray:
        """Mean-pooled, normalised vectors of one batch of token ids (padded here, on the right)."""
        mask = np.arange(int(lengths.max()))[None, :] < lengths[:, None]
        tokens = np.full(mask.shape, self._pad_id, dtype=np.int64)
        tokens[mask] = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
        mask = mask.astype(np.int64)  # single texts: every token type is 0
        feed = {"input_ids": tokens, "attention_mask": mask, "token_type_ids": np.zeros_like(tokens)}
        (hidden,) = self._session.run(None, feed)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalize(pooled)
