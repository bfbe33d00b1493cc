"""The simulator's state invariants, checked at every step boundary when ENABLED (the tests turn it on in
tests/conftest.py; a run leaves it off: the check is O(running requests) per step).

As vLLM asserts its block accounting (vllm/v1/core/block_pool.py, kv_cache_manager.py) and Vidur its scheduler
state (vidur/scheduler/replica_scheduler), a broken invariant raises AssertionError at the step that broke it:
- the pool: 0 <= free <= total; the cached free blocks are part of the free ones; the free queue's segments add
  up to the free count;
- blocks allocated = blocks held by running requests + free: each running request holds the blocks of the
  tokens in its KV cache (capped by a sliding window) minus the shared prefix blocks it references, and each
  shared prefix entry in use is held once;
- no request both running and waiting; running = stepped individually + lock-step decoders (disjoint);
  at most max_num_seqs running;
- the policy's own (planner/sim/policies.py `check`: reservations match the running requests and fit the pool).
A policy that never preempts raises at the preemption itself (Replica._preempt), checks on or off.
"""

from __future__ import annotations

ENABLED = False


def check(rep) -> None:
    """Assert the invariants of replica `rep` (planner/sim/simulator.py Replica) between two steps."""
    pool = rep.pool
    if not 0 <= pool.num_free <= pool.num_blocks:
        raise AssertionError(f"{pool.num_free} free blocks in a pool of {pool.num_blocks}")
    if not 0 <= pool.num_cached_free <= pool.num_free:
        raise AssertionError(f"{pool.num_cached_free} cached free blocks, {pool.num_free} free")
    if pool.num_cached_free and sum(pool.free_queue.values()) != pool.num_free:
        raise AssertionError("the free queue's segments do not add up to the free blocks")
    runs = [key[1] for key in pool.free_queue if key[0] == "run"]
    if set(runs) != set(pool.run_ids) or set(runs) != set(pool.run_next):
        raise AssertionError("the free queue's runs and the run tables disagree")
    live = 0
    for serial in runs:  # a run's queue count is its live entries' blocks, none before run_next
        ids = pool.run_ids[serial]
        if any(pool.free_in_run.get(h) == serial for h in ids[: pool.run_next[serial]]):
            raise AssertionError(f"run {serial} has a free entry before its next")
        num_live = sum(pool.free_in_run.get(h) == serial for h in ids)
        live += num_live
        if pool.free_queue[("run", serial)] != num_live * pool.blocks_per_prefix or not num_live:
            raise AssertionError(f"run {serial} counts {pool.free_queue[('run', serial)]} blocks, {num_live} live")
    if live != len(pool.free_in_run) or set(pool.free_in_run) & set(pool.prefix_refs):
        raise AssertionError("a free prefix entry is in no run, or referenced")
    if pool.cached != set(pool.free_in_run) | set(pool.prefix_refs):
        raise AssertionError("the set of cached prefix ids is not the referenced + free cached ones")
    running, waiting = rep.running, rep.waiting
    if len(running) > rep.cfg.running_cap:
        raise AssertionError(f"{len(running)} running, max_num_seqs {rep.cfg.max_num_seqs} (cap {rep.cfg.running_cap})")
    both = set(running).intersection(waiting)
    if both:
        raise AssertionError(f"requests {sorted(both)[:5]} both running and waiting")
    if len(set(waiting)) != len(waiting):
        raise AssertionError("a request waits twice")
    decoders, step = rep.decoders, rep.step_index
    held = len(pool.prefix_refs) * pool.blocks_per_prefix
    num_decoding = 0
    for i in running:
        if decoders.member[i]:
            num_decoding += 1
            if i in rep.stepped_individually:
                raise AssertionError(f"request {i} both decoding in lock step and stepped individually")
            tokens = decoders.base_computed[i] + step
        elif i in rep.stepped_individually:
            tokens = rep.computed_tokens[i]
        else:
            raise AssertionError(f"request {i} runs but is neither decoding nor stepped")
        held += rep._blocks(tokens) - rep._shared_blocks(i)
    if num_decoding != decoders.count or len(rep.stepped_individually) + num_decoding != len(running):
        raise AssertionError("running requests and the decode batch disagree")
    if held != pool.num_active:
        raise AssertionError(
            f"step {step}: running requests hold {held} blocks, the pool has {pool.num_active} allocated "
            f"({pool.num_free} free of {pool.num_blocks})"
        )
    rep.policy.check(rep)
