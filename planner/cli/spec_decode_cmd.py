"""`python -m planner spec-decode`: speculative decoding on the scenario (a contract: keep the keys
`expected_tokens_per_pass` and `speedup`)."""

from __future__ import annotations

from planner.cli import emit
from planner.cli.scenario_args import add_scenario_args, resolved_from_args
from planner.cli.technique_args import add_request_args, decode_context, positive, request_tokens
from planner.core.catalog import get_model
from planner.core.errors import InputError
from planner.core.scenario import resolve_draft
from planner.core.units import fmt_gb
from planner.techniques.spec_decode import SpecDecodeReport, default_draft, spec_decode_report

MAX_K = 32


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "spec-decode",
        help="speculative decoding: tokens per pass, speed-up, best k",
        description="Expected tokens per target pass (1 − α^(k+1)) / (1 − α), the cost of "
        "k draft steps plus one verify step, and the speed-up at a batch size.",
    )
    add_scenario_args(p)
    g = p.add_argument_group("speculative decoding")
    g.add_argument("--alpha", type=float, required=True, help="per-token acceptance rate, 0 … 1")
    g.add_argument("--k", type=int, required=True, help=f"draft tokens proposed per target pass (1 … {MAX_K})")
    g.add_argument(
        "--draft-model",
        default=None,
        help="draft preset id or config.json path (default: the smallest preset sharing the vocabulary)",
    )
    add_request_args(p, batch_default=1)
    p.set_defaults(func=run)


def _validate(args) -> None:
    if not 0 <= args.alpha <= 1:
        raise InputError("--alpha", "must be between 0 and 1")
    if not 1 <= args.k <= MAX_K:
        raise InputError("--k", f"must be between 1 and {MAX_K}")
    positive(args, "batch")
    if args.batch > 1_000_000:
        raise InputError("--batch", "must be at most 1,000,000 sequences")


def run(args) -> int:
    _validate(args)
    r = resolved_from_args(args)
    draft_id = args.draft_model or default_draft(r.model)
    if draft_id is None:
        raise InputError("--draft-model", f"no preset is smaller than {r.model.name}; name a draft model")
    try:
        draft = get_model(draft_id)
    except InputError as err:
        raise InputError("--draft-model", err.message) from None
    report = spec_decode_report(
        r,
        resolve_draft(r, draft),
        args.alpha,
        args.k,
        args.batch,
        decode_context(args),
        request_tokens(args),
    )
    emit(report.to_dict(), args.json, _text(report))
    return 0


def _text(o: SpecDecodeReport) -> str:
    m = o.memory
    ks = ", ".join(f"k={row.k}: {row.speedup:.2f}×" for row in o.speedup_by_k)
    return "\n".join(
        [
            f"{o.model} with draft {o.draft_model} on {o.gpu}, α = {o.alpha:g}, k = {o.k}, "
            f"batch {o.batch}, context {o.context_tokens:,}",
            f"  expected tokens per target pass  (1 − α^(k+1)) / (1 − α) = {o.expected_tokens_per_pass:.3f}",
            f"  target decode step               {o.target_step_s * 1e3:.2f} ms ({o.target_bound}-bound)",
            f"  one pass                         {o.k} × {o.draft_step_s * 1e3:.2f} ms draft + "
            f"{o.verify_step_s * 1e3:.2f} ms verify = {o.pass_s * 1e3:.2f} ms",
            f"  speed-up                         {o.speedup:.2f}× ({o.tokens_per_s_per_user_without:.1f} → "
            f"{o.tokens_per_s_per_user_with:.1f} tokens/s per user)",
            f"  best k at this batch             {o.best_k}  ({ks})",
            f"  draft memory per GPU             {fmt_gb(m.draft_weight_bytes_per_gpu)} weights + "
            f"{m.draft_kv_bytes_per_token_per_gpu:,.0f} B KV per token",
            f"  KV pool                          {m.kv_pool_tokens_without:,} → "
            f"{m.kv_pool_tokens_with:,} tokens; "
            f"requests {m.max_requests_without} → {m.max_requests_with}",
            *(
                []
                if o.same_vocabulary
                else ["  warning: the draft's vocabulary differs from the target's: vLLM needs the same tokenizer"]
            ),
        ]
    )
