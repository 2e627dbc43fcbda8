"""Mutation testing: apply each mutant of mutants.py to a scratch copy of the
tree, build, run its targeted tests (-x); a survivor then gets the whole suite.
Reports killed / survived. Not part of CI (a build per C++ mutant).

    python tests/mutation/run_mutants.py                 # all mutants
    python tests/mutation/run_mutants.py -k conv_ pool_  # ids containing any of these
    python tests/mutation/run_mutants.py --list

The scratch copy lives in --work (default /tmp/qpi-mutation): the sources are
copied once, the C++ extension is built with CMake there (incrementally: a
mutant recompiles one file) and put beside the Python package, and tests run
with PYTHONPATH pointing at it, so the installed qpi is never touched."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
from mutants import MUTANTS  # noqa: E402


def sh(cmd, cwd, env=None, timeout=None):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def prepare(work: Path, jobs: int) -> Path:
    src = work / "src"
    before = {}
    if src.exists():
        before = {f: f.read_bytes() for f in (src / "src").rglob("*") if f.is_file()}
        shutil.rmtree(src)
    skip = shutil.ignore_patterns("build", "_arm", "_san", "*.so", "__pycache__", ".git", "calib")

    def ignore(d, names):  # bench/'s modules and scripts are the tests' (benchlib, test_bench.py); not its results
        return set(skip(d, names)) | ({"results"} if Path(d) == REPO / "bench" else set())
    shutil.copytree(REPO, src, ignore=ignore)
    for f in (src / "src").rglob("*"):  # a file an interrupted run left mutated: newer than its object
        if f.is_file() and before.get(f) != f.read_bytes():
            os.utime(f)
    build = work / "build"
    nb = sh([sys.executable, "-m", "nanobind", "--cmake_dir"], REPO).stdout.strip()
    cfg = ["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", f"-Dnanobind_DIR={nb}",
           f"-DPython_EXECUTABLE={sys.executable}", "-DPython_ROOT_DIR=" + sysconfig.get_config_var("prefix")]
    r = sh(cfg, work)
    if r.returncode:
        sys.exit("cmake configure failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])
    build_ext(work, jobs)
    return src


def build_ext(work: Path, jobs: int) -> str | None:
    """Build; put the module beside the scratch package. Returns an error text or None."""
    r = sh(["cmake", "--build", str(work / "build"), "-j", str(jobs)], work)
    if r.returncode:
        return (r.stdout + r.stderr)[-2000:]
    mods = sorted((work / "build").rglob("_engine*.so"), key=lambda p: p.stat().st_mtime)
    if not mods:
        return "no _engine module built"
    dst = work / "src" / "python" / "qpi" / mods[-1].name
    shutil.copy2(mods[-1], dst)
    return None


def run_tests(src: Path, tests: list[str], full: bool, timeout: int) -> tuple[bool, str]:
    """(passed, tail of output)."""
    env = dict(os.environ, PYTHONPATH=str(src / "python"), OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    env.setdefault("QPI_TEST_PHOTOS", "2")  # the asset tests on two photos: a survivor's suite in minutes
    args = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    args += ["tests", "--deselect", "tests/test_fuzz.py::test_fuzz_mutated_models",
             "--ignore", "tests/test_bench_timing.py"] if full else tests
    try:
        r = sh(args, src, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "timeout (counted as killed)"
    return r.returncode == 0, (r.stdout + r.stderr)[-1500:]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", nargs="*", default=[], help="only mutants whose id contains one of these")
    ap.add_argument("--work", default="/tmp/qpi-mutation")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--no-full", action="store_true", help="do not run the whole suite on survivors")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    todo = [m for m in MUTANTS if not args.k or any(k in m[0] for k in args.k)]
    for mid, f, old, _, _ in todo:  # every mutant applies to today's sources
        n = (REPO / f).read_text().count(old)
        if n != 1:
            sys.exit(f"mutant {mid}: its text occurs {n} times in {f} (must be once)")
    if args.list:
        for m in todo:
            print(f"{m[0]:40s} {m[1]}")
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    src = prepare(work, args.j)
    print(f"scratch tree {src} built in {time.time() - t0:.0f}s", flush=True)
    base_ok, out = run_tests(src, sorted({t for m in todo for t in m[4]}), False, 1800)
    if not base_ok:
        sys.exit("the unmutated tree fails its targeted tests:\n" + out)
    results = []
    for mid, f, old, new, tests in todo:
        t1 = time.time()
        path = src / f
        orig = path.read_text()
        path.write_text(orig.replace(old, new, 1))
        try:
            err = build_ext(work, args.j) if f.startswith("src/") else None
            if err:
                status, how = "killed", "build failed"
            else:
                ok, out = run_tests(src, tests, False, 900)
                status, how = ("survived", "targeted tests pass") if ok else ("killed", "targeted tests")
                if ok and not args.no_full:
                    ok, out = run_tests(src, [], True, 3600)
                    status, how = ("survived", "whole suite passes") if ok else ("killed", "whole suite")
        finally:
            path.write_text(orig)
            if f.startswith("src/"):
                os.utime(path)  # rebuild the original before the next mutant
        results.append({"id": mid, "file": f, "status": status, "how": how, "seconds": round(time.time() - t1)})
        print(f"{mid:40s} {status:8s} ({how}, {time.time() - t1:.0f}s)", flush=True)
    if any(m[1].startswith("src/") for m in todo):
        build_ext(work, args.j)
    killed = sum(r["status"] == "killed" for r in results)
    print(f"\n{killed}/{len(results)} mutants killed ({100.0 * killed / max(1, len(results)):.0f}%), "
          f"{time.time() - t0:.0f}s")
    for r in results:
        if r["status"] == "survived":
            print(f"  SURVIVED {r['id']} ({r['file']})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
