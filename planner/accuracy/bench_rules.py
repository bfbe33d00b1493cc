"""How aiconfigurator's benchmark launched each engine for a measured row: the settings its benchmark rules write,
on one attention-DP rank.

aiconfigurator generates the engine's launch arguments for a silicon run from rule files
(ai-dynamo/aiconfigurator src/aiconfigurator/generator/rule_plugin/benchmark/: vllm.rule and sglang.rule read at
@a2d8002e, trtllm.rule at @581e4591). For an aggregated worker with batch size B (per DP rank) and input length ISL:

| engine | step token budget | a later prompt in the step | running | chunked prefill |
|---|---|---|---|---|
| vLLM | `max_num_tokens = B + ISL + 1500` | chunked into the budget | B | on (V1) |
| SGLang | chunked_prefill_size (the GPU's default) | whole, within `max_prefill_tokens = ISL + 1500` | B | on |
| TensorRT-LLM | `max_num_tokens = B + ISL + 1500` | whole (no chunking) | B | off (template default) |

So about ⌊(ISL + 1500) / ISL⌋ prompts share a prefill step: two at ISL 1,024, one from ISL 1,500 up, where the
engines' own defaults (8,192 or 16,384 tokens) would prefill eight 1k prompts together. Colliding closed-loop
arrivals then prefill one after another (docs/research/ttft_gaps.md, gap 2).

Attention DP: aiconfigurator's batch size is per DP rank and the ranks run the same fixed-length closed loop, so one
rank is simulated with concurrency / DP clients; PerfModel prices a rank's step (its experts gather the tokens of all
DP ranks: PerfModel.expert_token_ranks). A benchmark that launched otherwise (other budgets, balancing) is not
described by these settings: the row's note names the rule used.
"""

from __future__ import annotations

from planner.accuracy.inferencemax_launch import (
    ADP_BALANCE_MODELS,
    ADP_BALANCE_TIMEOUT_ITERS,
    INFERENCEMAX_TRT_DEFAULT,
    INFERENCEMAX_TRT_TOKENS,
    INFERENCEMAX_VLLM_TOKENS,
    balanced_adp,
    inferencemax_batch_wait,
    inferencemax_dsr1_trt_budget,
    inferencemax_recv_interval,
    inferencemax_sglang_launch,
)
from planner.core.scenario import Resolved
from planner.memory.plan import plan_memory
from planner.sim.serving import run_by
from planner.sim.settings import ServerSettings, SpecDecoding

PREFILL_HEADROOM = 1500  # tokens the rules add to ISL (`SlaConfig.isl + 1500`)
RULES = "aiconfigurator benchmark rules (max_num_tokens / max_prefill_tokens = ISL + 1500, max_batch_size = batch)"


def clients_per_rank(concurrency: int, dp: int) -> int:
    """Closed-loop clients one attention-DP rank serves (the run's clients spread evenly over its DP ranks)."""
    return max(1, round(concurrency / max(1, dp)))


# aiconfigurator's generator leaves vLLM's prefix caching and SGLang's radix cache on (it passes
# `--no-enable-prefix-caching` / `--disable-radix-cache` only for a configured prefix: generator/rule_plugin/
# benchmark/*.rule), while its TensorRT-LLM templates set `kv_cache_config.enable_block_reuse: false`
# (ai-dynamo/aiconfigurator@095f58a5 generator/config/backend_templates/trtllm/extra_engine_args*.yaml.j2)
BLOCK_REUSE_OFF_ENGINES = ("tensorrt-llm",)


def reuses_cached_prompts(engine: str) -> bool:
    """Whether an engine launched by aiconfigurator's rules serves a repeated prompt from its prefix cache."""
    return engine not in BLOCK_REUSE_OFF_ENGINES


def bench_settings(
    r: Resolved,
    batch: int,
    isl: int,
    seed: int = 0,
    inferencemax: bool = False,
    osl: int = 0,
    spec: SpecDecoding | None = None,
    measured_on: str = "",
) -> ServerSettings:
    """The replica's ServerSettings as aiconfigurator's benchmark rules launch engine `r.engine` for one DP rank with
    `batch` running requests at input length `isl` (module note); `inferencemax`: as InferenceMAX's scripts do (for
    nominal output length `osl`); `spec`: the run's multi-token prediction (inferencemax_launch.INFERENCEMAX_MTP_IMAGES
    note); `measured_on`: the run's date (YYYY-MM-DD, "" unknown), where the launch changed over time."""
    settings = _bench_settings(r, batch, isl, seed, inferencemax, osl, spec, measured_on)
    return settings.with_(spec=spec) if spec else settings


