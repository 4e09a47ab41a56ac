"""The decode engine of the local runtime: continuous batching, several requests decode together.

`DecodeEngine` owns one llama context per model with one KV stream per slot (`n_seq_max = slots`,
each as long as the model's window) and a scheduler thread; callers block in `submit`. A request
arrives already formatted by llama-cpp-python's chat handler (prompt tokens, grammar, stop strings,
max_tokens: see `completion.py`), so chat template, JSON-schema grammar and tokenization are those of
the serial path. The thread admits queued requests into free slots, reads their prompts, then
decodes the next token of every generating slot in one `llama_decode`, and per slot: logprobs from
the raw logits, the slot's own sampler chain (grammar, greedy), the stop rules of
`Llama._create_completion`.

What batching buys on a 2-core AVX2 CPU (`benchmarks/local_throughput.py`): reading a prompt is
arithmetic-bound and gains nothing; a decode step is partly bound by reading the weights, so a step
of 4 sequences costs about 2.9x a step of one on the 0.5B (1.4x the tokens per second) and less on
the 1.5B. Shared instruction prefixes are read once: a slot keeps the KV of its last prompt, and a
slot starting a prompt copies another slot's stream when that one holds a longer prefix of it.

Per-sequence KV streams, not one unified cache: with a unified cache every token's attention spans
the cells of all slots (and flash attention, which skips them, changes the serial path's numerics).
llama.cpp runs a multi-stream step (one `llama_batch` of tokens) as micro-batches of consecutive
sequence ids with equal token counts, so a step lists slots in id order and free slots are filled lowest id first.

Numerics: the repacked Q4_K kernels multiply 4 rows differently from 1, so a multi-slot decode gives
slightly different logits than a serial one (as the serial path's own logits depend on which prefix
its previous call left in the cache); with SmolLM2's Q4_1 weights replies and logprobs are identical.

Example:
    >>> engine = DecodeEngine(llama, slots=4)  # llama: a loaded llama_cpp.Llama (shares its weights)
    >>> out = engine.submit(prompt_tokens, max_tokens=64, sampler=llama._init_sampler(temp=0.0))
    >>> out.text, out.finish_reason, out.logprobs
"""

from __future__ import annotations

import collections
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

N_BATCH = 512  # prompt tokens per llama_decode (llama.cpp's n_batch), as the serial path's Llama(n_batch=512)
# copy another slot's KV stream when it holds at least this many more prompt tokens than the slot
# itself: llama.cpp copies whole streams (~115 MB for the 1.5B), which pays off beyond a few tokens
COPY_MIN_TOKENS = 16


class EngineError(RuntimeError):
    """The decode engine failed (llama_decode error); the requests in flight fail with it."""


class EngineClosedError(EngineError):
    """The engine was closed (at exit, or replaced by a bigger one) before it served the request."""


@dataclass
class EngineStats:
    """Cumulative counters of one engine (the benchmark reads differences of two snapshots)."""

    requests: int = 0
    prompt_tokens: int = 0  # prompt tokens of the requests
    reused_tokens: int = 0  # of which found in the KV cache already (shared prefix)
    copied_tokens: int = 0  # of those, copied from another slot's stream
    generated_tokens: int = 0
    prompt_steps: int = 0  # llama_decode calls that read prompt tokens (maybe with decode tokens too)
    prompt_step_s: float = 0.0
    decode_steps: int = 0  # llama_decode calls with generating slots only
    decode_step_s: float = 0.0
    decode_step_seqs: int = 0  # sum over decode-only steps of the slots they advanced
    sample_s: float = 0.0  # sampler chains (grammar, greedy)
    logprob_s: float = 0.0  # log-softmax and top-k of the raw logits
    bookkeeping_s: float = 0.0  # detokenizing, stop checks, step filling, admission
    busy_s: float = 0.0  # wall time with at least one request in a slot

    def since(self, mark: EngineStats) -> EngineStats:
        return EngineStats(**{k: getattr(self, k) - getattr(mark, k) for k in self.__dataclass_fields__})


