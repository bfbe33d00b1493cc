"""Requests entering and leaving a replica, and the KV blocks they hold: arrivals joining the queue or rejected,
the closed loop's next request, a finish or a preemption returning the blocks (full ones stay cached), the prefix
blocks a request publishes as it computes them, and what the policies read (tokens generated, waiting requests
that started before). A mixin of Replica (planner/sim/simulator.py, whose module note is the design), which holds
the state.
"""

from __future__ import annotations

import heapq

from planner.sim.records import REJECT_QUEUE_FULL, REJECT_TOO_LONG


class RequestLifecycle:
    """Replica's arrivals, rejections, finishes, preemptions and block accounting (state: Replica)."""

    def _blocks(self, tokens: int) -> int:
        """Blocks a request holds with `tokens` in its KV cache (capped by a sliding window)."""
        blocks = -(-tokens // self.block_size)
        cap = self.max_blocks
        return blocks if cap is None or blocks < cap else cap

    def _accept_arrivals(self) -> None:
        while self.pending and self.pending[0][0] <= self.now:
            t, i = heapq.heappop(self.pending)
            if self.too_long[i]:
                self._reject(i, t, REJECT_TOO_LONG)
            else:
                self.waiting.append(i)
                self.num_waiting_new += 1

    def _reject(self, i: int, t: float, code: int) -> None:
        self.out.rejected[i] = code
        if self.prefix_ids is not None:
            self.prefix_ids.drop(i)
        self._send_next(i, t)

    def _enforce_queue_limit(self) -> None:
        """After a step's admissions, new requests beyond max_queue waiting are rejected (newest first)."""
        limit = self.cfg.max_queue
        while limit is not None and self.num_waiting_new > limit:
            i = self.waiting.pop()
            self.num_waiting_new -= 1
            self._reject(i, self.now, REJECT_QUEUE_FULL)

    def _send_next(self, i: int, t: float) -> None:
        """Closed loop: the user of request i thinks, then sends their next request."""
        j = self.next_of[i]
        if j >= 0:
            t_next = t + float(self.wl.think_s[j])
            self.out.arrival_s[j] = t_next
            heapq.heappush(self.pending, (t_next, j))

    def _shared_blocks(self, i: int) -> int:
        return len(self.shared_prefix_held[i]) * self.pool.blocks_per_prefix

    def _release(self, i: int, tokens_held: int, cached_tokens: int = 0) -> None:
        """Return request i's blocks; with `cached_tokens`, its full blocks stay cached for its readmission."""
        shared = self._shared_blocks(i)
        private = max(0, self._blocks(tokens_held) - shared)
        cached = min(private, max(0, cached_tokens // self.cfg.block_size - shared)) if self.own_caching else 0
        self.pool.free(private - cached, owner=i if cached else None, num_cached=cached)
        if self.shared_prefix_held[i]:
            self.pool.release(self.shared_prefix_held[i])
        self.prefix_entries_at_preemption[i] = len(self.shared_prefix_held[i])
        self.shared_prefix_held[i] = []
        self.next_prefix_to_publish[i] = 0
        if self.release_hook is not None:
            self.release_hook(self, i)
        del self.running[i]
        self.stepped_individually.pop(i, None)

    def _finish(self, i: int, tokens_held: int) -> None:
        if self.publish_answers:
            self._publish_answer(i, tokens_held)
        self._release(i, tokens_held)
        if self.prefix_ids is not None:
            self.prefix_ids.drop(i)
        self.generated_tokens[i] = self.output_tokens[i]
        self.out.finish_s[i] = self.now
        self._send_next(i, self.now)

    def _preempt(self, i: int) -> None:
        """vLLM's _preempt_request: free the blocks (full ones stay cached), computed = 0, front of the queue."""
        if not self.policy.may_preempt:
            raise RuntimeError(f"the {self.policy.name} policy never preempts, yet request {i} had to be")
        if self.decoders.member[i]:
            computed, self.generated_tokens[i] = self.decoders.leave(i, self.step_index)
            held = computed + (1 if self.decode_slots_taken else 0)  # this step's slot already taken
        else:
            computed = held = self.computed_tokens[i]
        self._release(i, held, cached_tokens=computed)
        self.tokens_lost_at_preemption[i] = computed
        self.out.num_preemptions[i] += 1
        self.computed_tokens[i] = 0
        self.waiting.appendleft(i)
        self.preempted_this_step = True
        self.policy.on_preempt(self)

    def num_waiting_started(self) -> int:
        """Waiting requests that started before (preempted ones, at the front of the queue)."""
        return len(self.waiting) - self.num_waiting_new

    def generated(self, i: int) -> int:
        """Tokens request i has generated so far (for the policies)."""
        if self.decoders.member[i]:
            return self.decoders.base_generated[i] + self.step_index
        return self.generated_tokens[i]

    def _newest(self) -> int:
        return next(reversed(self.running))

    def _publish_prefix(self, i: int) -> None:
        full = min(self.computed_tokens[i] // self.prefix_block_tokens, self.num_cacheable_prefix[i])
        start = self.next_prefix_to_publish[i]
        if full > start:
            self._publish(i, self.prefix_ids[i], start, full)

    def _publish(self, i: int, ids, start: int, full: int) -> None:
        new = self.pool.register_all(ids, start, full)
        self.shared_prefix_held[i].extend(new)
        self.next_prefix_to_publish[i] = full
        if self.tiers is not None and not self.tiers.write_back:
            self.tiers.store(new)  # write-through: host copies as the blocks are computed (offload_tiers)

    def _publish_answer(self, i: int, tokens_held: int) -> None:
        """Sessions: the answer's full blocks join the prefix cache as the request finishes (vLLM caches every
        full block it computed; the session's next turn re-sends the answer as part of its prompt)."""
        ids = self.prefix_ids[i]
        full = min(len(ids), tokens_held // self.prefix_block_tokens)
        start = self.next_prefix_to_publish[i]
        if full > start:
            self._publish(i, ids, start, full)
