"""Code compiled for an ISA (kernels/<family>/avx2.cc, avx512.cc, avx512_vnni.cc, neon_dotprod.cc,
neon_i8mm.cc) runs only after cpuid says the CPU has that ISA. Two ways it could run on any CPU, checked
on the object files of the build in this checkout (build/*/compile_commands.json: `pip install .` and the
dev build leave one):

- a direct call from baseline code to a function defined in an ISA file (an int8 family's entry table
  built that way stopped an AVX2-only CPU with SIGILL: GCC had vectorised its std::vector initialiser
  with AVX-512). The registry calls kernels through function pointers after its ISA check, and
  kernels/registry.h's append_isa_entries, the one function allowed to call an ISA file directly,
  checks the hardware first;
- a dynamic initialiser in an ISA file (.init_array), which the loader runs at import.

A test host with the ISA never notices either, so this is checked on the binary."""
from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ISA_FILE = re.compile(r"/kernels/[^/]+/(avx2|avx512|avx512_vnni|neon_dotprod|neon_i8mm)\.cc$")
CALL_RELOCS = {"R_X86_64_PLT32", "R_X86_64_PC32", "R_AARCH64_CALL26", "R_AARCH64_JUMP26"}


def _builds():
    return sorted(p.parent for p in REPO.glob("build/*/compile_commands.json")
                  if list(p.parent.glob("_engine*.so")) or list(p.parent.glob("CMakeFiles/_engine.dir")))


def _objects(build: Path):
    """(source, object path) of the engine's translation units."""
    out = []
    for e in json.loads((build / "compile_commands.json").read_text()):
        m = re.search(r"-o (\S+\.o)\b", e["command"])
        if m and "/src/engine/" in e["file"]:
            obj = Path(e.get("directory", build)) / m.group(1)
            if obj.exists():
                out.append((e["file"], obj))
    return out


ELF_MACHINE = {62: "x86_64", 183: "aarch64"}  # e_machine


def _elf_machine(obj: Path) -> str:
    with open(obj, "rb") as f:
        return ELF_MACHINE.get(int.from_bytes(f.read(20)[18:20], "little"), "other")


def _tool(build: Path, name: str) -> str | None:
    cache = (build / "CMakeCache.txt").read_text() if (build / "CMakeCache.txt").exists() else ""
    m = re.search(r"^CMAKE_CXX_COMPILER:\w+=(\S+)", cache, re.M)
    if m and m.group(1).endswith("g++"):  # a cross compiler's binutils share its prefix
        cand = m.group(1)[: -len("g++")] + name
        if shutil.which(cand):
            return cand
    return shutil.which(name)


@pytest.mark.parametrize("build", _builds() or [None], ids=lambda b: b.name if b else "none")
def test_no_isa_code_runs_before_dispatch(build):
    if build is None:
        pytest.skip("no build directory with compile_commands.json in this checkout (pip install . makes one)")
    objs = _objects(build)
    if not objs:
        pytest.skip(f"{build}: no object files")
    if _elf_machine(objs[0][1]) != platform.machine():
        # the run on that architecture checks it (under qemu the same x86 objects took half a minute)
        pytest.skip(f"{build}: built for {_elf_machine(objs[0][1])}, not this machine ({platform.machine()})")
    nm, objdump = _tool(build, "nm"), _tool(build, "objdump")
    if not nm or not objdump:
        pytest.skip("binutils (nm, objdump) for this build's target not installed")
    isa = [(s, o) for s, o in objs if ISA_FILE.search(s)]
    base = [(s, o) for s, o in objs if not ISA_FILE.search(s)]
    assert isa and base

    def defined(o):
        out = subprocess.run([nm, "--defined-only", "-g", str(o)], capture_output=True, text=True, check=True).stdout
        return {ln.split()[-1] for ln in out.splitlines() if len(ln.split()) == 3 and ln.split()[1] in "TW"}

    isa_syms = {}
    for s, o in isa:
        for sym in defined(o):
            isa_syms.setdefault(sym, s)
    base_syms = set().union(*(defined(o) for _, o in base))
    only_isa = {k: v for k, v in isa_syms.items() if k not in base_syms}

    bad = []
    for s, o in base:
        out = subprocess.run([objdump, "-dr", "--no-show-raw-insn", str(o)], capture_output=True, text=True,
                             check=True).stdout
        prev = func = ""
        for ln in out.splitlines():
            if h := re.match(r"[0-9a-f]+ <(.+)>:$", ln):
                func = h.group(1)
            m = re.match(r"\s+[0-9a-f]+: (R_\w+)\s+(\S+?)(?:[-+]0x[0-9a-f]+)?$", ln)
            if m:
                if m.group(1) in CALL_RELOCS and re.search(r"\b(call|jmp|bl|b)\b", prev) and m.group(2) in only_isa \
                        and "append_isa_entries" not in func:
                    bad.append(f"{Path(s).relative_to(REPO)} calls {m.group(2)} ({Path(only_isa[m.group(2)]).relative_to(REPO)})")
            elif ln.strip():
                prev = ln
    for s, o in isa:
        heads = subprocess.run([objdump, "-h", str(o)], capture_output=True, text=True, check=True).stdout
        if re.search(r"\s\.(init_array|ctors)\b", heads):
            bad.append(f"{Path(s).relative_to(REPO)} has a dynamic initialiser (.init_array)")
    assert not bad, "ISA code reachable on any CPU:\n" + "\n".join(sorted(set(bad)))
