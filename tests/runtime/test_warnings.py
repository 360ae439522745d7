"""The runtime compiles warning-free for the host and for Cortex-M55, and stays allocation/stdio free.

* Host: every runtime source (``runtime/src/<layer>/*.c``) and ``runtime/host/*.c`` with the SCons host flags
  (``-std=c99 -Wall -Wextra -Werror -O2 -fPIC``; ``-O2`` matters, gcc only runs its
  flow-based warnings such as ``-Wmaybe-uninitialized`` when optimizing).
* Target: every runtime source with ``arm-none-eabi-gcc -std=c99 -Wall -Wextra -Werror
  -mcpu=cortex-m55+nomve -mthumb -mfloat-abi=hard -Os -DTGR_TENSOR_ALIGN=16``: a different
  compiler configuration (32-bit ``int``/``size_t``/pointers, ``-Os``) that finds conversions and
  format mismatches the x86-64 build cannot.
* Each file is compiled on its own (``-c``), so a source that only builds thanks to another
  file's includes is caught, and a failure names the file.
* ``runtime/src`` and ``runtime/include`` never call malloc/calloc/realloc/free or printf-family
  functions and never include ``<stdio.h>`` (the firmware links no heap and no stdio); checked in
  the source text (comments and string literals removed) and in the undefined symbols of the ARM
  objects. ``runtime/host/`` (the host ABI shim) may use malloc.
* ``runtime/src`` objects have no ``.data``/``.bss``: the runtime keeps no global state.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support import REPO, require_tool
from tigris_scons import runtime_tree

RUNTIME = REPO / "runtime"
INCLUDES = [f"-I{d}" for d in runtime_tree.include_dirs(RUNTIME)]
HOST_FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-fPIC"]
ARM_FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-mcpu=cortex-m55+nomve", "-mthumb", "-mfloat-abi=hard",
             "-Os", "-DTGR_TENSOR_ALIGN=16"]

CORE_SOURCES = runtime_tree.sources(RUNTIME)
HOST_SOURCES = sorted((RUNTIME / "host").glob("*.c"))
NO_HEAP_FILES = sorted(runtime_tree.source_root(RUNTIME).rglob("*.[ch]")) + sorted((RUNTIME / "include").glob("*.h"))

FORBIDDEN_CALLS = ("malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "printf", "fprintf",
                   "sprintf", "snprintf", "vprintf", "vfprintf", "vsprintf", "vsnprintf", "puts", "fputs",
                   "putchar", "fopen", "fclose", "fwrite", "fread", "perror")
FORBIDDEN_SYMBOLS = set(FORBIDDEN_CALLS) | {"_malloc_r", "_free_r", "_calloc_r", "_realloc_r", "_printf_r",
                                           "iprintf", "siprintf", "__printf_chk", "__sprintf_chk",
                                           "__snprintf_chk", "__fprintf_chk"}

_C_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def _code_only(text: str) -> str:
    """C source with comments and string/char literals blanked (newlines kept for line numbers)."""
    return _C_TOKENS.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _compile(cc: str, flags: list[str], source: Path, out: Path) -> None:
    cmd = [cc, *flags, *INCLUDES, "-c", str(source), "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0 and out.is_file(), f"{' '.join(cmd)}\n{r.stdout}{r.stderr}"
    assert not r.stderr.strip(), f"{source.name}: diagnostics without -Werror effect:\n{r.stderr}"


def test_sources_exist() -> None:
    assert CORE_SOURCES and HOST_SOURCES, "runtime/src or runtime/host has no C sources"


@pytest.mark.parametrize("source", CORE_SOURCES + HOST_SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_host_gcc_warning_free(source: Path, tmp_path: Path) -> None:
    _compile(require_tool("gcc"), HOST_FLAGS, source, tmp_path / f"{source.stem}.o")


@pytest.mark.cross
@pytest.mark.parametrize("source", CORE_SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cortex_m55_warning_free_and_heap_free(source: Path, tmp_path: Path) -> None:
    obj = tmp_path / f"{source.stem}.o"
    _compile(require_tool("arm-none-eabi-gcc"), ARM_FLAGS, source, obj)
    nm = subprocess.run([require_tool("arm-none-eabi-nm"), "--undefined-only", "--format=just-symbols", str(obj)],
                        capture_output=True, text=True, check=True)
    bad = sorted(set(nm.stdout.split()) & FORBIDDEN_SYMBOLS)
    assert not bad, f"{source.name} references {bad}"
    # No hidden state: nothing writable outlives a call, so two plans can run side by side.
    size = subprocess.run([require_tool("arm-none-eabi-size"), "-A", str(obj)], capture_output=True, text=True,
                          check=True)
    writable = [line for line in size.stdout.splitlines()
                if re.match(r"^\.(data|bss)\S*\s+[1-9]", line)]
    assert not writable, f"{source.name} has writable static data: {writable}"


@pytest.mark.parametrize("path", NO_HEAP_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_heap_or_stdio_in_runtime_source(path: Path) -> None:
    code = _code_only(path.read_text(encoding="utf-8"))
    problems = []
    for lineno, line in enumerate(code.splitlines(), 1):
        if re.search(r"#\s*include\s*<stdio\.h>", line):
            problems.append(f"{lineno}: includes <stdio.h>")
        for name in re.findall(r"\b(" + "|".join(FORBIDDEN_CALLS) + r")\s*\(", line):
            problems.append(f"{lineno}: calls {name}()")
    assert not problems, f"{path.relative_to(REPO)}:\n  " + "\n  ".join(problems)


def test_comment_and_string_stripping() -> None:
    text = '/* malloc( */ x = "free(" ; // printf(\nfree(p);\n'
    assert re.findall(r"\bfree\s*\(", _code_only(text)) == ["free("]
    assert _code_only(text).count("\n") == 2
