"""SGLang's wide-EP DeepSeek-V3 figures on H100 (LMSYS blog, 2025-05-05; data/measurements/sglang_wide_ep/) against
the planner: predicted and measured tokens/s per node and the error of each row (validation.wide_ep).

    python -m validation.accuracy_wide_ep
"""

from __future__ import annotations

from validation.wide_ep import results


def main() -> None:
    rows = results()
    print(f"{'row':<44} {'measured':>9} {'predicted':>9} {'error':>7} {'step ms':>8}")
    for r in rows:
        p = r.point
        print(f"{p.label:<44} {p.measured_tok_s_per_node:>9,.0f} {r.predicted_tok_s_per_node:>9,.0f} "
              f"{r.error:>+7.1%} {r.step_s * 1e3:>8.1f}")  # fmt: skip
    worst = max(rows, key=lambda r: abs(r.error))
    print(f"largest |error|: {abs(worst.error):.1%} ({worst.point.label}); target 15%")


if __name__ == "__main__":
    main()
