"""A shared SCons CacheDir (``cache_dir=``, docs/cache.md) across two clean checkouts.

Checkout A builds and runs DS-CNN with an empty cache; checkout B, a second copy of the same
tree at another path (run by another path to the same Python, as a second machine's venv would
be), builds the same thing with the same cache. B must take the plan, the objects (with their
``.su`` stack-usage files), the library and the ELF from the cache, as SCons' own messages say
(``Retrieved `...' from cache``; ``--cache-debug`` names every miss), compile nothing, and still
run QEMU and both checks itself.

``icount=1`` makes B's run log byte-identical to A's, so every input of the final check is the
same: the check must run anyway (it is NoCache, like the QEMU run).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.build.build_helpers import ELF_C, ELF_LD, Scons, require_markers_and_tools
from tests.support import REPO, require_tool

MODEL = "ds_cnn"
#: Progress lines of steps that produce cacheable targets (tigris.py, tigris_host.py, tigris_cm55.py).
BUILD_STEP = re.compile(r"^(?:(?:CC|AR|RANLIB|LINK) \(|(?:MODEL|PLAN|RENDER|NEEDS|GEN|STACK|SIZE|REFERENCE) )")
RETRIEVED = re.compile(r"^Retrieved `(.+)' from cache$", re.M)


def copy_checkout(dest: Path) -> Path:
    """What a clean checkout of the working tree would hold: tracked files and new files that are
    not ignored (so uncommitted work is tested too), never build/ or .venv/."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if not src.exists() and not src.is_symlink():  # tracked but deleted in the working tree
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel, follow_symlinks=False)
    return dest


def second_python(tmp_path: Path) -> str:
    """The test's Python under another path (a symlink to its venv), so Value nodes that carried
    the interpreter's path would miss; the interpreter itself outside a venv."""
    if sys.prefix == sys.base_prefix:
        return sys.executable
    link = tmp_path / "venv-b"
    link.symlink_to(sys.prefix, target_is_directory=True)
    return str(link / Path(sys.executable).relative_to(sys.prefix))


