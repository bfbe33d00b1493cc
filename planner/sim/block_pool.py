"""The KV block pool, counted rather than listed, with vLLM V1's free-block queue and prefix cache.

vLLM V1 keeps every free block in ONE queue (vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue @
bbf906a88ba1a39104884c88c9811a4f968e4659): never-used blocks first, then blocks in the order they were freed (a
request frees its blocks tail first). A freed block keeps its hash, so it stays a prefix-cache hit until it is
reused ("evicted") from the front of the queue (block_pool.get_new_blocks @ 002f34915134cfd1a7d6ed777edd67dcc2289466).
Free blocks therefore include cached ones: an allocation succeeds when it needs at most `num_free` blocks.

Here the queue holds runs of blocks ("segments") instead of single blocks:
- ("empty", k): blocks whose content nobody can hit (never used, or a finished request's private blocks);
- ("own", request, serial): the full blocks a PREEMPTED request computed, still cached for its readmission (its tail
  blocks sit first, so they are evicted first, as in vLLM);
- ("run", serial): the shared prefix entries of a trace (one hash id covers `blocks_per_prefix` KV blocks) that
  one release() freed, their last user gone, in the order vLLM would queue them (tail first). `run_ids[serial]`
  lists them; an entry taken back out by a hit (vLLM's `touch`) stays in the list but leaves `free_in_run`, so the
  run's live entries are those whose `free_in_run` is this run; the queue value counts their blocks. Eviction
  takes a run's live entries from its front (`run_next`), as the per-block queue would.
Prefix entries in use are reference-counted (`prefix_refs`).

Speed (issue 26 item 5). One queue entry per released run instead of one per prefix entry: the ordered dict (a
linked node per key) is touched once per request, the per-entry state lives in a plain dict and a set, and a
request's entries are handled as one list per call (a hit, a publication, a release, an eviction) through C-level
builtins (map over the set's and dict's own methods, itertools.compress, dict.update) rather than a Python loop
per entry. A list holding the same id twice (possible in a user's trace) takes the entry-by-entry path, which
gives the same result. tests/test_fleet_pinned.py pins the fleet's figures from before the change (main 6ca765f).
What we leave out: a finished request's own blocks are treated as unhittable (synthetic prompts share nothing
beyond their trace prefix ids).
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from itertools import compress, filterfalse, islice, repeat
from operator import eq, not_

EMPTY, OWN, RUN = "empty", "own", "run"


def _consume(iterator) -> None:
    deque(iterator, maxlen=0)  # runs a map of a C method to the end without a Python loop


class BlockPool:
    def __init__(self, num_blocks: int, blocks_per_prefix: int = 1):
        self.num_blocks = num_blocks
        self.blocks_per_prefix = blocks_per_prefix
        self.free_queue: OrderedDict[tuple, int] = OrderedDict()  # front = evicted first (empty: all plain)
        self.num_free = num_blocks  # blocks in the queue: empty or cached-and-evictable
        self.num_cached_free = 0  # of which cached (own or prefix segments); 0 = the queue is just a count
        self.prefix_refs: dict[int, int] = {}  # hash id -> running requests referencing it (> 0)
        self.cached: set[int] = set()  # every cached hash id: referenced, or free and not yet evicted
        self.own_key: dict[int, tuple] = {}  # preempted request -> the queue key of its still-cached blocks
        self.run_ids: dict[int, list[int]] = {}  # run serial -> the hash ids one release freed, tail first
        self.run_next: dict[int, int] = {}  # run serial -> index in run_ids of the first entry maybe still free
        self.free_in_run: dict[int, int] = {}  # free cached hash id -> the serial of the run holding it
        self.peak_active = 0
        self.num_evicted_blocks = 0  # cached blocks (own or prefix) reused for something else
        self._next_empty_key = 1
        self.on_prefix_evicted = None  # hook: called with a prefix hash id as the GPU evicts it (offload_tiers)

    @property
    def num_active(self) -> int:
        """Blocks held by running requests (what vLLM reports as KV cache usage)."""
        return self.num_blocks - self.num_free

    def _append(self, key: tuple, num: int) -> None:
        """A cached segment joins the back of the queue (the plain free blocks before it get a segment)."""
        if num <= 0:
            return
        if not self.num_cached_free and self.num_free:
            self.free_queue[(EMPTY, self._next_empty_key)] = self.num_free
            self._next_empty_key += 1
        self.free_queue[key] = num
        self.num_free += num
        self.num_cached_free += num

    def _append_empty(self, num: int) -> None:
        if num <= 0:
            return
        self.num_free += num
        if self.num_cached_free:  # otherwise the queue holds plain blocks only: a count is enough
            self.free_queue[(EMPTY, self._next_empty_key)] = num
            self._next_empty_key += 1

    def _uncache(self, num: int) -> None:
        self.num_cached_free -= num
        if not self.num_cached_free:
            self.free_queue.clear()  # only plain free blocks are left: back to a count

    def _note_peak(self) -> None:
        active = self.num_blocks - self.num_free
        if active > self.peak_active:
            self.peak_active = active

    def allocate(self, num: int) -> None:
        """Take `num` blocks from the front of the free queue (the caller checked num <= num_free)."""
        if num <= 0:
            return
        if num > self.num_free:
            raise RuntimeError(f"allocating {num} blocks with {self.num_free} free")
        self.num_free -= num
        self._note_peak()
        if not self.num_cached_free:
            return
        queue, evicted = self.free_queue, 0
        while num:
            key, count = next(iter(queue.items()))
            take = min(count, num)
            if key[0] == RUN:
                evicted += self._evict_from_run(key, count, take)
            else:
                if take == count:
                    queue.popitem(last=False)
                else:
                    queue[key] = count - take
                if key[0] == OWN:
                    if take == count and self.own_key.get(key[1]) == key:
                        del self.own_key[key[1]]
                    evicted += take
            num -= take
        self.num_evicted_blocks += evicted
        self._uncache(evicted)

    def _evict_from_run(self, key: tuple, count: int, take: int) -> int:
        """Reuse `take` of the `count` blocks of the run at the front of the queue, its live entries in order; a
        prefix entry is evicted whole once any of its blocks is reused, its other blocks become plain free blocks
        at the front of the queue. Returns the cached blocks evicted."""
        serial, per = key[1], self.blocks_per_prefix
        entries = -(-take // per)
        ids, pos, where = self.run_ids[serial], self.run_next[serial], self.free_in_run
        gone: list[int] = []
        while len(gone) < entries:  # each pass reads at most the entries still wanted: never one too many
            chunk = ids[pos : pos + entries - len(gone)]
            pos += len(chunk)
            gone += compress(chunk, map(eq, map(where.get, chunk), repeat(serial)))
        self.cached.difference_update(gone)
        if self.on_prefix_evicted is not None:  # offload tiers keep what the GPU drops, in eviction order
            _consume(map(self.on_prefix_evicted, gone))
        _consume(map(where.__delitem__, gone))
        left = count - entries * per
        if left:
            self.free_queue[key] = left
            self.run_next[serial] = pos
        else:
            self._drop_run(key)
        if entries * per > take:  # the rest of a prefix entry partly reused: plain free, first in the queue
            rest = (EMPTY, self._next_empty_key)
            self._next_empty_key += 1
            self.free_queue[rest] = entries * per - take
            self.free_queue.move_to_end(rest, last=False)
        return entries * per

    def _drop_run(self, key: tuple) -> None:
        del self.free_queue[key]
        del self.run_ids[key[1]]
        del self.run_next[key[1]]

    def free(self, num_uncached: int, owner: int | None = None, num_cached: int = 0) -> None:
        """Return a request's private blocks: the uncached tail first, then (if `owner`, a preempted request)
        its cached full blocks, which stay hits for it until evicted."""
        self._append_empty(num_uncached)
        if owner is not None and num_cached > 0:
            key = (OWN, owner, self._next_empty_key)
            self._next_empty_key += 1
            self._append(key, num_cached)
            self.own_key[owner] = key
        else:
            self._append_empty(num_cached)

    def num_own_cached(self, owner: int) -> int:
        """Blocks a preempted request computed that are still cached (hits for its readmission)."""
        key = self.own_key.get(owner)
        return self.free_queue[key] if key else 0

    def take_own(self, owner: int) -> int:
        """A readmitted request takes its still-cached blocks back out of the queue (vLLM's touch)."""
        key = self.own_key.pop(owner, None)
        if key is None:
            return 0
        num = self.free_queue.pop(key)
        self.num_free -= num
        self._note_peak()
        self._uncache(num)
        return num

    def forget_own(self, owner: int) -> None:
        """The request will not use its cached blocks: they stay in the queue as plain cached blocks."""
        self.own_key.pop(owner, None)

    # --- shared prefix blocks (trace hash ids) ------------------------------------------------------------
    def is_cached(self, h: int) -> bool:
        return h in self.cached

    def num_cached_prefix(self, hash_ids, max_entries: int) -> int:
        """How many of the first `max_entries` hash ids are cached, counting from the first (exact-prefix match)."""
        hit = list(map(self.cached.__contains__, islice(hash_ids, max_entries)))
        try:
            return hit.index(False)
        except ValueError:
            return len(hit)

    def num_evictable_among(self, hash_ids) -> int:
        return len(hash_ids) - sum(map(self.prefix_refs.__contains__, hash_ids))  # cached, not referenced: free

    def acquire(self, hash_ids) -> None:
        """Reference cached entries (a prefix hit): free ones leave the queue (vLLM's touch)."""
        refs, per = self.prefix_refs, self.blocks_per_prefix
        held = list(map(refs.__contains__, hash_ids))
        again = list(compress(hash_ids, held))
        counts = dict(zip(again, map((1).__add__, map(refs.__getitem__, again))))
        touched = list(compress(hash_ids, map(not_, held)))
        fresh = dict.fromkeys(touched, 1)
        if len(counts) == len(again) and len(fresh) == len(touched):
            refs.update(counts)
            refs.update(fresh)
        else:  # an id listed twice (a user's trace): entry by entry, the second one referenced twice
            touched = []
            for h in hash_ids:
                if h in refs:
                    refs[h] += 1
                else:
                    refs[h] = 1
                    touched.append(h)
        if touched:  # out of their runs; the blocks touched out of the free queue, counted once
            queue = self.free_queue
            for serial, n in Counter(map(self.free_in_run.pop, touched)).items():
                key = (RUN, serial)
                left = queue[key] - n * per
                if left:
                    queue[key] = left
                else:
                    self._drop_run(key)
            self.num_free -= len(touched) * per
            self._uncache(len(touched) * per)
        self._note_peak()

    def register(self, h: int) -> bool:
        """Publish a block a request just computed as cached (its blocks change owner, no new space).
        False if an equal block is already cached: the request keeps its copy private."""
        if h in self.cached:
            return False
        self.cached.add(h)
        self.prefix_refs[h] = 1
        return True

    def register_all(self, hash_ids, start: int, stop: int) -> list[int]:
        """register() each of hash_ids[start:stop]; returns those published (the request now references)."""
        fresh = dict.fromkeys(filterfalse(self.cached.__contains__, hash_ids[start:stop]), 1)  # first of each id
        self.cached.update(fresh)
        self.prefix_refs.update(fresh)
        return list(fresh)

    def release(self, hash_ids) -> None:
        """Drop one reference each (the last entry first, as vLLM frees tail first); at zero the entry joins
        the back of the free queue, still cached."""
        refs, per = self.prefix_refs, self.blocks_per_prefix
        tail_first = hash_ids[::-1]
        counts = list(map(refs.pop, tail_first, repeat(0)))  # every entry out of the table, the shared ones back
        if counts.count(1) == len(counts):  # this request held every entry's last reference
            freed = tail_first
        elif 0 not in counts:
            freed = list(compress(tail_first, map((1).__eq__, counts)))
            shared = list(map((1).__lt__, counts))
            refs.update(zip(compress(tail_first, shared), map((-1).__add__, compress(counts, shared))))
        else:  # an id listed twice (its second pop found nothing): put the table back, entry by entry
            refs.update(compress(zip(tail_first, counts), counts))
            freed = []
            for h in tail_first:
                count = refs[h] - 1
                if count:
                    refs[h] = count
                else:
                    del refs[h]
                    freed.append(h)
        if freed:  # one run at the back of the queue, its entries tail first
            queue = self.free_queue
            if not self.num_cached_free and self.num_free:
                queue[(EMPTY, self._next_empty_key)] = self.num_free
                self._next_empty_key += 1
            serial = self._next_empty_key
            self._next_empty_key += 1
            queue[(RUN, serial)] = len(freed) * per
            self.run_ids[serial] = freed
            self.run_next[serial] = 0
            self.free_in_run.update(dict.fromkeys(freed, serial))
            self.num_free += len(freed) * per
            self.num_cached_free += len(freed) * per
