"""Build and run the plan fuzzer (tests/fuzz/fuzz_plan.c) for a given time.

    .venv/bin/python tests/fuzz/run_fuzz.py --seconds 600 [--jobs 2] [--merge] [--timeout 10]

1. Builds ``build/fuzz/fuzz_plan`` with clang (``-fsanitize=fuzzer,address,undefined
   -fno-sanitize-recover=undefined -g -O1``, the runtime sources and the host shim), unless it is
   newer than every source.
2. Copies ``tests/fuzz/corpus`` and ``tests/fuzz/regressions`` into a working corpus
   (``build/fuzz/work/corpus``, kept between runs so a later run continues where this one
   stopped; ``--fresh`` starts over).
3. Runs libFuzzer for ``--seconds`` (``-fork=N`` with ``--jobs N > 1``: N processes, one
   merged corpus, crashes and timeouts recorded and fuzzing continued), each input limited to
   ``--timeout`` seconds and ``--rss-mb`` of memory. Crash, timeout and OOM inputs land in
   ``build/fuzz/artifacts/``.
4. Prints executions, libFuzzer's running coverage (``cov``: edges, ``ft``: features) at the
   start and the end, the coverage of one pass over the working corpus before and after (the
   comparable figure: fork mode counts differently), and every artifact; appends the figures to
   ``build/fuzz/runs.jsonl``.
5. With ``--merge``, adds the working-corpus inputs that bring new edges to
   ``tests/fuzz/corpus`` (``-merge=1 -use_counters=0``, smallest inputs first).

Exit status: 0 when no artifact was written, 1 otherwise (2 when the build fails).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BUILD = REPO / "build" / "fuzz"

from tigris_scons import builtin, runtime_tree

TARGET = BUILD / "fuzz_plan"
CORPUS = HERE / "corpus"
REGRESSIONS = HERE / "regressions"

FUZZ_FLAGS = ["-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=undefined", "-g", "-O1"]


def sources(tree: Path = REPO) -> list[Path]:
    """The full runtime (its generated *_built_in.c units list every op and path), the host shim
    and the fuzz entry point."""
    generated = builtin.write(BUILD / "gen" / hashlib.sha1(str(tree).encode()).hexdigest()[:12], builtin.scan(tree / "runtime"))
    return (runtime_tree.sources(tree / "runtime") + generated +
            [tree / "runtime" / "host" / "tigris_host.c", HERE / "fuzz_plan.c"])


#: While rounds before a run fails: few, so a mutated plan whose loop never stops cannot hang the
#: fuzzer (the runtime's default is 2^32 - 1, as the reference bounds no loop).
MAX_WHILE_ROUNDS = 4096


def build_command(cc: str, output: Path, flags: list[str], tree: Path = REPO) -> list[str]:
    """Compile line for the fuzz target (or, with other flags, the replay driver) from the
    runtime sources under ``tree`` (the repository, or a snapshot of it)."""
    includes = [*runtime_tree.include_dirs(tree / "runtime"), tree / "runtime" / "host"]
    return [cc, "-std=c99", "-Wall", "-Wextra", *flags, *(f"-I{d}" for d in includes),
            "-DTGR_TENSOR_ALIGN=32u", f"-DTGR_MAX_WHILE_ROUNDS={MAX_WHILE_ROUNDS}u", *map(str, sources(tree)), "-lm",
            "-o", str(output)]


def build(clang: str = "clang", force: bool = False, tree: Path = REPO) -> Path:
    headers = list((tree / "runtime").rglob("*.h"))
    newest = max(p.stat().st_mtime for p in sources(tree) + headers)
    if force or tree != REPO or not TARGET.is_file() or TARGET.stat().st_mtime < newest:
        BUILD.mkdir(parents=True, exist_ok=True)
        cmd = build_command(clang, TARGET, FUZZ_FLAGS, tree)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(f"build failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
            raise SystemExit(2)
    return TARGET


_STAT = re.compile(r"#(\d+)\s*:?\s+\w*\s*cov: (\d+) ft: (\d+)")


def parse_stats(text: str) -> dict:
    """First and last (executions, cov, ft) in libFuzzer's status lines (plain and fork mode)."""
    rows = [tuple(map(int, m.groups())) for m in _STAT.finditer(text)]
    if not rows:
        return {}
    first, last = rows[0], rows[-1]
    return {"start": {"execs": first[0], "cov": first[1], "ft": first[2]},
            "end": {"execs": last[0], "cov": last[1], "ft": last[2]}}


