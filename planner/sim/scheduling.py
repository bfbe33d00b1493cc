"""What one step schedules (the table in planner/sim/simulator.py's module note): the lock-step decoders' KV slots,
the running requests' next chunks within the token budget (preempting the newest when short of blocks), then
waiting requests in queue order with their prefix-cache hits, own cached blocks and reloads from the offload tiers,
until one does not fit. A mixin of Replica (planner/sim/simulator.py), which holds the state.
"""

from __future__ import annotations

import math


class Scheduling:
    """Replica's scheduling of running and waiting requests into one step (state: Replica)."""

    def _allocate_decode_slots(self) -> int:
        """Give every lock-step decoder its next KV slot, preempting the newest request until they fit."""
        batch = self.decoders
        if not batch.count:
            return 0
        batch.apply_caps(self.step_index)
        while batch.blocks_due(self.step_index) > self.pool.num_free:
            self._preempt(self._newest())
        self.pool.allocate(batch.blocks_due(self.step_index))
        self.decode_slots_taken = True
        return batch.count

    def _num_new_tokens(self, i: int, budget: int) -> int:
        known = self.prompt_tokens[i] + self.generated_tokens[i]
        left = known - self.computed_tokens[i]
        if self.spec and self.generated_tokens[i] and left == 1:  # verify 1 + k drafts, never past the end
            return min(1 + min(self.cfg.spec_k, self.output_tokens[i] - self.generated_tokens[i] - 1), budget)
        threshold = self.cfg.long_prefill_token_threshold
        if 0 < threshold < left:
            left = threshold
        if left > budget and not self.cfg.enable_chunked_prefill:
            return 0
        return left if left <= budget else budget - budget % self.chunk_unit

    def _schedule_running(self, budget: int, scheduled: list) -> int:
        for i in list(self.stepped_individually):
            if budget <= 0:
                break
            if i not in self.stepped_individually:
                continue  # preempted by an older request this step
            num_new = self._num_new_tokens(i, budget)
            if num_new <= 0:
                continue
            computed = self.computed_tokens[i]
            need = self._blocks(computed + num_new) - self._blocks(computed)
            while need > self.pool.num_free and i in self.running:
                victim = self._newest()
                if self.decoders.member[victim] and not self.separate_prefill:
                    budget += 1  # its decode token is returned to the budget (a prefill-only step holds none)
                self._preempt(victim)
            if i not in self.running:
                break  # it preempted itself: vLLM stops scheduling running requests
            self.pool.allocate(need)
            budget -= num_new
            scheduled.append((i, num_new))
        return budget

    def _cache_hits(self, i: int, known: int) -> tuple[int, int]:
        """(prefix hash entries hit, own cached blocks hit) for admitting request i with `known` tokens."""
        num_prefix = 0
        if self.prefix_sharing:
            limit = min(self.num_cacheable_prefix[i], (known - 1) // self.prefix_block_tokens)
            num_prefix = self.pool.num_cached_prefix(self.prefix_ids[i], limit) if limit > 0 else 0
        own = self.pool.num_own_cached(i) if self.pool.own_key else 0
        if own and num_prefix != self.prefix_entries_at_preemption[i]:
            self.pool.forget_own(i)  # its own blocks follow a prefix that is no longer cached
            own = 0
        return num_prefix, own

    def _tier_hits(self, i: int, known: int, num_prefix: int) -> int:
        """Prefix ids after the GPU hits that the offload tiers hold (the GPU's own hits touch their copies)."""
        limit = min(self.num_cacheable_prefix[i], (known - 1) // self.prefix_block_tokens)
        ids = self.prefix_ids[i]
        if num_prefix and not self.tiers.write_back:
            self.tiers.touch(ids[:num_prefix])
        return self.tiers.lookup(ids, num_prefix, limit, self.pool.cached) if limit > num_prefix else 0

    def _reload(self, i: int, num_prefix: int, num_reload: int) -> None:
        """Reloaded ids join the GPU prefix cache, held by request i; the step pays their transfer."""
        ids = self.prefix_ids[i]
        self.shared_prefix_held[i].extend(self.pool.register_all(ids, num_prefix, num_prefix + num_reload))
        self.reload_s_due += self.tiers.reload(ids[num_prefix : num_prefix + num_reload])

    def _schedule_waiting(self, budget: int, scheduled: list) -> None:
        cfg, pool, policy = self.cfg, self.pool, self.policy
        if self.order_waiting is not None:
            self.order_waiting(self)
        # SGLang's max_prefill_tokens: what is left of it after this step's decodes and scheduled prompt chunks
        # (without speculative decoding every individually stepped request is prefilling)
        prefill_left = None
        if cfg.max_prefill_tokens is not None:
            mixed = 0 if self.separate_prefill else self.decoders.count  # decode tokens in this step
            prefill_left = cfg.max_prefill_tokens - mixed - sum(n for _, n in scheduled)
        while self.waiting and budget > 0 and len(self.running) < cfg.running_cap:
            i = self.waiting[0]
            known = self.prompt_tokens[i] + self.generated_tokens[i]
            num_prefix, own = self._cache_hits(i, known)
            num_reload = self._tier_hits(i, known, num_prefix) if self.tiers is not None and not own else 0
            gpu_hit_blocks = num_prefix * pool.blocks_per_prefix + own
            hit_blocks = gpu_hit_blocks + num_reload * pool.blocks_per_prefix  # reloaded blocks take GPU space
            hit_tokens = hit_blocks * cfg.block_size
            num_new = known - hit_tokens
            if 0 < cfg.long_prefill_token_threshold < num_new:
                num_new = cfg.long_prefill_token_threshold
            if num_new > budget and not cfg.enable_chunked_prefill:
                break
            if prefill_left is not None and scheduled and num_new >= prefill_left:
                break  # not the step's first prompt: it must fit whole (PrefillAdder.add_one_req)
            if num_new > budget:
                num_new = budget - budget % self.chunk_unit
            if num_new <= 0:
                break
            hits = self.prefix_ids[i][:num_prefix] if num_prefix else ()
            new_blocks = self._blocks(hit_tokens + num_new) - gpu_hit_blocks
            whole = cfg.scheduler_reserve_full_isl or policy.admit_whole_prompt
            checked = self._blocks(known) - gpu_hit_blocks if whole else new_blocks
            evictable_hits = own + (pool.num_evictable_among(hits) * pool.blocks_per_prefix if hits else 0)
            if checked + evictable_hits > pool.num_free:
                break
            if self.admission_hooks and not policy.admits(self, i, gpu_hit_blocks):
                break
            self.waiting.popleft()
            if num_prefix:
                pool.acquire(hits)
                self.shared_prefix_held[i] = list(hits)
            if own:
                pool.take_own(i)
            pool.allocate(new_blocks)
            if num_reload:
                self._reload(i, num_prefix, num_reload)
            if self.admission_hooks:
                policy.on_admit(self, i)
            self.next_prefix_to_publish[i] = num_prefix + num_reload
            self.computed_tokens[i] = hit_tokens
            # shared prefix hits, on GPU or reloaded from a tier
            self.out.prefix_hit_tokens[i] += (num_prefix + num_reload) * self.prefix_block_tokens
            self.out.recomputed_tokens[i] += self.tokens_lost_at_preemption[i] - own * cfg.block_size
            self.tokens_lost_at_preemption[i] = 0
            self.running[i] = None
            self.stepped_individually[i] = None
            if math.isnan(self.out.first_scheduled_s[i]):
                self.out.first_scheduled_s[i] = self.now
                self.num_waiting_new -= 1
                self.requests_starting += 1
            budget -= num_new
            if prefill_left is not None:
                prefill_left -= num_new
            scheduled.append((i, num_new))