@dataclass
class Completion:
    """One finished request: the reply text, why it stopped, token counts and per-token logprobs."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    logprobs: list[dict[str, Any]] | None
    reused_tokens: int = 0


@dataclass
class _Request:
    prompt: list[int]
    max_tokens: int
    stop: list[bytes]
    sampler: Any  # llama_cpp._internals.LlamaSampler, owned by this request
    top_logprobs: int | None  # None: no logprobs
    done: threading.Event = field(default_factory=threading.Event)
    completion: list[int] = field(default_factory=list)
    logprobs: list[dict[str, Any]] = field(default_factory=list)
    multibyte_fix: int = 0
    reused: int = 0
    result: Completion | None = None
    error: BaseException | None = None


class _Slot:
    def __init__(self, seq_id: int) -> None:
        self.seq_id = seq_id
        self.cached: list[int] = []  # tokens whose KV this slot's stream holds, in order
        self.request: _Request | None = None
        self.pending: list[int] = []  # prompt tokens still to read
        self.next_token: int | None = None  # sampled, to be fed on the next step
        self.fresh = False  # admitted, prompt not started: may borrow another slot's prefix first
        self.order = 0  # admission order: earlier prompts are read first


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class DecodeEngine:
    """A scheduler thread decoding the requests of up to `slots` callers together on one model."""

    def __init__(self, llama: Any, slots: int, *, n_ctx: int | None = None, n_batch: int = N_BATCH,
                 n_threads: int | None = None) -> None:
        import llama_cpp
        from llama_cpp import _internals

        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots}")
        self.llama = llama
        self.slots_n = slots
        self.n_ctx_seq = n_ctx or llama.n_ctx()
        self.n_batch = max(n_batch, slots)
        # the serial context's parameters (threads, batch sizes, no flash attention, RoPE/YaRN as
        # llama-cpp-python sets them), with one KV stream of the model's window per slot
        params = type(llama.context_params).from_buffer_copy(llama.context_params)
        params.n_ctx = self.n_ctx_seq * slots
        params.n_batch = self.n_batch
        params.n_ubatch = min(self.n_batch, llama.context_params.n_ubatch)
        params.n_seq_max = slots
        params.kv_unified = False
        if n_threads:
            params.n_threads = params.n_threads_batch = n_threads
        self._ctx = _internals.LlamaContext(model=llama._model, params=params, verbose=False)
        self._mem = llama_cpp.llama_get_memory(self._ctx.ctx)
        self._llama_batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        self._n_vocab = llama.n_vocab()
        self._vocab = llama._model.vocab
        self._slots = [_Slot(i) for i in range(slots)]
        self._queue: collections.deque[_Request] = collections.deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._admitted = 0
        self.stats = EngineStats()
        self._thread = threading.Thread(target=self._run, name="ragwatch-decode-engine", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------------------ public API
    def submit(self, prompt: list[int], *, max_tokens: int, sampler: Any, stop: list[bytes] | None = None,
               top_logprobs: int | None = None, timeout: float | None = None) -> Completion:
        """Queue one request and wait for its completion (raises `EngineError` if decoding failed)."""
        if len(prompt) >= self.n_ctx_seq:
            raise ValueError(f"Requested tokens ({len(prompt)}) exceed context window of {self.n_ctx_seq}")
        if not prompt:
            raise ValueError("the prompt has no tokens")
        if max_tokens is None or max_tokens <= 0:
            max_tokens = self.n_ctx_seq - len(prompt)
        # as llama-cpp-python: a reply never runs past the window
        max_tokens = min(max_tokens, self.n_ctx_seq - len(prompt))
        request = _Request(list(prompt), max_tokens, list(stop or []), sampler, top_logprobs)
        with self._cond:
            if self._stopping:
                raise EngineClosedError("the local model was closed")
            self._queue.append(request)
            self._cond.notify()
        if not request.done.wait(timeout):
            raise TimeoutError("the local model did not answer in time")
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def close(self) -> None:
        """Stop the thread (requests still queued fail) and free the context."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join()
        if self._ctx is not None:
            import llama_cpp

            llama_cpp.llama_batch_free(self._llama_batch)
            self._ctx.close()
            self._ctx = None

    def alive(self) -> bool:
        """False once closed, or in a forked child (threads do not survive a fork)."""
        return self._thread.is_alive() and not self._stopping

    def active(self) -> int:
        """Requests in slots or queued."""
        with self._cond:
            return len(self._queue) + sum(s.request is not None for s in self._slots)

    # ----------------------------------------------------------------------------- the thread
    def _run(self) -> None:
        while True:
            started = time.perf_counter()
            try:
                with self._cond:
                    while not self._stopping and not self._queue and not any(s.request for s in self._slots):
                        self._cond.wait()
                    if self._stopping:
                        self._fail_all(EngineClosedError("the local model was closed"))
                        return
                    started = time.perf_counter()
                    self._admit()
                self.stats.bookkeeping_s += time.perf_counter() - started
                self._step()
            except Exception as exc:  # a decode failure must not strand the callers
                with self._cond:
                    self._fail_all(EngineError(f"the local decode engine failed: {exc}"), queued=False)
            self.stats.busy_s += time.perf_counter() - started

    def _admit(self) -> int:
        """Move queued requests into free slots; called with the lock held.

        The slot that already holds the longest prefix of the prompt wins (all hold the shared
        instructions once they served a request); among equals the lowest id, which keeps the
        generating slots contiguous.
        """
        import llama_cpp

        n = 0
        while self._queue:
            free = [s for s in self._slots if s.request is None]
            if not free:
                break
            request = self._queue.popleft()
            slot = max(free, key=lambda s: (_common_prefix(s.cached, request.prompt), -s.seq_id))
            # the last prompt token is read again for its logits
            keep = min(_common_prefix(slot.cached, request.prompt), len(request.prompt) - 1)
            if not llama_cpp.llama_memory_seq_rm(self._mem, slot.seq_id, keep, -1):
                llama_cpp.llama_memory_seq_rm(self._mem, slot.seq_id, -1, -1)
                keep = 0
            slot.cached = request.prompt[:keep]
            slot.pending = request.prompt[keep:]
            slot.next_token = None
            slot.fresh = True
            slot.request = request
            self._admitted += 1
            slot.order = self._admitted
            request.reused = keep
            self.stats.requests += 1
            self.stats.prompt_tokens += len(request.prompt)
            self.stats.reused_tokens += keep
            n += 1
        return n

    def _borrow_prefix(self, slot: _Slot) -> None:
        """Before a slot reads its prompt: if another slot's stream holds a longer prefix of it (the
        instructions, read by the slot that started first), copy that stream instead of reading the
        prefix again. llama.cpp copies whole streams (~115 MB for the 1.5B, milliseconds), so only
        from COPY_MIN_TOKENS tokens on; the copied KV is bit for bit what the other slot computed."""
        import llama_cpp

        request = slot.request
        assert request is not None
        limit = len(request.prompt) - 1
        keep = len(slot.cached)
        donor = max(self._slots, key=lambda s: _common_prefix(s.cached, request.prompt))
        shared = min(_common_prefix(donor.cached, request.prompt), limit)
        if donor is slot or shared < keep + COPY_MIN_TOKENS:
            return
        llama_cpp.llama_memory_seq_cp(self._mem, donor.seq_id, slot.seq_id, -1, -1)
        llama_cpp.llama_memory_seq_rm(self._mem, slot.seq_id, shared, -1)
        slot.cached = request.prompt[:shared]
        slot.pending = request.prompt[shared:]
        self.stats.reused_tokens += shared - keep
        self.stats.copied_tokens += shared - keep
        request.reused = shared

    def _fail_all(self, error: BaseException, *, queued: bool = True) -> None:
        import llama_cpp

        for slot in self._slots:
            if (request := slot.request) is not None:
                request.error = error
                self._release(slot)
                request.done.set()
            if self._ctx is not None:
                llama_cpp.llama_memory_seq_rm(self._mem, slot.seq_id, -1, -1)
            slot.cached = []
        if queued:
            while self._queue:
                request = self._queue.popleft()
                request.error = error
                request.done.set()

    def _release(self, slot: _Slot) -> None:
        request = slot.request
        if request is not None:
            request.sampler.close()
        slot.request, slot.pending, slot.next_token = None, [], None

    def _step(self) -> None:
        """One llama_decode: a prompt chunk of one slot, or the next token of every generating slot.

        Prompts first: a slot reads its whole prompt before the generating slots take their next
        step, so that decode steps advance as many sequences as possible. On this CPU that is what
        pays: llama.cpp's repacked Q4_K kernels multiply 4 (or 8) rows at once, but 2 or 3 rows one
        by one, so only steps of 4+ sequences are cheaper per token (0.5B: 1 row 26 ms, 2 rows 51 ms,
        4 rows 75 ms, 8 rows 135 ms). A prompt chunk never shares a decode with other sequences: it
        is read in the serial path's chunks (n_batch tokens from the reused prefix on), so its KV
        and first logits are computed as there; with one KV stream per sequence llama.cpp would run
        a mixed step as separate micro-batches anyway.
        """
        readers = [s for s in self._slots if s.request is not None and s.pending]
        if readers:
            slot = min(readers, key=lambda s: s.order)  # the earliest admitted reads first
            if slot.fresh:
                self._borrow_prefix(slot)
                slot.fresh = False
            chunk = slot.pending[: self.n_batch]
            self._decode([(slot, chunk)], prompt=True)
            slot.cached.extend(chunk)
            slot.pending = slot.pending[len(chunk):]
            if not slot.pending:
                self._advance(slot, len(chunk) - 1)
            return
        generating = [s for s in self._slots if s.request is not None and s.next_token is not None]
        tokens = [s.next_token for s in generating]
        self._decode([(s, [t]) for s, t in zip(generating, tokens, strict=True)], prompt=False)
        for slot, token in zip(generating, tokens, strict=True):
            slot.cached.append(token)  # type: ignore[arg-type]
            slot.next_token = None
        for index, slot in enumerate(generating):
            self._advance(slot, index)

    def _decode(self, parts: list[tuple[_Slot, list[int]]], *, prompt: bool) -> None:
        """Fill one step's `llama_batch` (slots in id order, logits for the last token of each part) and
        decode it."""
        import llama_cpp

        t0 = time.perf_counter()
        llama_batch = self._llama_batch
        n = 0
        for slot, tokens in parts:
            pos = len(slot.cached)
            for k, token in enumerate(tokens):
                llama_batch.token[n] = token
                llama_batch.pos[n] = pos + k
                llama_batch.n_seq_id[n] = 1
                llama_batch.seq_id[n][0] = slot.seq_id
                llama_batch.logits[n] = k == len(tokens) - 1
                n += 1
        llama_batch.n_tokens = n
        t1 = time.perf_counter()
        rc = llama_cpp.llama_decode(self._ctx.ctx, llama_batch)
        t2 = time.perf_counter()
        if rc != 0:
            raise EngineError(f"llama_decode returned {rc}")
        stats = self.stats
        stats.bookkeeping_s += t1 - t0
        if prompt:
            stats.prompt_steps += 1
            stats.prompt_step_s += t2 - t1
        else:
            stats.decode_steps += 1
            stats.decode_step_s += t2 - t1
            stats.decode_step_seqs += len(parts)

    def _advance(self, slot: _Slot, index: int) -> None:
        """Sample the slot's next token from the logits at `index` and apply the stop rules."""
        import llama_cpp

        request = slot.request
        assert request is not None
        stats = self.stats
        t0 = time.perf_counter()
        top = None
        if request.top_logprobs is not None:
            top = self._log_softmax(index)
        t1 = time.perf_counter()
        token = int(llama_cpp.llama_sampler_sample(request.sampler.sampler, self._ctx.ctx, index))
        t2 = time.perf_counter()
        stats.logprob_s += t1 - t0
        stats.sample_s += t2 - t1
        try:
            finished = self._after_token(request, token, top)
        finally:
            stats.bookkeeping_s += time.perf_counter() - t2
        if finished:
            stats.generated_tokens += len(request.completion)
            # free the slot before waking the caller: once its call returns, the engine is idle for it
            # (`active()`), which is when `local.engine` may rebuild it bigger
            self._release(slot)
            request.done.set()
        else:
            slot.next_token = token

    def _log_softmax(self, index: int) -> Any:
        import llama_cpp
        import numpy as np

        pointer = llama_cpp.llama_get_logits_ith(self._ctx.ctx, index)
        logits = np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))
        peak = float(logits.max())
        # the serial path's expression (`completion.LogprobRecorder`), so the figures match bit for bit
        return logits - (peak + math.log(float(np.exp(logits - peak).sum())))

    def _piece(self, token: int) -> str:
        return self.llama.detokenize([int(token)]).decode("utf-8", errors="ignore")

    def _after_token(self, request: _Request, token: int, lsm: Any) -> bool:
        """`Llama._create_completion`'s loop body for one sampled token; True when the reply is done."""
        import llama_cpp
        import numpy as np

        llama = self.llama
        if llama_cpp.llama_vocab_is_eog(self._vocab, token):
            self._finish(request, llama.detokenize(request.completion, prev_tokens=request.prompt), "stop")
            return True
        request.completion.append(token)
        if lsm is not None:
            k = max(1, request.top_logprobs or 1)
            top_ids = np.argpartition(lsm, -k)[-k:]
            top_ids = top_ids[np.argsort(lsm[top_ids])[::-1]]
            request.logprobs.append({
                "token": self._piece(token),
                "logprob": float(lsm[token]),
                "top_logprobs": [{"token": self._piece(i), "logprob": float(lsm[i])} for i in top_ids],
            })
        all_text = llama.detokenize(request.completion, prev_tokens=request.prompt)
        # an incomplete UTF-8 character at the end: wait for its next byte (and, as llama-cpp-python
        # does, skip the stop and length checks meanwhile)
        for k, char in enumerate(all_text[-3:]):
            k = 3 - k
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    request.multibyte_fix = num - k
        if request.multibyte_fix > 0:
            request.multibyte_fix -= 1
            return False
        hits = [s for s in request.stop if s in all_text]
        if hits:
            self._finish(request, all_text[: all_text.index(hits[0])], "stop")
            return True
        if len(request.completion) >= request.max_tokens:
            self._finish(request, llama.detokenize(request.completion, prev_tokens=request.prompt), "length")
            return True
        return False

    def _finish(self, request: _Request, text: bytes, reason: str) -> None:
        request.result = Completion(
            text=text.decode("utf-8", errors="ignore"),
            finish_reason=reason,
            prompt_tokens=len(request.prompt),
            completion_tokens=len(request.completion),
            logprobs=request.logprobs if request.top_logprobs is not None else None,
            reused_tokens=request.reused,
        )
