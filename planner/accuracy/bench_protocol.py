"""How the benchmark client measured a serving row: how its measured requests started, how many rounds of N
requests it averaged, and how long each request was.

Both clients behind aiconfigurator's aggregated rows start the measured requests as ONE BURST on an idle server,
after a warm-up that has drained:

- aiperf, as aiconfigurator runs it (ai-dynamo/aiconfigurator@095f58a5 src/aiconfigurator/generator/config/
  backend_templates/benchmark/bench_run.sh.j2: `aiperf profile --concurrency N --num-requests 20N
  --warmup-request-count 2N --isl I --osl O --isl-stddev 0 --osl-stddev 0 --extra-inputs ignore_eos:true`). aiperf
  runs its credit phases one after the other and waits for every warm-up credit to return before the profiling
  phase starts (ai-dynamo/aiperf@db4f6397 aiperf/timing/credit_issuing_strategy.py `_execute_phases`: "Wait for the
  credits to be returned before continuing to the next phase"); the profiling phase then issues N credits at once
  (request_rate_strategy.py, CONCURRENCY_BURST behind a semaphore of N). 20 rounds of N measured, fixed lengths.
- InferenceMAX's vLLM `benchmark_serving.py` (SemiAnalysisAI/InferenceX@e06929c7 benchmarks/*_slurm.sh: `--dataset-name
  random --random-input-len I --random-output-len O --random-range-ratio 0.8 --num-prompts 10N --max-concurrency N
  --request-rate inf --ignore-eos`; .github/workflows/full-sweep-tmpl.yml sets random-range-ratio 0.8). Every request
  task is created at once behind a semaphore of N (and its optional warm-up is gathered before them: utils/
  bench_serving/benchmark_serving.py), so the measured requests also start as a burst of N; 10 rounds of N measured,
  and each prompt and reply length drawn uniformly from [⌊0.8 I⌋, I] and [⌊0.8 O⌋, O] (`sample_uniform`). Rows of
  the files `2026-03-25.csv` and `2026-04-06.csv` (1,524 aggregated rows: DeepSeek-R1, Qwen3.5-397B-A17B,
  gpt-oss-120b and Llama-3.x-70B, only on InferenceMAX's ISL/OSL grid 1k/1k, 1k/8k, 8k/1k, with its `_tpN_epM_`
  layouts) are read as InferenceMAX's runs: an assumption from their models, grid and layouts, said in each row's
  note. So are the 272 aggregated rows of aiconfigurator's database dump (`db-dump/2026-04-27; config_id=N;
  workflow_run_id=M`, ids `dsr1_…_cfgN`, `qwen35_…`): all on the same grid with the same models and images, and 221
  of them carry a measured (TTFT, TPOT) pair equal to the last digit to a row of those two files (the same run; the
  files also repeat 266 of their own runs between them: the fits' samples may draw one run twice).

POOLED: which prompts repeat. aiperf's synthetic dataset is `--conversation-num` conversations, default 100
(ai-dynamo/aiperf@db4f6397 aiperf/common/config/config_defaults.py ConversationDefaults.NUM, "will be reused until
benchmarking is complete"), each request drawing one at random with replacement (aiperf/dataset/dataset_manager.py
`_conversation_query_random.choice`); aiconfigurator's bench_run.sh.j2 does not set it. vLLM and SGLang launched by
aiconfigurator's generator keep their prefix caches on (`--no-enable-prefix-caching` / `--disable-radix-cache` only
when a prefix is configured: generator/rule_plugin/benchmark/*.rule), its TensorRT-LLM templates set
`enable_block_reuse: false`. So a repeated prompt is served from the cache, all but its last token (BenchProtocol.
reuse_share: the share of measured requests that repeat a prompt still cached; planner.traffic.generators.
repeated_prompts marks them). Only the gap-analysis runs on H200 (vLLM 0.12.0, SGLang 0.5.6.post2:
POOLED_CAMPAIGNS) are read so: their rows cannot have prefilled every prompt (Llama-3.1-8B FP8 under vLLM on one
H200, 64 clients of 2,000 / 100 tokens at 121.7 ms TTFT and 9.74 ms TPOT: 58.9 prompts a second, whose 2 × 7.5e9 +
2 × 32 × 4,096 × 2,000 FLOPs a token are 0.93 of the H200's 1,979 dense FP8 TFLOP/s, with 64 streams decoding besides),
while the H100 runs of the same campaign show every prompt's chunk in the decode steps (Qwen3-32B under vLLM on
2 × H100, 128 clients of 1,024 / 128 tokens: 80 ms TPOT measured; 29 ms if the prompts were cached). The other
sources say nothing of their prompts; their rows are read as every prompt prefilled.

So the first of the R measured rounds is a wave: every prompt arrives in the same step and waits for the prefills
before it (the mean wait of that round grows with N); whether later rounds stay waves is the simulation's to say
(planner.traffic.clients). A row is predicted as `simulate` runs its client (BenchProtocol.client, its rounds as
--num-requests, its warm-up as --warmup-requests, its lengths and prompt pool: planner.accuracy.serving_points.
simulate_flags).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BenchProtocol:
    """One benchmark client's measurement: `rounds` rounds of N requests measured (the first a burst of N),
    prompt and reply lengths uniform in [⌊low × L⌋, L] (low 1: fixed)."""

    name: str
    rounds: int
    length_low: float = 1.0
    prompt_pool: int = 0  # distinct prompts drawn with replacement (0: a new prompt for every request)
    warmup_rounds: int = 0  # rounds of N sent and drained before the measured ones
    client: str = "vllm-bench"  # the planner.traffic.clients id of the tool (`simulate --client`)
    warmup_flag_rounds: int = 0  # rounds of N the run's command line sent as warm-up (`--warmup-requests`)

    def reuse_share(self, users: int, cached_prompts: float) -> float:
        """The share of measured requests whose prompt the client sent before and the engine still holds in its
        prefix cache: request j (counting the warm-up) repeats an earlier prompt with probability 1 − (1 − 1/P)^j
        for a pool of P prompts, averaged over the measured window; with uniform draws an LRU cache holding C of the
        P prompts hits at most C / P of them (`cached_prompts` = C)."""
        pool = self.prompt_pool
        if pool <= 0 or users <= 0:
            return 0.0
        q = 1.0 - 1.0 / pool
        j0, j1 = self.warmup_rounds * users, (self.warmup_rounds + self.rounds) * users
        seen = 1.0 - (q**j0 - q**j1) / ((1.0 - q) * (j1 - j0)) if pool > 1 else 1.0
        return max(0.0, min(seen, cached_prompts / pool))

    def length_spec(self, tokens: int) -> str:
        """The planner.traffic length distribution of a request of nominal length `tokens`."""
        lo = int(tokens * self.length_low)
        return f"fixed:{tokens}" if lo >= tokens else f"uniform:{max(1, lo)},{tokens}"

    def measured_mean(self, burst: float, steady: float) -> float:
        """The mean over the R measured rounds: the burst round's mean weighed 1/R, the steady state's (R − 1)/R."""
        share = 1.0 / max(1, self.rounds)
        return share * burst + (1 - share) * steady

    def mean_length(self, tokens: int) -> float:
        lo = max(1, int(tokens * self.length_low))
        return (lo + tokens) / 2


AIPERF = BenchProtocol(
    "aiperf: a burst of N after a drained warm-up of 2N, 20N requests measured, fixed lengths",
    20,
    client="aiperf",
    warmup_flag_rounds=2,
)
AIPERF_POOLED = BenchProtocol(
    "aiperf: a burst of N after a drained warm-up of 2N, 20N requests measured, fixed lengths, each prompt drawn "
    "from aiperf's default pool of 100",
    20,
    prompt_pool=100,
    warmup_rounds=2,
    client="aiperf",
    warmup_flag_rounds=2,
)
INFERENCEMAX = BenchProtocol(
    "InferenceMAX benchmark_serving: a burst of N, 10N requests measured, lengths uniform in [0.8, 1] x ISL / OSL",
    10,
    0.8,
)
INFERENCEMAX_FILES = ("source_file=2026-03-25.csv", "source_file=2026-04-06.csv")
INFERENCEMAX_DB_DUMP = ("db-dump/",)  # the module note: InferenceMAX's runs again, by their grid and duplicated means


POOLED_CAMPAIGNS = ("aic-auto-gap-analysis/data/h200_sxm/vllm/", "aic-auto-gap-analysis/data/h200_sxm/sglang/")


def protocol_of(row: dict) -> BenchProtocol:
    """The client that measured an aiconfigurator row (module note): InferenceMAX's for its two files and the
    database dump; aiperf with its prompt pool for the H200 gap-analysis runs of vLLM and SGLang (POOLED note); else
    aiperf, every prompt prefilled."""
    source = (row.get("silicon_data_source") or "").strip()
    if source.startswith(INFERENCEMAX_FILES + INFERENCEMAX_DB_DUMP):
        return INFERENCEMAX
    return AIPERF_POOLED if any(c in source for c in POOLED_CAMPAIGNS) else AIPERF


def burst_protocol(rounds: int) -> BenchProtocol:
    """A client result file's closed loop (`vllm bench serve --max-concurrency N --request-rate inf`, SGLang
    bench_serving likewise): every request task created at once behind a semaphore of N, so `rounds` = completed / N
    rounds measured, the first a burst; lengths as the file's means (fixed)."""
    return BenchProtocol(
        f"a burst of N, {rounds} rounds of N measured (the result file's completed / concurrency)", rounds
    )
