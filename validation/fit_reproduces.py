"""Does validation/fit_efficiency.py reproduce data/efficiency.yaml byte for byte? The whole fit (every engine, the
serving rows traced as `simulate` runs them: ~10 min of CPU on this 2-core machine); the test suite checks a subset
(tests/test_fit_reproduces.py).

    python -m validation.fit_reproduces
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from planner.latency.efficiency import EFFICIENCY_PATH
from validation import fit_efficiency as fe


def main() -> int:
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "efficiency.yaml"
        fe.main(["--out", str(out)])
        same = out.read_bytes() == EFFICIENCY_PATH.read_bytes()
    print(f"fit in {time.time() - t0:.0f} s: {'reproduces' if same else 'DIFFERS from'} {EFFICIENCY_PATH}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
