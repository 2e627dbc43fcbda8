"""The interleaved timer of bench/latency.py and bench/layers.py: engines take
turns (A B, B A, ...) so slow drifts of a shared machine hit all alike, and
multi-threaded rounds count only while probes show a core per thread, the
cores near each other (bench/README.md says why)."""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass

from qpi import _engine

SETTLE_S = 0.02  # pause at each switch of engine
TURN_S = 0.05    # each engine's turn in a round lasts at least this long
FAR_FACTOR = 2.0  # a probe whose core-to-core round trip exceeds this x the best seen is "far"
SCALING_OK = 0.8  # ... or whose FMA scaling is below this x the best seen is "shared core"
WAIT_S = 0.25     # pause between probes while the vCPUs are placed badly
MAX_WAIT_S = 240.0  # total time one measurement waits for a good placement before it takes any rounds


@dataclass(frozen=True)
class Probe:
    """Where the host has put our threads right now: `c2c_ns` is a cache-line
    round trip between two threads, `scaling` the FMA rate of `threads`
    threads over `threads` x the 1-thread rate (1.0: a core each)."""
    c2c_ns: float
    scaling: float


class Placement:
    """Judges probes against the best seen so far: good = full core each
    (scaling within SCALING_OK of the best) and near (round trip within
    FAR_FACTOR of the best among full-core probes)."""

    def __init__(self):
        self.best_scaling = 0.0
        self.best_c2c = float("inf")
        self.seen: list[Probe] = []

    def add(self, p: Probe) -> Probe:
        self.seen.append(p)
        # N threads can't beat N x one thread: above 1.0 is a dip in the
        # 1-thread half of the probe, and must not raise the bar
        self.best_scaling = max(self.best_scaling, min(p.scaling, 1.0))
        self.best_c2c = min((q.c2c_ns for q in self.seen if self._full(q)), default=float("inf"))
        return p

    def _full(self, p: Probe) -> bool:
        return p.scaling >= SCALING_OK * self.best_scaling

    def good(self, p: Probe) -> bool:
        return self._full(p) and p.c2c_ns <= FAR_FACTOR * self.best_c2c

    def round_good(self, probes: list[Probe]) -> bool:
        """A placement change lasts 10-60 s, longer than a round, so it
        turns every probe of the round bad; a 5 ms probe also dips now and
        then on its own. One bad probe in four is forgiven, none in fewer."""
        bad = sum(not self.good(p) for p in probes)
        return bad <= (len(probes) - 1) // 3


@dataclass
class Timed:
    """Seconds per timed call of each engine over the kept rounds, and how
    the rounds were chosen: `placement` is None when not gated; `kept` of
    `rounds` were good by Placement.round_good; `bad` says the wait ran out with no good
    round, so all rounds were kept."""
    times: dict[str, list[float]]
    rounds: int
    kept: int
    placement: Placement | None = None
    bad: bool = False

    def note(self) -> str:
        if self.placement is None:
            return f"{self.kept} rounds"
        pl = self.placement
        state = ("badly placed rounds only (wait ran out)" if self.bad else
                 f"FMA scaling >= {SCALING_OK * pl.best_scaling:.2f}, core-to-core <= {FAR_FACTOR * pl.best_c2c:.0f} ns")
        return f"{self.kept}/{self.rounds} rounds kept: {state}"


def placement_probe(threads: int) -> Probe:
    f_t = _engine.diag.peak_fma(threads, 0.005)[0]
    f_1 = _engine.diag.peak_fma(1, 0.005)[0]
    return Probe(_engine.diag.core_to_core_ns(2000, 3), f_t / (threads * f_1))


def should_gate(threads: int) -> bool:
    """Multi-threaded turns only: a 1-thread run measured the same with
    near and far vCPUs (onnxruntime RetinaFace-640: 13.8 vs 14.0 ms), and a
    1-CPU affinity mask has no pair to probe."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return threads > 1 and cpus > 1


def _turn(e, x, sample: list[float]) -> None:
    time.sleep(SETTLE_S)
    e(x)
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        e(x)
        t1 = time.perf_counter()
        sample.append(t1 - t0)
        if t1 - start >= TURN_S:
            return


def time_interleaved(engines: list, x, runs: int, warmup: int = 3, threads: int = 1,
                     gate: bool | None = None, max_wait_s: float = MAX_WAIT_S) -> Timed:
    """A B A B ...: each round gives every engine one turn, so slow drifts of
    the machine hit all engines alike. A turn starts after a short pause and
    one untimed call: the previous engine's worker threads (OpenMP,
    onnxruntime's pool) spin-wait for a while after returning and would steal
    cores, and the untimed call wakes this engine's own pool as back-to-back
    inference would have it. A turn then times calls one by one until TURN_S
    has passed (at least one), so a 2 ms engine gets as many samples as the
    noise of a shared machine needs.

    gate (default: should_gate(threads), i.e. multi-threaded runs): the host of a shared VM changes where
    our vCPUs run, for 10-60 s at a time: on another core complex (round
    trip ~90 -> ~360 ns; onnxruntime's 2-thread time +35%, qpi's generic
    kernels barely move) or sharing one core (2-thread FMA rate = 1-thread
    rate; qpi's 2-thread time = its 1-thread time). A ratio taken across such
    a change depends on when it was taken. A probe runs before the round and
    after every turn; a round counts only if its probes are good by
    Placement.round_good (judged again at the end, when the bests are known); while
    placement is bad the timer waits WAIT_S and retries, up to max_wait_s."""
    if gate is None:
        gate = should_gate(threads)
    for e in engines:
        for _ in range(warmup):
            e(x)
    rounds: list[tuple[list[Probe], dict[str, list[float]]]] = []
    pl = Placement() if gate else None
    waited = 0.0

    def n_good() -> int:
        return sum(pl.round_good(ps) for ps, _ in rounds)

    attempt = 0
    while (n_good() if gate else len(rounds)) < runs:
        probes = []
        if gate:
            if waited >= max_wait_s and len(rounds) >= runs:
                break  # waited long enough: report what there is
            probes.append(pl.add(placement_probe(threads)))  # also the round's first probe
            if waited < max_wait_s and not pl.good(probes[0]):
                time.sleep(WAIT_S)
                waited += WAIT_S
                continue
        sample: dict[str, list[float]] = {e.name: [] for e in engines}
        for e in engines if attempt % 2 == 0 else engines[::-1]:
            _turn(e, x, sample[e.name])
            if gate:
                probes.append(pl.add(placement_probe(threads)))
        attempt += 1
        rounds.append((probes, sample))
    kept = [s for ps, s in rounds if not gate or pl.round_good(ps)]
    bad = gate and not kept
    if bad:
        kept = [s for _, s in rounds]
    times = {e.name: [t for s in kept for t in s[e.name]] for e in engines}
    return Timed(times, len(rounds), len(kept), pl, bad)


def summarize(ts: list[float]) -> tuple[float, float]:
    return statistics.median(ts), min(ts)
