"""The fleet's results pinned on a fixed small workload with prefixes (issue 26 item 5): the speed work on the block
pool and the fleet loop must not move a number.

The figures were computed on main at 6ca765f (before the run-length block pool) for the workloads
and pools below, 3 replicas, seed 1, every router. The pools are small so that the runs evict cached prefix blocks
(thousands of evictions) and preempt requests (own cached blocks re-hit on readmission); "b32" has prefix ids of
32 tokens over 16-token KV blocks (two KV blocks per prefix entry).
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.sim.config import LinearStepCost
from planner.sim.fleet import simulate_fleet
from planner.sim.fleet_summary import fleet_summary
from planner.sim.router import ROUTERS
from planner.traffic.sessions import sessions

LINEAR = LinearStepCost(0.006, 3e-6, 4e-8)
CHAT = ("lognormal:mean=200,sigma=0.6", "lognormal:mean=120,sigma=0.6")
WORKLOADS = {
    # 100 sessions of 4 turns behind a 320-token system prompt, 2.5 sessions/s, 2 s think; 260 blocks a replica
    "b16": (
        lambda: sessions(400, 4, 320, *CHAT, 2.0, rate_per_s=2.5, seed=2),
        dict(num_gpu_blocks=260, block_size=16, max_num_seqs=16, max_num_batched_tokens=1024),
    ),
    # 100 sessions of 3 turns behind a 640-token prompt, prefix ids over 32 tokens; 300 blocks a replica
    "b32": (
        lambda: sessions(300, 3, 640, *CHAT, 1.0, rate_per_s=3.0, prefix_block_tokens=32, seed=4),
        dict(num_gpu_blocks=300, block_size=16, max_num_seqs=16, max_num_batched_tokens=1024),
    ),
}

PINNED = {
    "b16-round-robin": dict(
        ttft=[0.011690694555630543, 0.7195464215360444, 1.474830062712747],
        e2e=[0.6760823785755152, 2.0108165751918152, 2.843963782453376],
        tpot=[0.00616072106690139, 0.010612520411024798],
        hit=0.46943099122020604,
        per_replica=[134, 133, 133],
        per_hit=[0.43354604840841293, 0.5232278881996729, 0.44998437130724483],
        evicted=17637,
        preempt=36,
        finish_sum=10043.8422220937,
        steps=[6924, 6747, 6583],
    ),
    "b16-least-outstanding": dict(
        ttft=[0.011378746730862588, 0.20283696516876093, 1.1286734421239704],
        e2e=[0.6522514005557163, 1.7030543856820766, 3.678992227215254],
        tpot=[0.006161837108433731, 0.0069345080734098865],
        hit=0.42768064188157046,
        per_replica=[152, 123, 125],
        per_hit=[0.47571280104830327, 0.4145378886705527, 0.38023862244608286],
        evicted=17330,
        preempt=15,
        finish_sum=9995.613039380656,
        steps=[7048, 6957, 6290],
    ),
    "b16-least-kv": dict(
        ttft=[0.011312086539776445, 0.19215336362077567, 1.8496929409478118],
        e2e=[0.6559728887489733, 2.059230033472819, 3.3846178046523843],
        tpot=[0.006167592307692251, 0.006939522611320791],
        hit=0.4235937554779804,
        per_replica=[130, 122, 148],
        per_hit=[0.42882842723640013, 0.4311054849616229, 0.4128796528887874],
        evicted=17799,
        preempt=20,
        finish_sum=10020.878342053009,
        steps=[7132, 6854, 6260],
    ),
    "b16-prefix-aware": dict(
        ttft=[0.0108004474534793, 0.11918960174605087, 0.4728479001274344],
        e2e=[0.6505167271998049, 1.6017531794729745, 3.1028017736622204],
        tpot=[0.006163027590539566, 0.007823770481599955],
        hit=0.5308144223015782,
        per_replica=[140, 153, 107],
        per_hit=[0.5856077989823696, 0.47466546691479716, 0.5356936145962263],
        evicted=15641,
        preempt=22,
        finish_sum=9976.88762325991,
        steps=[6869, 6484, 5884],
    ),
    "b32-round-robin": dict(
        ttft=[0.009897437915055818, 0.014198483372414653, 0.020854909599300975],
        e2e=[0.5867323275992646, 1.5835032181135529, 2.4608641936901696],
        tpot=[0.006147980304093568, 0.006318424263953902],
        hit=0.6117123033435171,
        per_replica=[100, 100, 100],
        per_hit=[0.6132928720978529, 0.5878172761428742, 0.634611525542032],
        evicted=9713,
        preempt=2,
        finish_sum=5698.0717647136,
        steps=[5364, 5434, 5540],
    ),
    "b32-least-outstanding": dict(
        ttft=[0.009856237794136469, 0.014511869282780789, 0.020622392195573977],
        e2e=[0.5880012793115466, 1.5760195737291582, 2.466671732243368],
        tpot=[0.006142764831989238, 0.006265563192760165],
        hit=0.6226765268537818,
        per_replica=[115, 94, 91],
        per_hit=[0.6278238794362146, 0.5934159742087818, 0.6469534395407525],
        evicted=9238,
        preempt=0,
        finish_sum=5697.135304744281,
        steps=[5930, 5473, 5413],
    ),
    "b32-least-kv": dict(
        ttft=[0.010034857496840743, 0.014063233979702794, 0.017985305813743715],
        e2e=[0.5888660569904784, 1.5780704150137248, 2.4561085635380357],
        tpot=[0.006150501909810582, 0.006264985151261757],
        hit=0.6283413756674185,
        per_replica=[112, 88, 100],
        per_hit=[0.6312687987232214, 0.6068612175841402, 0.6445244394327102],
        evicted=9114,
        preempt=0,
        finish_sum=5697.895962440147,
        steps=[5738, 5165, 5327],
    ),
    "b32-prefix-aware": dict(
        ttft=[0.009258860949577397, 0.012439043730343347, 0.01556165600000008],
        e2e=[0.587362608797549, 1.5723976950241354, 2.4838913713337876],
        tpot=[0.006151766928104579, 0.006276936618845317],
        hit=0.7682265939525454,
        per_replica=[99, 113, 88],
        per_hit=[0.7834682256729129, 0.7754611128785703, 0.741657037993611],
        evicted=6052,
        preempt=0,
        finish_sum=5697.417717612962,
        steps=[5484, 5185, 4956],
    ),
}


def figures(res) -> dict:
    s = fleet_summary(res)
    return dict(
        ttft=[s.ttft_s.p50, s.ttft_s.p95, s.ttft_s.p99],
        e2e=[s.e2e_s.p50, s.e2e_s.p95, s.e2e_s.p99],
        tpot=[s.tpot_s.p50, s.tpot_s.p99],
        hit=s.prefix_hit_rate,
        per_replica=[p.num_requests for p in s.per_replica],
        per_hit=[p.prefix_hit_rate for p in s.per_replica],
        evicted=int(res.fleet.num_evicted_blocks),
        preempt=s.preemptions,
        finish_sum=float(np.nansum(res.fleet.requests.finish_s)),
        steps=[len(r.steps) for r in res.replicas],
    )


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
@pytest.mark.parametrize("router", ROUTERS)
def test_fleet_figures_are_those_pinned_before_the_speed_work(workload, router):
    make, pool = WORKLOADS[workload]
    got = figures(simulate_fleet(make(), pool, LINEAR, 3, router, seed=1))
    want = PINNED[f"{workload}-{router}"]
    for key in ("per_replica", "evicted", "preempt", "steps"):
        assert got[key] == want[key], key
    for key in ("ttft", "e2e", "tpot", "hit", "per_hit", "finish_sum"):
        assert got[key] == pytest.approx(want[key], rel=1e-12, abs=0), key
    assert want["evicted"] > 1000  # the runs do evict cached prefix blocks
