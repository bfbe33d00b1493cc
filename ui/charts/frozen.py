"""Figures serialised once: a cached chart that a page redraws on every rerun without plotly re-walking it.

`st.plotly_chart(fig)` calls `fig.to_dict()` on every run (plotly.tools.return_figure_from_figure_or_data), which
deep-copies the figure and re-encodes each numpy array as base64 (`convert_to_base64`): 20% of the server's CPU on
a Batching rerun and 6% on "Does it fit?" under 20 sessions (py-spy, benchmarks/bench_app_sessions.py), for figures
that come from a cache and never change. A frozen figure is the same figure whose `to_dict` returns the dict made
when it was frozen; what reaches the browser is byte for byte the same JSON.

Only for figures nobody changes after freezing (the cached ones): `update_layout` on a frozen figure would not
reach its dict.
"""

from __future__ import annotations

import plotly.graph_objects as go


class FrozenFigure(go.Figure):
    """A figure whose `to_dict` is computed once (module note); readers must not mutate the dict it returns."""

    _frozen_dict: dict

    def to_dict(self) -> dict:
        return self._frozen_dict


def freeze(fig: go.Figure) -> FrozenFigure:
    """`fig` itself, frozen (in place: copying a figure would validate it all again, ~10 ms for a Gantt)."""
    as_dict = fig.to_dict()
    for trace in as_dict.get("data", []):
        trace.pop("uid", None)  # plotly.io.to_json pops it from the dict it is given; done here once
    fig.__class__ = FrozenFigure
    fig._frozen_dict = as_dict
    return fig
