"""qpi's thread pool (src/engine/core/parallel.h): every index of a job is covered exactly once, worker indices
are valid and exclusive, for any n / threads, nested calls, back-to-back jobs (a late worker must not claim from
the next job) and calls from two Python threads at once; and models give the same outputs at 1 and 2 threads."""
import threading

import numpy as np
import pytest

import qpi
from qpi import _engine

diag = _engine.diag


@pytest.mark.parametrize("threads", [1, 2, 3, 4, 7, 16])
def test_every_index_once_random_n(threads):
    # n drawn in [0, 300]: n = 0, n < threads, n between threads and the chunk count, n far above it
    assert diag.parallel_check(300, threads, jobs=400, seed=threads) == 0


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 17, 1000, 4095, 4096, 4097, 100003])
@pytest.mark.parametrize("threads", [2, 5])
def test_every_index_once_fixed_n(n, threads):
    assert diag.parallel_check(n, threads, jobs=3, fixed_n=True) == 0


def test_threads_above_n():
    for n in range(0, 9):
        assert diag.parallel_check(n, 16, jobs=20, fixed_n=True) == 0


def test_nested_calls_run_inline_and_cover_everything():
    assert diag.parallel_check(40, 2, jobs=50, inner=13, seed=3) == 0
    assert diag.parallel_check(7, 4, jobs=50, inner=31, seed=4) == 0


def test_many_back_to_back_jobs():
    # tiny jobs one after the other: a worker waking late must find its job over and claim nothing of the next
    assert diag.parallel_check(6, 2, jobs=200000, seed=5) == 0
    assert diag.parallel_check(40, 4, jobs=50000, seed=6) == 0


def test_two_python_threads_at_once():
    res = []

    def go(seed):
        res.append(diag.parallel_check(200, 2, jobs=20000, seed=seed))

    ts = [threading.Thread(target=go, args=(s,)) for s in (7, 8, 9)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert res == [0, 0, 0]


def test_workers_do_take_work():
    # a job of ~10 ms a chunk on 2 threads: over several jobs the pool's worker runs some chunks (the caller
    # alone would mean parallel_for never parallelises)
    ran = sum(diag.parallel_worker_chunks(64, 2, spin_per_index=200000) for _ in range(5))
    assert ran > 0
    assert diag.parallel_workers() >= 1


def _model(rng):
    from onnx import TensorProto, helper, numpy_helper

    w1 = numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 1, 3, 3)).astype(np.float32), "w2")
    w3 = numpy_helper.from_array(rng.standard_normal((8, 16, 1, 1)).astype(np.float32), "w3")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["a"], ["b"]),
        helper.make_node("Conv", ["b", "w2"], ["c"], pads=[1, 1, 1, 1], group=16),
        helper.make_node("Conv", ["c", "w3"], ["d"]),
        helper.make_node("MaxPool", ["d"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 37, 45])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w1, w2, w3])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_two_sessions_from_two_python_threads():
    rng = np.random.default_rng(0)
    m = _model(rng)
    xs = [rng.standard_normal((2, 3, 37, 45)).astype(np.float32) for _ in range(4)]
    ref = [qpi.load(m, threads=2).run(x)[0] for x in xs]  # one session, one Python thread
    sessions = [qpi.load(m, threads=2), qpi.load(m, threads=2)]
    errors = []

    def go(s):
        for _ in range(30):
            for x, r in zip(xs, ref):
                y = s.run(x)[0]
                # the same kernels at any partition: each output element is computed by one chunk
                if not np.array_equal(y, r):
                    errors.append(float(np.abs(y - r).max()))

    ts = [threading.Thread(target=go, args=(s,)) for s in sessions]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_gets_workers_of_its_own():
    """After fork() only the forking thread exists in the child: the pool starts fresh there (pthread_atfork),
    so the child's jobs are parallel again instead of the caller running every chunk alone."""
    import os

    diag.parallel_worker_chunks(64, 2, spin_per_index=1000)  # the parent's pool has its worker
    assert diag.parallel_workers() >= 1
    pid = os.fork()
    if pid == 0:  # child: report through the exit code, never return into pytest
        ok = 0
        try:
            ran = sum(diag.parallel_worker_chunks(64, 2, spin_per_index=200000) for _ in range(5))
            ok = int(ran > 0 and diag.parallel_workers() >= 1)
        finally:
            os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, "the child's jobs ran on the caller alone"