def corpus_coverage(target: Path, corpus: Path, args) -> dict:
    """cov/ft of one pass over ``corpus`` (``-runs=0``): comparable between runs, unlike the
    fork mode's running figures."""
    r = subprocess.run([str(target), "-runs=0", f"-timeout={args.timeout}", f"-rss_limit_mb={args.rss_mb}",
                        f"-max_len={args.max_len}", str(corpus)], capture_output=True, text=True)
    m = re.findall(r"INITED cov: (\d+) ft: (\d+) corp: (\d+)", r.stderr)
    return {"cov": int(m[-1][0]), "ft": int(m[-1][1]), "inputs": int(m[-1][2])} if m else {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=60,
                    help="fuzzing time (default 60; 0: no fuzzing, e.g. only --merge a previous run's corpus)")
    ap.add_argument("--jobs", type=int, default=1, help="parallel fuzzing processes (libFuzzer -fork)")
    ap.add_argument("--timeout", type=int, default=10, help="seconds per input before it counts as a hang")
    ap.add_argument("--rss-mb", type=int, default=2048, help="memory limit per process")
    ap.add_argument("--max-len", type=int, default=65536, help="largest input libFuzzer makes")
    ap.add_argument("--workdir", type=Path, default=BUILD / "work", help="working corpus and logs")
    ap.add_argument("--fresh", action="store_true", help="start from the committed seeds only")
    ap.add_argument("--merge", action="store_true", help="merge new coverage back into tests/fuzz/corpus")
    ap.add_argument("--clang", default=os.environ.get("CLANG", "clang"))
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--tree", type=Path, default=REPO,
                    help="build from the runtime/ of this directory (e.g. a `git archive HEAD` snapshot, so "
                         "uncommitted edits elsewhere in the tree do not end up in the fuzzer)")
    ap.add_argument("extra", nargs="*", help="further libFuzzer flags (after --)")
    args = ap.parse_args()

    target = build(args.clang, args.rebuild, args.tree.resolve())
    work = args.workdir / "corpus"
    artifacts = BUILD / "artifacts"
    if args.fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    for src in (CORPUS, REGRESSIONS):
        for f in sorted(src.glob("*")) if src.is_dir() else []:
            if f.is_file() and f.suffix != ".md":
                shutil.copyfile(f, work / f.name)
    before = set(artifacts.iterdir())
    cov_before = corpus_coverage(target, work, args)
    print(f"start corpus: {cov_before}", flush=True)

    cmd = [str(target), f"-max_total_time={args.seconds}", f"-timeout={args.timeout}",
           f"-rss_limit_mb={args.rss_mb}", f"-max_len={args.max_len}", f"-artifact_prefix={artifacts}/",
           "-print_final_stats=1"]
    if args.jobs > 1:
        cmd += [f"-fork={args.jobs}", "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1"]
    cmd += [*args.extra, str(work)]
    log = args.workdir / "fuzz.log"
    if args.seconds > 0:
        print("$", " ".join(cmd), flush=True)
    start = time.monotonic()
    if args.seconds > 0:  # libFuzzer's -max_total_time=0 would mean "no limit"
        with open(log, "w") as out:
            subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT,
                           env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0",
                                    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"))
    elapsed = time.monotonic() - start
    text = log.read_text(errors="replace") if args.seconds > 0 else ""
    stats = parse_stats(text)
    found = sorted(set(artifacts.iterdir()) - before)
    print(f"fuzzed {elapsed:.0f} s with {args.jobs} process(es); log {log}")
    if stats:
        s, e = stats["start"], stats["end"]
        print(f"executions: {e['execs']}")
        print(f"coverage:   cov {s['cov']} -> {e['cov']}, ft {s['ft']} -> {e['ft']}")
    cov_after = corpus_coverage(target, work, args)
    print(f"corpus:     {sum(1 for _ in work.iterdir())} inputs in {work}")
    if cov_before and cov_after:
        print(f"corpus pass (-runs=0): cov {cov_before['cov']} -> {cov_after['cov']}, "
              f"ft {cov_before['ft']} -> {cov_after['ft']}, inputs {cov_before['inputs']} -> {cov_after['inputs']}")
    for f in found:
        print(f"ARTIFACT    {f}")
    if not found:
        print("no crashes, timeouts or OOMs")
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD / "runs.jsonl", "a") as runs:
        runs.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "seconds": round(elapsed),
                               "jobs": args.jobs, **stats,
                               "corpus_before": cov_before, "corpus_after": cov_after, "artifacts": [f.name for f in found]}) + "\n")
    if args.merge:
        # edges only (-use_counters=0): hit-count features would add hundreds of near-copies
        r = subprocess.run([str(target), "-merge=1", "-use_counters=0", f"-max_len={args.max_len}",
                            f"-timeout={args.timeout}", str(CORPUS), str(work)], capture_output=True, text=True)
        added = re.findall(r"MERGE-OUTER: (\d+) new files", r.stderr)
        print(f"merged into {CORPUS}: {added[-1] if added else '?'} new files")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
