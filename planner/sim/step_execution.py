"""Running what a step scheduled: its time from the step cost (plus request overheads, reloads and speculative
decoding's draft passes), its record, and its tokens applied to each request (a finished prompt joins the lock-step
decoders; spec decoding keeps the accepted drafts); and runs of pure-decode steps planned and applied at once
(planner/sim/lockstep.py). A mixin of Replica (planner/sim/simulator.py), which holds the state.
"""

from __future__ import annotations

import math

from planner.sim import invariants
from planner.sim.lockstep import plan_decode_run


class StepExecution:
    """Replica's step execution and fast-forward over runs of pure-decode steps (state: Replica)."""

    def _execute(self, scheduled: list[tuple[int, int]], decode: bool = True) -> None:
        """Run one step: the scheduled chunks and, with `decode`, the lock-step decode batch (a prefill-only step
        of _step_separate leaves it, and the decode clock step_index, where they are)."""
        batch, step = self.decoders, self.step_index
        num_dec = batch.count if decode else 0
        dec_ctx = batch.sum_context(step) if num_dec else 0
        new_tokens, kv_read, pairs = num_dec, dec_ctx, dec_ctx
        spec_seqs = spec_ctx = 0
        for i, num_new in scheduled:
            ctx = self.computed_tokens[i] + num_new
            new_tokens += num_new
            kv_read += ctx
            # causal attention (FlashAttention skips the masked half): each new token attends to the cached tokens
            # and to the new ones up to itself, as PerfModel.prefill counts it; a decode (num_new 1) reads ctx
            pairs += num_new * self.computed_tokens[i] + num_new * (num_new + 1) // 2
            if (
                self.generated_tokens[i] > 0
                and self.computed_tokens[i] == self.prompt_tokens[i] + self.generated_tokens[i] - 1
            ):
                spec_seqs, spec_ctx = spec_seqs + 1, spec_ctx + ctx
        num_seqs = num_dec + len(scheduled)
        # SGLang's receive weights: a step with prompt tokens 1000 (the next loop polls), a decode or a speculative
        # verification step (TARGET_VERIFY) 1
        self.recv_counter += self.recv_interval if len(scheduled) > (spec_seqs if self.spec else 0) else 1
        dt = float(self.cost.step_time_s(new_tokens, num_seqs, kv_read, pairs))
        dt += self.request_overhead_s * self.requests_starting + self.reload_s_due
        self.requests_starting, self.reload_s_due = 0, 0.0
        if spec_seqs and self.spec:  # k sequential draft passes over the verifying sequences
            draft = self.draft_cost
            per_pass = (
                float(draft.step_time_s(spec_seqs, spec_seqs, spec_ctx, spec_ctx))
                if draft is not None
                else self.cfg.spec_draft_cost_s
            )
            dt += self.cfg.spec_k * per_pass
        start, self.now = self.now, self.now + dt
        self.recorder.add(start, dt, num_seqs, len(self.running), len(self.waiting), self.pool.num_active, new_tokens)
        if num_dec and self.decode_hook is not None:
            self.decode_hook(1)
        if decode:
            for i, held in batch.pop_finished(step):
                self._finish(i, held)
        join_step = step + 1 if decode else step  # the next decode step, where finished prompts join
        for i, num_new in scheduled:
            self._advance(i, num_new, join_step)
        if decode:
            self.step_index += 1
        self.decode_slots_taken = False
        if invariants.ENABLED:
            invariants.check(self)

    def _advance(self, i: int, num_new: int, join_step: int) -> None:
        """Apply one step's tokens to an individually stepped request (`join_step`: the decode step at which a
        request whose prompt this step completes joins the lock-step batch)."""
        computed, known = self.computed_tokens[i], self.prompt_tokens[i] + self.generated_tokens[i]
        if self.spec and self.generated_tokens[i] and computed == known - 1:
            accepted = self._accepted_drafts(num_new - 1)
            self.computed_tokens[i] = computed + 1 + accepted
            self.generated_tokens[i] += 1 + accepted
            # rejected draft slots go back to the pool
            self.pool.free(self._blocks(computed + num_new) - self._blocks(self.computed_tokens[i]))
        else:
            self.computed_tokens[i] = computed + num_new
            if self.prefix_sharing:
                self._publish_prefix(i)
            if self.computed_tokens[i] < known:
                return  # prefill continues next step
            self.generated_tokens[i] += 1
            if math.isnan(self.out.first_token_s[i]):
                self.out.first_token_s[i] = self.now
        if self.generated_tokens[i] >= self.output_tokens[i]:
            self._finish(i, self.computed_tokens[i])
        elif not self.spec:
            self.decoders.join(i, self.computed_tokens[i], self.generated_tokens[i], self.output_tokens[i], join_step)
            del self.stepped_individually[i]

    def _accepted_drafts(self, num_drafts: int) -> int:
        """Drafts kept: each accepted with probability alpha until the first rejection."""
        alpha = self.cfg.spec_alpha
        if num_drafts <= 0 or alpha <= 0:
            return 0
        if alpha >= 1:
            return num_drafts
        return min(num_drafts, int(self.rng.geometric(1 - alpha)) - 1)

    # --- runs of pure-decode steps --------------------------------------------------------------------------
    def _can_fast_forward(self) -> bool:
        return bool(self.decoders.count) and not self.stepped_individually and not self.waiting and not self.spec

    def _fast_forward(self) -> bool:
        """Advance a run of pure-decode steps at once (planner/sim/lockstep.py); False if none fits."""
        run = self._plan_run()
        if not run[1]:
            return False
        self._commit_run(*run)
        return True

    def _plan_run(self) -> tuple[list, list, list]:
        """The run of pure-decode steps from now up to the next known arrival (plan_decode_run), not yet applied."""
        batch = self.decoders
        batch.apply_caps(self.step_index)
        if self.recv_interval > 1:  # arrivals wait for the next poll: the run stops there, whatever arrives before
            to_poll = max(1, self.recv_interval - self.recv_counter)
            return plan_decode_run(batch, self.step_index, self.pool.num_free, self.now, math.inf, self.cost, to_poll)
        next_arrival = self.pending[0][0] if self.pending else math.inf
        return plan_decode_run(batch, self.step_index, self.pool.num_free, self.now, next_arrival, self.cost)

    def _commit_run(self, starts: list, dts: list, cum_blocks: list) -> None:
        """Apply the first len(dts) >= 1 steps of a planned run: blocks, step records, finishes at its last step."""
        batch, s0, m = self.decoders, self.step_index, len(dts)
        active0 = self.pool.num_active
        self.pool.allocate(int(cum_blocks[-1]))
        self.recorder.add_run(starts, dts, batch.count, len(self.running), active0, cum_blocks)
        self.recv_counter += m
        if self.decode_hook is not None:
            self.decode_hook(m)
        self.now = float(starts[-1] + dts[-1])
        self.step_index = s0 + m
        for i, held in batch.pop_finished(s0 + m - 1):
            self._finish(i, held)
        if invariants.ENABLED:
            invariants.check(self)
