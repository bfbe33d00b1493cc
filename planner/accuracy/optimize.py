"""A small derivative-free minimiser for fitting efficiency constants (no SciPy dependency)."""

from __future__ import annotations

import numpy as np


def nelder_mead(f, x0: np.ndarray, step: float = 0.4, iters: int = 1500, tol: float = 1e-9) -> np.ndarray:
    """Minimise f from x0 (standard reflection / expansion / contraction / shrink)."""
    simplex = [x0] + [x0 + step * np.eye(len(x0))[i] for i in range(len(x0))]
    values = [f(x) for x in simplex]
    for _ in range(iters):
        order = np.argsort(values)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < tol:
            break
        centroid = np.mean(simplex[:-1], axis=0)
        xr = centroid + (centroid - simplex[-1])
        fr = f(xr)
        if fr < values[0]:
            xe = centroid + 2 * (centroid - simplex[-1])
            fe = f(xe)
            simplex[-1], values[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (simplex[-1] - centroid)
            fc = f(xc)
            if fc < values[-1]:
                simplex[-1], values[-1] = xc, fc
            else:
                simplex = [simplex[0] + 0.5 * (s - simplex[0]) for s in simplex]
                values = [f(s) for s in simplex]
    return simplex[int(np.argmin(values))]
