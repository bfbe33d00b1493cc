"""InferenceMAX's launches of the runs its files hold: what InferenceX's scripts set (token budgets, SGLang's
chunk and memory fraction, receive interval, TensorRT-LLM's batch waiting and DeepSeek-R1 budgets, the attention-DP
balance, multi-token prediction, KV cache dtype), each read from the scripts at a cited commit and, where the
scripts changed over time, by the run's date. planner.accuracy.bench_rules composes them into a replica's
ServerSettings (its `_inferencemax_settings`)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.scenario import Resolved
from planner.sim.settings import SpecDecoding

# TensorRT-LLM DeepSeek-R1 with attention DP: these rows' grid (8 GPUs, DP 8 + EP 8, c4-c256, 1k/1k, 1k/8k, 8k/1k) is
# InferenceX's, whose launch scripts (SemiAnalysisAI/InferenceX@6320e9b7 benchmarks/dsr1_fp4_b200_trt.sh,
# dsr1_fp8_b200_trt.sh) set attention_dp_config {enable_balance: true, timeout_iters: 60, batching_wait_iters: 0}
# and max_num_tokens = ⌊(C + ISL + 127) / 64⌋ × 64 per rank for C clients, at least 8,192 since InferenceX@64af5a77
# (2026-01-21; read at @40f95bc0, 2026-03-31, benchmarks/single_node/dsr1_fp4_b200_trt.sh, dsr1_fp8_b200_trt.sh,
# dsr1_fp8_h200_trt.sh: `MAX_NUM_TOKENS > 8192 ? MAX_NUM_TOKENS : 8192`, with or without attention DP). A run measured
# before that day (the source's `measured=` date) launched without the floor (benchmarks/dsr1_fp4_b200_trt_slurm.sh,
# dsr1_fp8_b200_trt_slurm.sh, dsr1_fp8_h200_trt_slurm.sh from @ec90f3fe, 2025-09-18, to @2ee1e001, 2026-01-12):
# 1,216 tokens at 1k and 128 clients, one prompt a step; one without a date is assumed to have it
# (docs/research/ttft_gaps.md, gap 1). With attention DP the floor is kept for every date: simulated without it, the
# balance hold's rows go from 1.4-3.9 s of TTFT to 4-27 s where 1.2-2.8 s were measured (DeepSeek-R1 FP4, 8 x B200,
# 2026-01-14), so how those runs admitted prompts is not what the simulator's hold describes.
ADP_BALANCE_TIMEOUT_ITERS = 60
ADP_BALANCE_MODELS = ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3")
INFERENCEMAX_DSR1_TRT_MIN_TOKENS = 8192
INFERENCEMAX_DSR1_TRT_FLOOR_SINCE = "2026-01-21"  # InferenceX@64af5a77
# InferenceMAX's own launches for the rows it measured (planner.accuracy.bench_protocol: files 2026-03-25/04-06):
# vLLM `max-num-batched-tokens: 8192`, `max-num-seqs $CONC` (SemiAnalysisAI/InferenceX@e06929c7 benchmarks/
# gptoss_fp4_h200_slurm.sh, gptoss_fp4_h100_slurm.sh; 70b_fp8_h200_slurm.sh before its removal); SGLang
# `--chunked-prefill-size 32768 --max-prefill-tokens 32768` for DeepSeek-R1 FP8 (dsr1_fp8_h200_slurm.sh,
# dsr1_fp8_b200_docker.sh) and 16,384 for Qwen3.5 (InferenceX@843c6254 benchmarks/single_node/fixed_seq_len/
# qwen3.5_fp8_h200.sh, qwen3.5_fp8_b200.sh) and DeepSeek-R1 FP4 (a variable there: assumed 16,384); TensorRT-LLM
# `max_num_tokens` 16,384 for Llama-70B (70b_fp8_h200_trt_slurm.sh), 20,000 for gpt-oss
# (gptoss_fp4_h200_trt_slurm.sh) and DeepSeek-R1's own rule (inferencemax_dsr1_trt_tokens), chunked prefill left off
INFERENCEMAX_VLLM_TOKENS = 8192
INFERENCEMAX_SGLANG_DEFAULT = 16384
INFERENCEMAX_TRT_TOKENS = {"openai/gpt-oss-120b": 20000}
INFERENCEMAX_TRT_DEFAULT = 16384
INFERENCEMAX_RULES = (
    "InferenceMAX launch scripts (vLLM 8,192 tokens a step; SGLang 8,192-32,768 and its memory fraction; TRT-LLM "
    "8,192-20,000)"
)
# The KV cache dtype InferenceMAX's scripts launch with (the files do not record it): FP8 everywhere except where a
# script leaves it to the engine's default (16-bit). Read at SemiAnalysisAI/InferenceX@40f95bc0 (2026-03-31, the
# last commit before the files' dates) benchmarks/single_node/: dsr1_fp4_b200.sh, dsr1_fp8_b200.sh
# `--kv-cache-dtype fp8_e4m3`, dsr1_fp8_h200.sh none; dsr1_*_trt.sh and gptoss_fp4_b200_trt.sh `kv_cache_config:
# dtype: fp8`, gptoss_fp4_h200_trt.sh `dtype: auto`; gptoss_fp4_b200.sh `kv-cache-dtype: fp8`, gptoss_fp4_h100.sh and
# gptoss_fp4_h200.sh none; qwen3.5_fp8_b200.sh / qwen3.5_fp8_h200.sh `--kv-cache-dtype fp8_e4m3`, qwen3.5_bf16_b200.sh
# none. Llama-3.1-70B (its scripts removed before that commit; read at InferenceX@026d16b8, 2025-10-31):
# 70b_fp8_h200_slurm.sh, 70b_fp8_b200_docker.sh, 70b_fp4_b200_docker.sh, 70b_fp8_h100_slurm.sh `kv-cache-dtype: fp8`,
# 70b_fp8_h200_trt_slurm.sh, 70b_fp8_b200_trt_slurm.sh, 70b_fp4_b200_trt_slurm.sh `dtype: fp8`.
INFERENCEMAX_16BIT_KV = {
    ("sglang", "deepseek-ai/DeepSeek-R1", "H200"),
    ("tensorrt-llm", "openai/gpt-oss-120b", "H200"),
    ("vllm", "openai/gpt-oss-120b", "H100-SXM"),
    ("vllm", "openai/gpt-oss-120b", "H200"),
}
# SGLang's whole launch in InferenceMAX's single-node scripts at InferenceX@40f95bc0 (2026-03-31, the last commit
# before the files' dates; the later @843c6254 above has 16,384 for Qwen3.5 on B200): --chunked-prefill-size,
# --max-prefill-tokens (SGLang's default 16,384 where a script sets none) and --mem-fraction-static
# (planner.memory.engine_pool's fraction in place of SGLang's default):
#   benchmarks/single_node/dsr1_fp4_b200.sh                    16,384 / 16,384 / 0.85
#   dsr1_fp8_b200.sh at TP 8                                   32,768 / 32,768 / 0.82
#   dsr1_fp8_b200.sh at TP 4 (its 8k / 1k runs)                 8,192 /  8,192 / 0.95
#   dsr1_fp8_h200.sh                                           32,768 / 32,768 / 0.82
#   qwen3.5_fp8_b200.sh, qwen3.5_bf16_b200.sh                  32,768 / 32,768 / 0.82
#   qwen3.5_fp8_h200.sh                                        16,384 / 16,384 / 0.80
# Another model or GPU keeps 16,384 tokens and SGLang's default fraction. The scripts' --max-running-requests (32 to
# 512) is not applied: the rows at 256 and 512 clients measure TTFTs of 2.1-3.1 s (DeepSeek-R1 FP8 on 8 x B200 at
# 1k / 1k, Qwen3.5 FP8 on 4 x B200) that a cap of 128 running requests makes 26-80 s in simulation, so those runs
# were launched with another cap than these scripts'.
QWEN35 = "Qwen/Qwen3.5-397B-A17B"
# InferenceMAX's multi-token-prediction runs. Each -mtp config (dsr1-fp4-b200-trt-mtp, dsr1-fp8-b200-trt-mtp) benchmarks
# the same model, GPU and grid as its plain twin, and the files do not say which of the two ran. The container image
# does: InferenceX's nvidia-master.yaml ran the -mtp configs on tensorrt-llm/release:1.2.0rc6.post3 from 2026-02-05,
# an image their plain twins never used (they ran 1.1.0rc2.post2, then 1.2.0rc6.post2; read over the file's history,
# @17d5e204 2025-11-03 to @40f95bc0 2026-03-31; perf-changelog.yaml: "off: v1.2.0rc6.post2 / mtp: v1.2.0rc6.post3").
# Their launch (InferenceX@40f95bc0 benchmarks/single_node/dsr1_fp4_b200_trt_mtp.sh, dsr1_fp8_b200_trt_mtp.sh):
# `speculative_config: {decoding_type: MTP, num_nextn_predict_layers: 3}` (1 with attention DP), max_batch_size B = C
# (C / 4 for FP4 and C / 8 for FP8 with attention DP, C when fewer), max_num_tokens = ⌊((k + 1) × B + ISL + 127) / 64⌋ ×
# 64 with no 8,192 floor, no batch waiting. Not labelled, and read as the plain config:
# - the DeepSeek-R1 SGLang runs on v0.5.9-cu130 after 2026-03-25, where dsr1-fp8-b200-sglang and its -mtp twin share
#   the image (the file holds both, e.g. 8 clients at 1k / 1k: 226.6 ms / 10.8 ms and 364.0 ms / 8.8 ms);
# - qwen3.5-fp8-b200-sglang-mtp (image lmsysorg/sglang:v0.5.9-cu130 from 2026-03-20; InferenceX@35d4bb36
#   qwen3.5_fp8_b200_mtp.sh: EAGLE, 3 steps, 4 draft tokens): its 42 rows are MTP runs, but simulated with the head
#   they score TTFT -45% and TPOT -27% (plain: -44% and +17%; under session 22's constants): SGLang's draft and
#   verify on Qwen3.5's linear-attention layers cost far more than a head pass of one layer's share
#   (planner.sim.spec_heads), which is not modelled.
INFERENCEMAX_MTP_IMAGES = {
    ("tensorrt-llm", "deepseek-ai/DeepSeek-R1", "B200"): "tensorrt-llm/release:1.2.0rc6.post3",
}
# The -mtp configs' first runs, before they had an image of their own: InferenceX@bf345672 (2026-01-14, "Add MTP
# Benchmark Support for DeepSeek-R1 TRT") added dsr1-fp4-b200-trt-mtp, dsr1-fp8-b200-trt-mtp and dsr1-fp8-h200-trt-mtp
# on the plain configs' image (1.1.0rc2.post2), and the files' TensorRT-LLM DeepSeek rows measured that day are theirs:
# on the same image every one of them decodes faster than the same grid point's plain run of 2025-12-15 (FP8, 8 x B200,
# 1k / 1k, 4 clients: 7.8 against 14.6 ms; 8 x H200: 8.6 against 13.8 ms; 1.2-1.9x over 4-64 clients) with a longer
# TTFT, and their attention-DP points at 1k / 1k, 128-256 clients on H200 are in the -mtp search space only. Their
# scripts (bf345672 benchmarks/dsr1_fp{4,8}_b200_trt_mtp_slurm.sh, dsr1_fp8_h200_trt_mtp_slurm.sh): the same MTP
# depths and budget formula, with max_batch_size C / TP under attention DP.
INFERENCEMAX_MTP_DATES = {("tensorrt-llm", "deepseek-ai/DeepSeek-R1"): ("2026-01-14",)}
INFERENCEMAX_MTP_OWN_IMAGE_SINCE = "2026-02-05"  # from then C / 4 (FP4) or C / 8 (FP8) under attention DP
# The acceptance of InferenceMAX's MTP runs is not published (its prompts are random tokens in a chat template, and
# DeepSeek-R1 answers them by reasoning). Calibrated on the rows: 0.6 per draft token (acceptance length 2.18 at k = 3,
# 1.6 at k = 1), refitted with it, puts the 88 rows told by their image at TPOT -3% signed (12% absolute) and the 73
# told by their date (INFERENCEMAX_MTP_DATES) at -10% (16%). The 20 plain / MTP pairs at up to 64 clients (measured
# plain ÷ MTP TPOT 1.2-2.3) ask for about 0.63: at 0.6 the predicted ratio is a median 5% short, at 0.7 11% long
# (before TensorRT-LLM's layers were kernel-counted they asked for 0.775, the plain twins then running 16% slower than
# predicted). Status: calibrated, on these rows only.
INFERENCEMAX_MTP_ALPHA = 0.6
INFERENCEMAX_MTP_DEPTH = 3  # draft tokens a step; 1 for TensorRT-LLM with attention DP
INFERENCEMAX_MTP_DP_BATCH_DIVISOR = {"nvfp4": 4, "fp8": 8}  # max_batch_size = C / this with attention DP


@dataclass(frozen=True)
class SglangLaunch:
    """SGLang's launch in an InferenceMAX script (note above): chunk size, max_prefill_tokens and
    --mem-fraction-static (None: SGLang's default)."""

    tokens: int = INFERENCEMAX_SGLANG_DEFAULT
    max_prefill: int = INFERENCEMAX_SGLANG_DEFAULT
    mem_fraction: float | None = None


def inferencemax_sglang_launch(model: str, weights: str, gpu: str, tp: int) -> SglangLaunch:
    """How InferenceMAX's script launched SGLang for `model` on `gpu` (note above)."""
    deepseek = model in ADP_BALANCE_MODELS
    if deepseek and gpu == "B200" and weights == "fp8":
        return SglangLaunch(8192, 8192, 0.95) if tp == 4 else SglangLaunch(32768, 32768, 0.82)
    if deepseek and gpu == "B200":
        return SglangLaunch(16384, 16384, 0.85)
    if deepseek and gpu == "H200":
        return SglangLaunch(32768, 32768, 0.82)
    if model == QWEN35 and gpu == "B200":
        return SglangLaunch(32768, 32768, 0.82)
    if model == QWEN35 and gpu == "H200":
        return SglangLaunch(16384, 16384, 0.80)
    return SglangLaunch()


# SGLang's --scheduler-recv-interval in InferenceMAX's B200 launches (InferenceX@40f95bc0 benchmarks/single_node/
# dsr1_fp4_b200.sh, dsr1_fp8_b200.sh, qwen3.5_fp8_b200.sh, qwen3.5_bf16_b200.sh: "recv every ~10 requests; if
# CONC >= 16, relax to ~30", and 10 for DeepSeek-R1 FP8 at TP 4); the H200 scripts (dsr1_fp8_h200.sh,
# qwen3.5_fp8_h200.sh) leave SGLang's default of 1
INFERENCEMAX_SGLANG_RECV_GPUS = ("B200",)
# TensorRT-LLM's batch waiting in InferenceMAX's launches (planner.sim.config: batch_wait_timeout_iters,
# batch_wait_max_tokens_ratio): Llama-3.1-70B at 1k / 1k below TP 8, 20 iterations or 0.9 of max_num_tokens
# (InferenceX@026d16b8~1 benchmarks/70b_fp8_h200_trt_slurm.sh, 70b_fp8_b200_trt_slurm.sh, 70b_fp4_b200_trt_slurm.sh:
# "For 1k/1k, use batch_wait_max_tokens_ratio and batch_wait_timeout_iters will improve the performance");
# DeepSeek-R1 FP8 on B200 at 1k / 1k from 64 clients, 40 iterations or 0.8 (InferenceX@40f95bc0
# benchmarks/single_node/dsr1_fp8_b200_trt.sh, DELAY_BATCHING). The other TensorRT-LLM scripts set none.
INFERENCEMAX_TRT_WAIT_LLAMA = {"meta-llama/Llama-3.1-70B": (20, 0.9)}
INFERENCEMAX_TRT_WAIT_DSR1 = {("deepseek-ai/DeepSeek-R1", "fp8", "B200"): (40, 0.8)}
INFERENCEMAX_TRT_WAIT_DSR1_CLIENTS = 64
INFERENCEMAX_SGLANG_RECV = (10, 30, 16)  # interval below the clients threshold, at or above it, the threshold


def inferencemax_mtp_depth(engine: str, model: str, gpu: str, dp: int, image: str, measured_on: str = "") -> int:
    """Draft tokens a step of an InferenceMAX run that its image or its date names as a -mtp config's
    (INFERENCEMAX_MTP_IMAGES, INFERENCEMAX_MTP_DATES notes); 0 for a plain run or one whose source does not tell."""
    want = INFERENCEMAX_MTP_IMAGES.get((engine, script_model(model), gpu))
    by_image = bool(want) and image.replace("#", "/").endswith(want)
    by_date = measured_on in INFERENCEMAX_MTP_DATES.get((engine, script_model(model)), ())
    if not (by_image or by_date):
        return 0
    return 1 if engine == "tensorrt-llm" and dp > 1 else INFERENCEMAX_MTP_DEPTH


def inferencemax_mtp(k: int) -> SpecDecoding | None:
    """The MTP head of an InferenceMAX -mtp run with k draft tokens a step (None for k = 0)."""
    return SpecDecoding(None, k, INFERENCEMAX_MTP_ALPHA, method="mtp") if k else None


def inferencemax_mtp_trt_tokens(clients: int, dp: int, isl: int, k: int, weights: str, measured_on: str = "") -> int:
    """TensorRT-LLM's max_num_tokens in InferenceX's DeepSeek-R1 -mtp scripts (INFERENCEMAX_MTP_IMAGES note) for
    `clients` clients over `dp` attention-DP ranks, for a run measured on `measured_on`: 1,024 tokens, TP, 128
    clients, k 3 -> 1,600 (one prompt a step beside 128 verifying requests)."""
    divisor = INFERENCEMAX_MTP_DP_BATCH_DIVISOR.get(weights, 8) if dp > 1 else 1
    if dp > 1 and measured_on and measured_on < INFERENCEMAX_MTP_OWN_IMAGE_SINCE:
        divisor = dp  # the first scripts' C / TP
    batch = clients if clients < divisor else clients // divisor
    return ((k + 1) * batch + isl + 127) // 64 * 64


def script_model(model: str) -> str:
    """The model whose InferenceMAX script launched a run of `model`: DeepSeek-R1's (the dsr1 scripts) for
    DeepSeek-V3 too, the name the database dump gives those runs (ids `dsr1_…`: bench_protocol note)."""
    return ADP_BALANCE_MODELS[0] if model in ADP_BALANCE_MODELS else model


def inferencemax_kv_cache_dtype(engine: str, model: str, gpu: str, weights: str) -> str:
    """The KV cache dtype InferenceMAX launched `model` with on `gpu` under `engine` (INFERENCEMAX_16BIT_KV note):
    "fp8", or "auto" (16-bit) where its script sets none or a BF16 checkpoint ran."""
    if weights in ("bf16", "fp16") or (engine, script_model(model), gpu) in INFERENCEMAX_16BIT_KV:
        return "auto"
    return "fp8"


def inferencemax_recv_interval(r: Resolved, clients: int) -> int:
    """SGLang's --scheduler-recv-interval as InferenceMAX launched `r` for `clients` clients (note above); 1 = off."""
    if r.engine.id != "sglang" or r.gpu.id not in INFERENCEMAX_SGLANG_RECV_GPUS:
        return 1
    low, high, threshold = INFERENCEMAX_SGLANG_RECV
    if r.model.name in ADP_BALANCE_MODELS and r.deployment.weights == "fp8" and r.deployment.tensor_parallel_size == 4:
        return low
    return high if clients >= threshold else low


def inferencemax_batch_wait(r: Resolved, clients: int, isl: int, osl: int) -> tuple:
    """TensorRT-LLM's (batch_wait_timeout_iters, batch_wait_max_tokens_ratio) as InferenceMAX launched `r` (note
    above); () when its script sets none or attention DP is on (the engine checks the wait only without it)."""
    if r.engine.id != "tensorrt-llm" or r.deployment.data_parallel_size > 1 or (isl, osl) != (1024, 1024):
        return ()
    model, tp = r.model.name, r.deployment.tensor_parallel_size
    if model in INFERENCEMAX_TRT_WAIT_LLAMA and tp < 8:
        return INFERENCEMAX_TRT_WAIT_LLAMA[model]
    key = (script_model(model), r.deployment.weights, r.gpu.id)
    if key in INFERENCEMAX_TRT_WAIT_DSR1 and clients >= INFERENCEMAX_TRT_WAIT_DSR1_CLIENTS:
        return INFERENCEMAX_TRT_WAIT_DSR1[key]
    return ()


def unfloored_dsr1_trt(engine: str, model: str, dp: int, measured_on: str) -> bool:
    """True for an InferenceMAX TensorRT-LLM DeepSeek-R1 run without attention DP measured before the 8,192-token
    floor (INFERENCEMAX_DSR1_TRT_FLOOR_SINCE note)."""
    return (
        engine == "tensorrt-llm"
        and script_model(model) in ADP_BALANCE_MODELS
        and dp <= 1
        and bool(measured_on)
        and measured_on < INFERENCEMAX_DSR1_TRT_FLOOR_SINCE
    )


def inferencemax_dsr1_trt_tokens(clients: int, isl: int, measured_on: str = "") -> int:
    """TensorRT-LLM's max_num_tokens (per attention-DP rank) in InferenceX's DeepSeek-R1 scripts for `clients`
    clients at input length `isl`, for a run measured on `measured_on` (YYYY-MM-DD; "" unknown) (note at
    ADP_BALANCE_TIMEOUT_ITERS): 1,024 tokens -> 8,192 up to 7,000 clients; 8,192 tokens at 64 clients -> 8,320 (one 8k
    prompt a step); before 2026-01-21 1,024 tokens at 128 clients -> 1,216."""
    tokens = (clients + isl + 127) // 64 * 64
    if measured_on and measured_on < INFERENCEMAX_DSR1_TRT_FLOOR_SINCE:
        return tokens
    return max(tokens, INFERENCEMAX_DSR1_TRT_MIN_TOKENS)


def inferencemax_dsr1_trt_budget(
    r: Resolved, batch: int, isl: int, measured_on: str = "", spec: SpecDecoding | None = None
) -> int:
    """max_num_tokens per rank of InferenceX's DeepSeek-R1 TensorRT-LLM launch of replica `r` with `batch` clients on
    each attention-DP rank: the -mtp script's budget for an MTP run (inferencemax_mtp_trt_tokens), else the plain
    script's, whose 8,192-token floor a TP run measured before 2026-01-21 did not have and a DP run keeps at every
    date (INFERENCEMAX_DSR1_TRT_FLOOR_SINCE note)."""
    dp, weights = r.deployment.data_parallel_size, r.deployment.weights
    clients = batch * dp
    if spec:
        return inferencemax_mtp_trt_tokens(clients, dp, isl, spec.k, weights, measured_on)
    return inferencemax_dsr1_trt_tokens(clients, isl, measured_on if dp <= 1 else "")


def balanced_adp(engine: str, dp: int, model: str) -> bool:
    """True for the rows launched with TensorRT-LLM's attention-DP balance (InferenceX's DeepSeek-R1 scripts)."""
    return engine == "tensorrt-llm" and dp > 1 and model in ADP_BALANCE_MODELS
