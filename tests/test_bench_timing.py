"""The interleaved timer's choice of rounds (bench/latency.py, bench/layers.py)
and the core-to-core probe it relies on. No wall-clock time is asserted: the
probe is replaced by a scripted sequence and each turn times exactly one call."""
import math
import os
import subprocess

import pytest

from qpi import _engine

import timer
from engines import Engine
from conftest import PYTHON


def _engines(calls):
    def make(name):
        def fn(x):
            calls.append(name)
        return Engine(name, fn)
    return [make("a"), make("b")]


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setattr(timer, "SETTLE_S", 0.0)
    monkeypatch.setattr(timer, "TURN_S", 0.0)  # one timed call per turn
    monkeypatch.setattr(timer, "WAIT_S", 0.0)

    def install(values):
        """values: round trips in ns, or (ns, scaling) pairs (scaling 1.0 if not given)."""
        it = iter(values)

        def probe(threads):
            v = next(it)
            return timer.Probe(*v) if isinstance(v, tuple) else timer.Probe(v, 1.0)
        monkeypatch.setattr(timer, "placement_probe", probe)
    return install


def test_far_rounds_dropped_and_rejudged(scripted):
    # round 1 runs while the best seen is 300 ns and passes then; the next
    # probe finds 90 ns, so round 1 is judged far at the end. A 400 ns check
    # makes the timer wait instead of running a round.
    scripted([300, 300, 300,        # round 1: start, after a, after b
              90, 90, 90,           # round 2
              400,                  # far: wait
              95, 95, 95])          # round 3
    calls = []
    t = timer.time_interleaved(_engines(calls), None, runs=2, threads=2, warmup=0, gate=True)
    assert (t.rounds, t.kept, t.placement.best_c2c, t.bad) == (3, 2, 90, False)
    assert len(t.times["a"]) == len(t.times["b"]) == 2
    # every round ran both engines (2 calls per turn: wake-up + timed), none in the far wait
    assert calls.count("a") == calls.count("b") == 6
    assert "2/3 rounds" in t.note() and "180 ns" in t.note()


def test_shared_core_rounds_dropped(scripted):
    # 60 ns looks nearest, but its FMA scaling says both threads share one
    # core: those probes neither count as good nor set the round-trip bar
    scripted([(60, 0.5)] * 3 +          # round 1 on a shared core
             [(90, 0.98)] * 3 +         # round 2: a core each
             [(60, 0.5)] +              # shared again: wait
             [(95, 1.0)] * 3)           # round 3
    t = timer.time_interleaved(_engines([]), None, runs=2, threads=2, warmup=0, gate=True)
    assert (t.rounds, t.kept, t.placement.best_c2c) == (3, 2, 90)
    assert "FMA scaling >= 0.80" in t.note()


def test_one_dip_in_four_forgiven(scripted):
    # three engines: 4 probes a round. One bad probe passes, two do not.
    scripted([90, 400, 90, 90,          # round 1 (one dip): kept
              90, 400, 400, 90,         # round 2 (two bad): dropped
              90, 90, 90, 90])          # round 3
    engines = _engines([]) + [Engine("c", lambda x: None)]
    t = timer.time_interleaved(engines, None, runs=2, threads=2, warmup=0, gate=True)
    assert (t.rounds, t.kept) == (3, 2)


def test_scaling_above_one_does_not_raise_the_bar(scripted):
    # a 1.3 (noise in the 1-thread half) must not make 0.9 look like a shared core
    scripted([(90, 1.3)] * 3 + [(90, 0.9)] * 3 * 2)
    t = timer.time_interleaved(_engines([]), None, runs=3, threads=2, warmup=0, gate=True)
    assert (t.rounds, t.kept) == (3, 3) and t.placement.best_scaling == 1.0


def test_wait_runs_out(scripted):
    # no waiting allowed and every round has a far probe: all rounds are
    # reported, flagged
    scripted([100, 500, 500] * 2)
    t = timer.time_interleaved(_engines([]), None, runs=2, threads=2, warmup=0, gate=True, max_wait_s=0.0)
    assert (t.rounds, t.kept, t.bad) == (2, 2, True)
    assert "wait ran out" in t.note()


def test_ungated_alternates_order(scripted):
    calls = []
    t = timer.time_interleaved(_engines(calls), None, runs=3, warmup=1, gate=False)
    assert t.placement is None and (t.rounds, t.kept) == (3, 3)
    turns = calls[2:][::2]  # after warm-up, the first call of each turn
    assert turns == ["a", "b", "b", "a", "a", "b"]


def test_probe_scaling_is_a_ratio():
    p = timer.placement_probe(2)
    # a ratio of two timings: any positive finite value (a loaded machine pushes it far from 1 either way)
    assert 0.0 < p.scaling < float("inf") and p.c2c_ns > 0


def test_gate_only_multithreaded():
    assert not timer.should_gate(1)
    assert timer.should_gate(2) == (len(os.sched_getaffinity(0)) > 1)


def test_core_to_core_probe_finishes_on_one_cpu():
    # both threads on one CPU must hand over by yielding, not by time slices
    # (which would take ~minutes for 5000 round trips)
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "from qpi import _engine; print(_engine.diag.core_to_core_ns(5000, 1))")
    r = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    v = float(r.stdout)
    assert math.isfinite(v) and v > 0


def test_core_to_core_probe_value():
    v = _engine.diag.core_to_core_ns(1000, 2)
    assert math.isfinite(v) and v > 0
