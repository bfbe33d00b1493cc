"""Speculative decoding as a what-if on the scenario (primer §8).

A small draft model proposes k tokens one after another; the target model checks all of them in one pass over
k + 1 positions, keeps the agreed prefix and adds one token of its own (the correction at the first disagreement,
or a bonus token when all k agree). With a per-token acceptance rate α (each draft accepted independently):

    expected tokens per target pass = Σ_{i=0..k} α^i = (1 − α^(k+1)) / (1 − α)      (k + 1 when α = 1)
    time per pass                   = k × draft step(batch) + target verify step(batch, k + 1 new tokens each)
    speed-up                        = expected tokens × target decode step(batch) / time per pass

The step times come from the roofline (planner.latency.perf_model): at small batch a verify pass over k + 1 tokens costs
about what one decode step costs (both read every weight once), so the extra tokens are nearly free; as the batch
grows the GPU turns compute-bound, the verify pass costs ~(k + 1)× a decode step and the speed-up fades below 1.
The draft model is a second resolved scenario on the same GPUs and TP degree; its weights and its own KV cache
take memory from the target's pool. EAGLE-3 heads and MTP modules (a share of the target's layers, published
acceptance lengths) are in planner/sim/spec_heads.py. Left out: tree/multi-candidate drafts, Medusa heads,
acceptance that varies by position, and the draft's own prefill of the prompt.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from planner.core.catalog import get_model, model_presets
from planner.core.errors import InputError
from planner.core.model_spec import ModelSpec
from planner.core.params import count_params
from planner.core.scenario import Resolved
from planner.latency.perf_model import PerfModel
from planner.memory import sizes as memory
from planner.memory.vllm_pool import blocks_per_request, vllm_pool

K_RANGE = tuple(range(1, 11))


def expected_tokens_per_pass(alpha: float, k: int) -> float:
    """(1 − α^(k+1)) / (1 − α): accepted drafts plus the target's own token, per target pass."""
    if alpha >= 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def alpha_from_acceptance_length(acceptance_length: float, k: int) -> float:
    """The per-token acceptance α whose expected tokens per pass (1 − α^(k+1)) / (1 − α) equals the published
    acceptance length τ (EAGLE papers report τ; DeepSeek-V3's MTP reports α itself); bisection, as the
    expectation rises monotonically from 1 (α = 0) to k + 1 (α = 1)."""
    if not (isinstance(k, int) and k >= 1):
        raise InputError("spec_k", f"must be a whole number >= 1, got {k!r}")
    if not (1.0 <= acceptance_length <= k + 1):
        raise InputError(
            "acceptance_length", f"must be from 1 to k + 1 = {k + 1} tokens per pass, got {acceptance_length:g}"
        )
    lo, hi = 0.0, 1.0
    for _ in range(60):  # 2^-60: below float resolution
        mid = (lo + hi) / 2
        if expected_tokens_per_pass(mid, k) < acceptance_length:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def tokens_from_pass(agreements: list[bool]) -> int:
    """Tokens one target pass yields: the drafts agreed before the first disagreement, plus one target token."""
    accepted = 0
    for ok in agreements:
        if not ok:
            break
        accepted += 1
    return accepted + 1  # the correction at the first disagreement, or the bonus token after k agreements


def simulate_tokens_per_pass(alpha: float, k: int, num_passes: int, seed: int) -> float:
    """Monte Carlo mean of tokens per pass: each draft accepted with probability α until the first rejection."""
    rng = np.random.default_rng(seed)
    agree = rng.random((num_passes, k)) < alpha
    accepted = np.where(agree.all(axis=1), k, np.argmin(agree, axis=1))  # index of the first False
    return float(np.mean(accepted + 1))


def walkthrough(num_proposed: int = 4, num_agreed: int = 3) -> list[dict]:
    """The primer's example step by step: propose, verify in one pass, keep the agreed prefix, add one token."""
    agreements = [i < num_agreed for i in range(num_proposed)]
    rows = [
        {"step": f"draft pass {i + 1}", "what": f"draft proposes token {i + 1}", "cost": "one cheap draft step"}
        for i in range(num_proposed)
    ]
    rows.append(
        {
            "step": "target pass",
            "what": f"target scores all {num_proposed} drafts (+1 position) at once",
            "cost": f"one target step over {num_proposed + 1} tokens",
        }
    )
    for i, ok in enumerate(agreements):
        rows.append(
            {
                "step": f"check draft {i + 1}",
                "what": "agrees: kept" if ok else "disagrees: target's own token replaces it, later drafts dropped",
                "cost": "",
            }
        )
        if not ok:
            break
    if all(agreements):
        rows.append({"step": "bonus", "what": "all agreed: the target's next token comes free", "cost": ""})
    total = tokens_from_pass(agreements)
    rows.append({"step": "result", "what": f"{num_agreed} accepted + 1 from the target = {total} tokens", "cost": ""})
    return rows


