"""KV offload tiers: what they change on a multi-turn workload and what they cost the simulator.

Llama-3.1-8B on one H100-SXM under vLLM with a small KV pool (--gpu-memory-utilization 0.3: ~54,000 tokens),
sessions of 6 turns behind a 2,000-token system prompt (first message 4,000 tokens, later 200, answers 200, 60 s
of thinking, 0.5 sessions/s): the histories outgrow the GPU pool, and a CPU tier over PCIe Gen5 keeps them.
Prints, for offload off, CPU at the default (2 x the GPU pool) and CPU at 64 GiB: p95 TTFT, the prefix hit rate
(all tiers) and from the CPU tier, reload seconds, and the simulation's wall and CPU time (median of 3 runs).

    python -m benchmarks.bench_offload
"""

from __future__ import annotations

import statistics
import time

from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.sim.offload_plan import GIB, KVOffload
from planner.sim.records import summary
from planner.sim.serving import Replica, run_serving
from planner.sim.settings import ServerSettings
from planner.traffic.sessions import sessions

RUNS = 3


def main() -> None:
    dep = Deployment(gpu_memory_utilization=0.3)
    r = resolve(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", deployment=dep))
    wl = sessions(1200, 6, 2000, "fixed:200", "fixed:200", 60.0, rate_per_s=0.5, first_user="fixed:4000", seed=1)
    print(f"{wl.source}; {wl.num_requests:,} requests")
    print(
        f"{'offload':<22}{'p95 TTFT ms':>12}{'hit rate':>10}{'from CPU':>10}{'reload s':>10}{'wall s':>8}{'cpu s':>8}"
    )
    for label, kv in (
        ("off", None),
        ("cpu, 2 x GPU pool", KVOffload("cpu")),
        ("cpu, 64 GiB", KVOffload("cpu", 64 * GIB)),
    ):
        replica = Replica(r, ServerSettings.of(r, offload=kv))
        walls, cpus = [], []
        for _ in range(RUNS):
            c0 = time.process_time()
            res = run_serving(replica, wl)
            cpus.append(time.process_time() - c0)
            walls.append(res.wall_s)
        s = summary(res)
        admitted = float(
            res.requests.prompt_tokens[res.requests.first_scheduled_s == res.requests.first_scheduled_s].sum()
        )
        cpu_hit = res.offload.hit_tokens("cpu") / admitted if res.offload else 0.0
        reload_s = res.offload.reload_s if res.offload else 0.0
        print(
            f"{label:<22}{s['ttft_p95_s'] * 1e3:>12,.0f}{s['prefix_hit_rate']:>10.1%}{cpu_hit:>10.1%}"
            f"{reload_s:>10.2f}{statistics.median(walls):>8.2f}{statistics.median(cpus):>8.2f}"
        )


if __name__ == "__main__":
    main()