def scons(python: str, checkout: Path, *args: str) -> subprocess.CompletedProcess:
    require_markers_and_tools(args)
    env = {k: v for k, v in os.environ.items() if k not in ("TIGRIS_HOST_LIBRARY", "TIGRIS_CACHE_DIR")}
    env["PATH"] = str(Path(python).parent) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run([python, "-m", "SCons", "-Q", *args], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, (f"scons {' '.join(args)} in {checkout} exited {proc.returncode}\n"
                                  f"--- stdout\n{proc.stdout[-8000:]}\n--- stderr\n{proc.stderr[-4000:]}")
    return proc


@pytest.mark.slow
@pytest.mark.scons
@pytest.mark.qemu
def test_second_checkout_takes_the_build_from_the_cache_and_still_runs_and_checks(tmp_path):
    require_tool("git")
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    cache = tmp_path / "cache"
    a = copy_checkout(tmp_path / "a")
    b = copy_checkout(tmp_path / "b")
    args = (f"model={MODEL}", f"cache_dir={cache}", "icount=1", "run")
    out = f"build/{MODEL}/{MODEL}"

    first = scons(sys.executable, a, *args)
    assert not RETRIEVED.search(first.stdout), "the cache was empty"
    assert any(line.startswith("CC (") for line in first.stdout.splitlines())
    assert f"result: ok ({MODEL})" in first.stdout
    assert (cache / "config").is_file() and any(cache.glob("*/*")), "checkout A filled no cache"

    second = scons(second_python(tmp_path), b, *args, "--cache-debug=-")
    log = second.stdout
    retrieved = set(RETRIEVED.findall(log))
    misses = [line for line in log.splitlines() if "not in cache" in line]
    built = [line for line in log.splitlines() if BUILD_STEP.match(line)]
    why = "\ncache misses (--cache-debug):\n  " + "\n  ".join(misses) + "\nbuilt:\n  " + "\n  ".join(built)

    # SCons' own messages: plan, objects, library and firmware come from the cache ...
    for path in (f"{out}.tgrs", f"{out}.elf", f"{out}.map", f"{out}.stack-probe.elf", f"{out}.stack.json",
                 f"build/{MODEL}/main.c", f"build/{MODEL}/obj/main.o", f"build/{MODEL}/obj/startup.o"):
        assert path in retrieved, f"{path} was not retrieved from the cache{why}"
    assert any(p.endswith("/libtgr.a") for p in retrieved), "the runtime library was not retrieved"
    cross_objects = [p for p in retrieved if p.endswith(".o") and not p.startswith("build/host")]
    assert len(cross_objects) > 20, cross_objects
    # ... each firmware object with the stack-usage file the stack analysis reads next to it
    for obj in cross_objects:
        su = obj[:-2] + ".su"
        assert su in retrieved and (b / su).is_file(), f"{su} was not restored with {obj}"
    # ... and nothing was built: no cache miss, no compile, link, plan or render step
    assert not misses and not built, f"checkout B built instead of taking from the cache{why}"

    # QEMU ran in B (never from the cache) and both checks executed there
    assert not {f"{out}.run.log", f"{out}.size.ok", f"{out}.check.ok"} & retrieved, "a run or check came from the cache"
    assert f"QEMU {out}.elf" in log
    assert f"---- QEMU {MODEL}: {out}.run.log" in log and "BENCH_END status=ok" in log
    assert f"CHECK {out}.size.ok" in log and f"CHECK {out}.check.ok" in log
    assert f"result: ok ({MODEL})" in log and "unchanged since the last check" not in log
    assert (b / f"{out}.check.ok").read_text() == "ok\n"
    assert (b / f"{out}.run.log").read_text() == (a / f"{out}.run.log").read_text()  # icount=1: same run


CM55_CACHE_SCONSTRUCT = """\
env = Environment(tools=[], toolpath=[r"{toolpath}"])
env.Tool("tigris_cm55")
env.Append(CCFLAGS=["-fstack-usage"])
CacheDir(r"{cache}")
objs = env.Object("fw.c")
print("OBJECT", " ".join(str(n) for n in objs))
env.Program("fw", objs, LINKFLAGS=env["LINKFLAGS"] + ["-nostdlib", "-T", "fw.ld"])
"""


@pytest.mark.scons
@pytest.mark.cross
def test_cross_tool_stores_stack_usage_with_each_object(tmp_path):
    """``env.Object()`` of the tool declares ``fw.su`` (so the cache restores it and ``-c``
    removes it) without handing it to the linker; the object is the same in every folder."""
    require_tool("arm-none-eabi-gcc")
    trees = []
    for name in ("one", "two"):
        tree = tmp_path / name
        tree.mkdir()
        (tree / "SConstruct").write_text(CM55_CACHE_SCONSTRUCT.format(toolpath=REPO / "site_scons/site_tools",
                                                                      cache=tmp_path / "cache"))
        (tree / "fw.c").write_text(ELF_C)
        (tree / "fw.ld").write_text(ELF_LD)
        trees.append(tree)
    first = Scons(trees[0])()
    assert "OBJECT fw.o fw.su" in first.stdout
    assert "fw.su" not in next(line for line in first.stdout.splitlines() if " -o fw.elf " in line)
    assert (trees[0] / "fw.su").read_text().startswith("fw.c:")

    second = Scons(trees[1])()
    for path in ("fw.o", "fw.su", "fw.elf", "fw.map"):
        assert f"Retrieved `{path}' from cache" in second.stdout, second.stdout
    assert (trees[1] / "fw.su").read_bytes() == (trees[0] / "fw.su").read_bytes()
    Scons(trees[1])("-c")
    assert not (trees[1] / "fw.su").exists(), "the .su is a declared target, so -c removes it"

    # Built, not retrieved, in another folder: still byte-identical (paths recorded relative)
    (tmp_path / "three").mkdir()
    for name in ("SConstruct", "fw.c", "fw.ld"):
        (tmp_path / "three" / name).write_text((trees[0] / name).read_text())
    Scons(tmp_path / "three")("--cache-disable")
    assert (tmp_path / "three" / "fw.o").read_bytes() == (trees[0] / "fw.o").read_bytes()