# -- draft models -------------------------------------------------------------------------------------------
def draft_candidates(target: ModelSpec) -> list[str]:
    """Presets smaller than the target, same vocabulary first (a draft must share the target's tokenizer)."""
    target_params = count_params(target).total
    rows = []
    for pid in model_presets():
        spec = get_model(pid)
        params = count_params(spec).total
        if params < target_params:
            rows.append((spec.vocab_size != target.vocab_size, params, pid))
    return [pid for _, _, pid in sorted(rows)]


def default_draft(target: ModelSpec) -> str | None:
    """The smallest preset sharing the target's vocabulary, else the smallest preset below the target."""
    options = draft_candidates(target)
    return options[0] if options else None


# -- timing --------------------------------------------------------------------------------------------------
def verify_step_s(pm: PerfModel, batch, context_tokens, k: int):
    """Target pass over k + 1 new tokens per sequence, each reading `context_tokens` cached tokens."""
    b, ctx = np.asarray(batch, dtype=float), np.asarray(context_tokens, dtype=float)
    new = k + 1
    pairs = b * (new * ctx + new * (new + 1) / 2)  # causal attention over the cache plus the new tokens
    return pm.step(b * new, b, b * ctx, pairs).total_s


def speedup(alpha: float, k: int, target_step_s, draft_step_s, verify_s):
    """Expected tokens per pass × target decode step / (k × draft step + verify step)."""
    return expected_tokens_per_pass(alpha, k) * target_step_s / (k * draft_step_s + verify_s)


@dataclass(frozen=True)
class SpecTiming:
    """Step times (s) and speed-up for arrays of batch sizes at one (α, k)."""

    batch: np.ndarray
    target_step_s: np.ndarray
    draft_step_s: np.ndarray
    verify_step_s: np.ndarray
    pass_s: np.ndarray
    expected_tokens_per_pass: float
    speedup: np.ndarray
    bound: np.ndarray  # the target's decode bound at each batch


def timing(target: PerfModel, draft: PerfModel, alpha: float, k: int, batches, context_tokens: int) -> SpecTiming:
    """Speed-up against batch size: it fades as the target's decode turns compute-bound."""
    b = np.atleast_1d(np.asarray(batches, dtype=float))
    dec = target.decode(b, context_tokens)
    t_target = np.atleast_1d(dec.total_s)
    t_draft = np.atleast_1d(draft.decode(b, context_tokens).total_s)
    t_verify = np.atleast_1d(verify_step_s(target, b, context_tokens, k))
    return SpecTiming(
        batch=b.astype(int),
        target_step_s=t_target,
        draft_step_s=t_draft,
        verify_step_s=t_verify,
        pass_s=k * t_draft + t_verify,
        expected_tokens_per_pass=expected_tokens_per_pass(alpha, k),
        speedup=speedup(alpha, k, t_target, t_draft, t_verify),
        bound=np.atleast_1d(dec.bound),
    )


@dataclass(frozen=True)
class KSpeedup:
    """One k tried at the batch: tokens per pass, seconds per pass, speed-up."""

    k: int
    expected_tokens_per_pass: float
    pass_s: float
    speedup: float


def best_k(
    target: PerfModel, draft: PerfModel, alpha: float, batch: int, context_tokens: int, ks=K_RANGE
) -> tuple[int, list[KSpeedup]]:
    """The k with the highest speed-up at this batch, and the speed-up of every k tried."""
    rows = []
    for k in ks:
        t = timing(target, draft, alpha, k, [batch], context_tokens)
        rows.append(KSpeedup(k, t.expected_tokens_per_pass, float(t.pass_s[0]), float(t.speedup[0])))
    best = max(rows, key=lambda row: row.speedup)
    return int(best.k), rows


# -- memory --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DraftMemory:
    draft_weight_bytes_per_gpu: float
    draft_kv_bytes_per_token_per_gpu: float
    kv_pool_tokens_without: int  # target alone
    kv_pool_tokens_with: int  # target + draft weights, each token cached in both models
    max_requests_without: int  # requests of context_tokens
    max_requests_with: int


