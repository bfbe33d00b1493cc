"""Sizing a fleet under each router: the search counted by hand, and the size it finds checked by its neighbours."""

from __future__ import annotations

import pytest

from planner.capacity.routing import compare_routers, meets_slo, run_fleet, size_fleet, smallest_fleet
from planner.core.scenario import Scenario, resolve
from planner.sim.fleet_summary import fleet_summary
from planner.sim.serving import Replica
from planner.traffic.sessions import sessions


def test_smallest_fleet_doubles_then_bisects():
    # needs 11: probes 1, 2, 4, 8, 16 (holds), then bisects 8..16: 12 (holds), 10, 11 (holds)
    seen = []

    def meets(n):
        seen.append(n)
        return n >= 11

    assert smallest_fleet(meets, 64) == 11
    assert seen == [1, 2, 4, 8, 16, 12, 10, 11]
    assert smallest_fleet(lambda n: False, 5) is None
    assert smallest_fleet(lambda n: True, 5) == 1


def _traffic(rate_per_s: float = 3.0):
    return sessions(300, 3, 2000, "fixed:200", "fixed:150", 2.0, rate_per_s=rate_per_s, first_user="fixed:500")


def test_fleet_size_is_the_fewest_replicas_that_meet_the_slo():
    r = Replica(resolve(Scenario()))
    # 20 sessions a second on Llama-3.1-8B / H100: TPOT p95 falls as replicas are added (about 21, 14, 12 ms
    # for 1, 2, 3 replicas), so a 13.5 ms target needs more than one
    slo_ttft, slo_tpot = 0.2, 0.0135
    size = size_fleet(r, _traffic(20.0), "least-outstanding", slo_ttft, slo_tpot, usd_per_gpu_hour=2.0)
    n = size.replicas
    assert n is not None and n > 1
    assert meets_slo(size.at_size, slo_ttft, slo_tpot)
    below = fleet_summary(run_fleet(r, _traffic(20.0), n - 1, "least-outstanding"))
    assert not meets_slo(below, slo_ttft, slo_tpot)
    assert size.usd_per_hour == pytest.approx(n * r.resolved.deployment.gpus_per_replica * 2.0)


def test_compare_routers_saves_prefill_against_round_robin_on_a_shared_prompt():
    cmp = compare_routers(Replica(resolve(Scenario())), _traffic(), 3, routers=("round-robin", "prefix-aware"))
    table = cmp.table().set_index("router")
    assert table.loc["round-robin", "prefill_saved_vs_round_robin"] == 0
    aware = cmp.summaries["prefix-aware"]
    assert table.loc["prefix-aware", "prefill_saved_vs_round_robin"] == pytest.approx(
        1 - aware.prefill_tokens / cmp.summaries["round-robin"].prefill_tokens
    )
    assert aware.prefix_hit_rate >= cmp.summaries["round-robin"].prefix_hit_rate


def test_compare_routers_reports_requests_routed_up_to_the_total():
    wl = _traffic()
    seen = []
    compare_routers(
        Replica(resolve(Scenario())), wl, 3, ("round-robin", "prefix-aware"), progress=lambda d, t: seen.append((d, t))
    )
    total = 2 * wl.num_requests
    assert {t for _, t in seen} == {total} and seen[-1][0] == total
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)  # counts only go up
    assert (wl.num_requests, total) in seen  # the first router's end
