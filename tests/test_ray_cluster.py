"""The ranking on Ray (a local instance started here) gives exactly the local result."""

from __future__ import annotations

import pytest
from test_recommend import without_timing

from planner.capacity.recommend import recommend
from planner.core.scenario import Scenario
from planner.core.workload import TrafficSpec

ray = pytest.importorskip("ray", reason="Ray is an optional extra (pip install '.[cluster]'); not installed here")
pytestmark = pytest.mark.slow

SMALL = TrafficSpec(profile="custom", prompt="fixed:500", output="fixed:100", num_requests=200)
KW = dict(gpu_ids=["H100-SXM", "L40S"], tps=(1, 2))


@pytest.fixture(scope="module")
def local_ray():
    from conftest import ROOT

    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}}
    )
    yield
    ray.shutdown()


def test_ray_ranking_equals_local_ranking(local_ray):
    done = []
    on_ray = recommend(Scenario(), 20, SMALL, ray_address="auto", progress=lambda k, n: done.append(k), **KW)
    local = recommend(Scenario(), 20, SMALL, workers=2, prune=False, **KW)  # Ray searches every candidate
    assert without_timing(on_ray) == without_timing(local)
    assert done[-1] == len(local) >= 4