def draft_memory(r: Resolved, d: Resolved, context_tokens: int) -> DraftMemory:
    """What the draft costs in memory: its weights, and its own KV cache for every token in flight."""
    tp, dep = r.deployment.tensor_parallel_size, r.deployment
    w_target = memory.weight_bytes(r.model, r.weights) / tp
    w_draft = memory.weight_bytes(d.model, d.weights) / tp
    kv_target = memory.kv_bytes_per_token(r.model, r.kv_bytes, tp)
    kv_draft = memory.kv_bytes_per_token(d.model, d.kv_bytes, tp)
    alone = vllm_pool(r.gpu.usable_memory_bytes, w_target, kv_target, r.model, dep, r.max_model_len)
    both = vllm_pool(r.gpu.usable_memory_bytes, w_target + w_draft, kv_target + kv_draft, r.model, dep, r.max_model_len)
    per_request = blocks_per_request(context_tokens, dep.block_size)
    return DraftMemory(
        draft_weight_bytes_per_gpu=w_draft,
        draft_kv_bytes_per_token_per_gpu=kv_draft,
        kv_pool_tokens_without=alone.kv_cache_tokens,
        kv_pool_tokens_with=both.kv_cache_tokens,
        max_requests_without=alone.num_gpu_blocks // per_request,
        max_requests_with=both.num_gpu_blocks // per_request,
    )


@dataclass(frozen=True)
class SpecDecodeReport:
    """Speculative decoding on one scenario (the CLI's `spec-decode` contract and the Techniques page)."""

    model: str
    draft_model: str
    gpu: str
    alpha: float
    k: int
    batch: int
    context_tokens: int
    expected_tokens_per_pass: float
    target_step_s: float
    draft_step_s: float
    verify_step_s: float
    pass_s: float
    speedup: float
    target_bound: str
    best_k: int
    speedup_by_k: list[KSpeedup]
    same_vocabulary: bool
    memory: DraftMemory

    @property
    def tokens_per_s_per_user_without(self) -> float:
        return 1 / self.target_step_s

    @property
    def tokens_per_s_per_user_with(self) -> float:
        return self.expected_tokens_per_pass / self.pass_s

    def to_dict(self) -> dict:
        """The CLI's keys: the fields up to target_bound, tokens/s per user without and with, then the rest."""
        return {
            "model": self.model,
            "draft_model": self.draft_model,
            "gpu": self.gpu,
            "alpha": self.alpha,
            "k": self.k,
            "batch": self.batch,
            "context_tokens": self.context_tokens,
            "expected_tokens_per_pass": self.expected_tokens_per_pass,
            "target_step_s": self.target_step_s,
            "draft_step_s": self.draft_step_s,
            "verify_step_s": self.verify_step_s,
            "pass_s": self.pass_s,
            "speedup": self.speedup,
            "target_bound": self.target_bound,
            "tokens_per_s_per_user_without": self.tokens_per_s_per_user_without,
            "tokens_per_s_per_user_with": self.tokens_per_s_per_user_with,
            "best_k": self.best_k,
            "speedup_by_k": [dataclasses.asdict(row) for row in self.speedup_by_k],
            "same_vocabulary": self.same_vocabulary,
            "memory": dataclasses.asdict(self.memory),
        }


def spec_decode_report(
    r: Resolved,
    d: Resolved,
    alpha: float,
    k: int,
    batch: int,
    context_tokens: int,
    request_tokens: int | None = None,
) -> SpecDecodeReport:
    """Expected tokens per pass, step times, speed-up at this batch, best k and the draft's memory.

    `context_tokens` is the cached context a decode step reads; `request_tokens` (default the same) sizes a
    request's KV blocks for the memory figures."""
    target_pm, draft_pm = PerfModel(r), PerfModel(d)  # the draft runs on the target's engine
    t = timing(target_pm, draft_pm, alpha, k, [batch], context_tokens)
    k_best, k_rows = best_k(target_pm, draft_pm, alpha, batch, context_tokens)
    return SpecDecodeReport(
        model=r.model.name,
        draft_model=d.model.name,
        gpu=r.gpu.id,
        alpha=alpha,
        k=k,
        batch=batch,
        context_tokens=context_tokens,
        expected_tokens_per_pass=t.expected_tokens_per_pass,
        target_step_s=float(t.target_step_s[0]),
        draft_step_s=float(t.draft_step_s[0]),
        verify_step_s=float(t.verify_step_s[0]),
        pass_s=float(t.pass_s[0]),
        speedup=float(t.speedup[0]),
        target_bound=str(t.bound[0]),
        best_k=k_best,
        speedup_by_k=k_rows,
        same_vocabulary=r.model.vocab_size == d.model.vocab_size,
        memory=draft_memory(r, d, request_tokens or context_tokens),
    )
