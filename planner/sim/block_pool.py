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
- hash id (the key itself, not a tuple): a shared prefix entry of a trace (one hash id covers `blocks_per_prefix` KV
  blocks), released by its last user.
Prefix entries in use are reference-counted (`prefix_refs`); taking a hit out of the queue is vLLM's `touch`.

Speed (issue 26 item 5). A request's prefix entries are handled as one list per call (a hit, a publication, a
release), not one Python iteration per entry: membership, reference counts and queue updates go through C-level
builtins (map over the set's and dict's own methods, itertools.compress, dict.update), and a prefix entry's queue
key is its hash id itself (no tuple per entry). A list holding the same id twice (possible in a user's trace) takes
the entry-by-entry path, which gives the same result. tests/test_fleet_pinned.py pins the fleet's figures from
before this change.
What we leave out: a finished request's own blocks are treated as unhittable (synthetic prompts share nothing
beyond their trace prefix ids).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from itertools import compress, filterfalse, islice
from operator import not_

EMPTY, OWN = "empty", "own"  # the other keys of the free queue are prefix hash ids (ints)


def _distinct(ids) -> bool:
    return len(ids) < 2 or len(set(ids)) == len(ids)


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
        self.peak_active = 0
        self.num_evicted_blocks = 0  # cached blocks (own or prefix) reused for something else
        self._next_empty_key = 1

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
            if take == count:
                queue.popitem(last=False)
            else:
                queue[key] = count - take
            if key.__class__ is not tuple:  # a prefix entry (its hash id): evicted whole
                self.cached.discard(key)
                if take < count:  # the hash is gone once any of its blocks is reused; the rest are plain free
                    del queue[key]
                    queue[(EMPTY, self._next_empty_key)] = count - take
                    queue.move_to_end((EMPTY, self._next_empty_key), last=False)
                    self._next_empty_key += 1
                evicted += count
            elif key[0] == OWN:
                if take == count and self.own_key.get(key[1]) == key:
                    del self.own_key[key[1]]
                evicted += take
            num -= take
        self.num_evicted_blocks += evicted
        self._uncache(evicted)

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
        refs, queue = self.prefix_refs, self.free_queue
        if not _distinct(hash_ids):
            taken = 0
            for h in hash_ids:
                if h in refs:
                    refs[h] += 1
                else:
                    del queue[h]
                    refs[h] = 1
                    taken += 1
        else:
            held = list(map(refs.__contains__, hash_ids))
            again = list(compress(hash_ids, held))
            refs.update(zip(again, map((1).__add__, map(refs.__getitem__, again))))
            touched = list(compress(hash_ids, map(not_, held)))
            _consume(map(queue.__delitem__, touched))
            refs.update(dict.fromkeys(touched, 1))
            taken = len(touched)
        if taken:  # the blocks touched out of the free queue, counted once
            self.num_free -= taken * self.blocks_per_prefix
            self._uncache(taken * self.blocks_per_prefix)
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
        if not _distinct(tail_first):
            freed = []
            for h in tail_first:
                count = refs[h] - 1
                if count:
                    refs[h] = count
                else:
                    del refs[h]
                    freed.append(h)
        else:
            counts = list(map(refs.__getitem__, tail_first))
            last = list(map((1).__eq__, counts))  # this request held the entry's last reference
            freed = list(compress(tail_first, last))
            if len(freed) < len(tail_first):
                shared = list(map(not_, last))
                refs.update(zip(compress(tail_first, shared), map((-1).__add__, compress(counts, shared))))
            _consume(map(refs.__delitem__, freed))
        if freed:  # _append for each, in order, with one update of the queue and the counts
            if not self.num_cached_free and self.num_free:
                self.free_queue[(EMPTY, self._next_empty_key)] = self.num_free
                self._next_empty_key += 1
            self.free_queue.update(dict.fromkeys(freed, per))
            self.num_free += len(freed) * per
            self.num_cached_free += len(freed) * per