def _bench_settings(
    r: Resolved,
    batch: int,
    isl: int,
    seed: int,
    inferencemax: bool,
    osl: int,
    spec: SpecDecoding | None,
    measured_on: str,
) -> ServerSettings:
    budget = batch + isl + PREFILL_HEADROOM
    engine = r.engine.id
    # InferenceX's launch (ADP_BALANCE_MODELS note): C = all ranks' clients
    if balanced_adp(engine, r.deployment.data_parallel_size, r.model.name):
        tokens = inferencemax_dsr1_trt_budget(r, batch, isl, measured_on, spec)
        return ServerSettings.of(
            r,
            seed=seed,
            max_num_seqs=batch,
            max_num_batched_tokens=max(batch, tokens),
            scheduler_overrides=(
                ("enable_chunked_prefill", False),
                ("adp_balance_timeout_iters", ADP_BALANCE_TIMEOUT_ITERS),
            ),
        )
    if inferencemax:
        return _inferencemax_settings(r, batch, seed, isl, osl, spec, measured_on)
    if engine == "sglang":  # the chunk size stays the engine's default; max_prefill_tokens limits later prompts
        return ServerSettings.of(
            r,
            seed=seed,
            max_num_seqs=min(batch, r.deployment.max_num_batched_tokens),
            scheduler_overrides=(("max_prefill_tokens", isl + PREFILL_HEADROOM),),
        )
    if engine == "tensorrt-llm":  # enable_chunked_prefill false: a prompt must fit one step whole
        return _whole_prompts(r, batch, budget, seed)
    if engine == "vllm":
        return ServerSettings.of(r, seed=seed, max_num_seqs=batch, max_num_batched_tokens=budget)
    return ServerSettings.of(r, seed=seed)


def _inferencemax_settings(
    r: Resolved, batch: int, seed: int, isl: int, osl: int, spec: SpecDecoding | None = None, measured_on: str = ""
) -> ServerSettings:
    """InferenceMAX's launch of engine `r.engine` (planner.accuracy.inferencemax_launch) with `batch` clients on the
    replica."""
    engine, model = r.engine.id, r.model.name
    if engine == "sglang":
        dep = r.deployment
        launch = inferencemax_sglang_launch(model, dep.weights, r.gpu.id, dep.tensor_parallel_size)
        tokens = launch.tokens
        # a part without the script's memory fraction may have no KV pool left at a 32k chunk (SGLang's default
        # fraction reserves 1.5 x the chunk): halve the chunk until a pool is left
        while (
            tokens > INFERENCEMAX_VLLM_TOKENS
            and plan_memory(run_by(r, _sglang(r, batch, tokens, seed))).num_gpu_blocks <= 0
        ):
            tokens //= 2
        return _sglang(r, batch, tokens, seed, min(launch.max_prefill, tokens))
    if engine == "tensorrt-llm":
        tokens = INFERENCEMAX_TRT_TOKENS.get(model, INFERENCEMAX_TRT_DEFAULT)
        if model in ADP_BALANCE_MODELS:
            tokens = inferencemax_dsr1_trt_budget(r, batch, isl, measured_on, spec)
        wait = () if spec else inferencemax_batch_wait(r, batch * r.deployment.data_parallel_size, isl, osl)
        return _whole_prompts(r, batch, tokens, seed, wait)
    if engine == "vllm":
        return ServerSettings.of(r, seed=seed, max_num_seqs=batch, max_num_batched_tokens=INFERENCEMAX_VLLM_TOKENS)
    return ServerSettings.of(r, seed=seed)


def _sglang(r: Resolved, batch: int, tokens: int, seed: int, max_prefill: int | None = None) -> ServerSettings:
    """SGLang for `batch` clients on the rank, a `tokens` chunk and `max_prefill` (default: the chunk) prompt tokens
    a prefill batch."""
    recv = inferencemax_recv_interval(r, batch * r.deployment.data_parallel_size)
    return ServerSettings.of(
        r,
        seed=seed,
        max_num_seqs=batch,
        max_num_batched_tokens=tokens,
        scheduler_overrides=(("max_prefill_tokens", max_prefill or tokens), ("scheduler_recv_interval", recv)),
    )


def _whole_prompts(r: Resolved, batch: int, tokens: int, seed: int, wait: tuple = ()) -> ServerSettings:
    """TensorRT-LLM without chunked prefill: `tokens` a step, a prompt must fit one step whole; `wait`: its batch
    waiting (timeout iterations, token ratio), if the launch sets it."""
    waiting = (("batch_wait_timeout_iters", wait[0]), ("batch_wait_max_tokens_ratio", wait[1])) if wait else ()
    return ServerSettings.of(
        r,
        seed=seed,
        max_num_seqs=batch,
        max_num_batched_tokens=tokens,
        scheduler_overrides=(("enable_chunked_prefill", False),) + waiting,
    )
