"""Static worst-case stack (tigris_scons.stackuse) on small real Cortex-M55 firmwares.

Each test links its own firmware with the project's compiler flags plus ``-fstack-usage``; the
expected figures are summed from the .su files gcc wrote for that build, so the tests follow the
compiler instead of hard-coding its frame sizes.
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tests.support import require_tool
from tigris_scons.stackuse import EXCEPTION_ENTRY_BYTES, FunctionFrame, StackError, StackReport, analyse_stack, read_su

pytestmark = pytest.mark.cross  # every test but test_read_su links a firmware-shaped ELF

CFLAGS = ("-mcpu=cortex-m55+nomve", "-mthumb", "-mfloat-abi=hard", "-O2", "-fstack-usage",
          "-ffunction-sections", "-fdata-sections")
LDFLAGS = ("-mcpu=cortex-m55+nomve", "-mthumb", "-mfloat-abi=hard", "-nostartfiles", "--specs=nano.specs",
           "-Wl,--gc-sections")

# Reset_Handler calls main; every other exception goes to Default_Handler unless a test defines
# SysTick_Handler (the weak alias gives way).
VECTORS_C = r"""
extern char __stack_top[];
int main(void);
void Reset_Handler(void);
void Default_Handler(void) { for (;;) {} }
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));
#ifndef CUSTOM_RESET
void Reset_Handler(void) { main(); for (;;) {} }
#endif
__attribute__((section(".vectors"), used)) const void *const vectors[16] = {
    __stack_top, Reset_Handler, Default_Handler, Default_Handler, [15] = SysTick_Handler,
};
"""

LINKER_SCRIPT = """
ENTRY(Reset_Handler)
MEMORY { FLASH (rx) : ORIGIN = 0, LENGTH = 512K  RAM (rw) : ORIGIN = 0x20000000, LENGTH = 512K }
SECTIONS {
  .vectors : { __vectors_start = .; KEEP(*(.vectors)) __vectors_end = .; } > FLASH
  .text : { *(.text .text.*) } > FLASH
  .rodata : { *(.rodata .rodata.*) } > FLASH
  .ARM.exidx : { *(.ARM.exidx*) } > FLASH
  .data : { *(.data .data.*) } > RAM AT > FLASH
  .bss (NOLOAD) : { *(.bss .bss.* COMMON) } > RAM
  __stack_top = ORIGIN(RAM) + LENGTH(RAM);
}
"""

# noipa keeps each function out of line, unspecialised and under its own name; the volatile array
# gives it a frame of a chosen size.
PRELUDE = "#define KEEP __attribute__((noipa))\n#define FRAME(n) volatile int pad[n]; pad[x & (n - 1)] = x\n"


@dataclass
class Firmware:
    elf: Path
    su_files: list[Path]
    objdump: str

    def su(self, name: str, file: str | None = None) -> int:
        """The figure gcc wrote for ``name`` (in ``file`` when several files define it)."""
        hits = [e.bytes for path in self.su_files for e in read_su(path)
                if e.name == name and (file is None or Path(e.path).name == file)]
        assert len(hits) == 1, f"{name}: {hits}"
        return hits[0]

    def disassembly(self, function: str) -> str:
        out = subprocess.run([self.objdump, "-d", "--no-show-raw-insn", str(self.elf)], check=True,
                             capture_output=True, text=True).stdout
        return re.search(rf"<{re.escape(function)}>:\n(.*?)(?:\n\n|\Z)", out, re.S)[1]

    def analyse(self, **kwargs) -> StackReport:
        return analyse_stack(self.elf, self.su_files, objdump=self.objdump, **kwargs)


def build(tmp_path: Path, sources: dict[str, str], cflags: tuple[str, ...] = (),
          ldflags: tuple[str, ...] = (), vectors: bool = True) -> Firmware:
    gcc = require_tool("arm-none-eabi-gcc")
    objdump = require_tool("arm-none-eabi-objdump")
    tmp_path.mkdir(parents=True, exist_ok=True)
    sources = ({"vectors.c": VECTORS_C} if vectors else {}) | sources
    objects = []
    for name, text in sources.items():
        (tmp_path / name).write_text(PRELUDE + textwrap.dedent(text))
        obj = tmp_path / Path(name).with_suffix(".o")
        subprocess.run([gcc, *CFLAGS, *cflags, "-c", str(tmp_path / name), "-o", str(obj)], check=True)
        objects.append(str(obj))
    (tmp_path / "fw.ld").write_text(LINKER_SCRIPT)
    elf = tmp_path / "fw.elf"
    subprocess.run([gcc, *LDFLAGS, *ldflags, "-T", str(tmp_path / "fw.ld"), *objects, "-o", str(elf)], check=True)
    return Firmware(elf, sorted(tmp_path.rglob("*.su")), objdump)


def symbol_value(elf: Path, name: str) -> int:
    with elf.open("rb") as handle:
        return next(s["st_value"] for s in ELFFile(handle).get_section_by_name(".symtab").iter_symbols()
                    if s.name == name)


def names(path: list[FunctionFrame]) -> list[str]:
    return [f.name for f in path]


def test_read_su(tmp_path):
    su = tmp_path / "a.su"
    su.write_text("src/a.c:3:38:foo.constprop\t32\tstatic\nsrc/a.c:9:5:bar\t48\tdynamic,bounded\n")
    first, second = read_su(su)
    assert (first.path, first.line, first.column, first.name, first.bytes, first.kind) == \
        ("src/a.c", 3, 38, "foo.constprop", 32, "static")
    assert (second.name, second.bytes, second.kind) == ("bar", 48, "dynamic,bounded")
    su.write_text("src/a.c:3:38:foo\t32\tstatic\nsrc/a.c:4:1:bar 16 static\n")
    with pytest.raises(StackError, match=r"a\.su:2: not a gcc -fstack-usage line"):
        read_su(su)


def test_chain_is_the_sum_of_its_su_frames(tmp_path):
    fw = build(tmp_path, {"main.c": """
        KEEP int leaf(int x) { FRAME(32); return pad[1]; }
        KEEP int mid(int x) { FRAME(8); return leaf(x) + pad[2]; }
        KEEP int shallow(int x) { FRAME(2); return pad[0]; }
        int main(void) { return mid(3) + shallow(4); }
        """})
    report = fw.analyse()
    assert names(report.reset_path) == ["Reset_Handler", "main", "mid", "leaf"]
    expected = [fw.su(name) for name in names(report.reset_path)]
    assert [f.bytes for f in report.reset_path] == expected
    assert {f.source for f in report.reset_path} == {"su"}
    assert report.reset_bytes == sum(expected)
    # No handler of its own: Default_Handler (no frame) still costs an exception entry.
    assert names(report.handler_path) == ["Default_Handler"]
    assert report.handler_bytes == fw.su("Default_Handler") + EXCEPTION_ENTRY_BYTES
    assert report.worst_bytes == report.reset_bytes + report.handler_bytes
    assert report.functions == 6  # Reset_Handler, main, mid, leaf, shallow, Default_Handler
    assert json.loads(json.dumps(report.to_dict()))["reset_path"][-1] == \
        {"name": "leaf", "bytes": fw.su("leaf"), "source": "su"}


TABLE_C = """
    typedef int (*op_fn)(int);
    KEEP int op_small(int x) { FRAME(2); return pad[0]; }
    KEEP int op_big(int x) { FRAME(64); return pad[3]; }
    KEEP int direct(int x) { FRAME(16); return pad[1]; }
    const op_fn ops[2] = { op_small, op_big };
    volatile unsigned sel;
    int main(void) { return ops[sel & 1u](5) + direct(2); }
    """


@pytest.mark.parametrize("ldflags", [(), ("-Wl,--emit-relocs",)], ids=["word-scan", "relocations"])
def test_const_pointer_table_counts_its_deepest_pointee(tmp_path, ldflags):
    fw = build(tmp_path, {"main.c": TABLE_C}, ldflags=ldflags)
    assert "op_big" not in fw.disassembly("main")  # reached only through the table in .rodata
    report = fw.analyse()
    assert names(report.reset_path) == ["Reset_Handler", "main", "op_big"]
    assert report.reset_bytes == fw.su("Reset_Handler") + fw.su("main") + fw.su("op_big")


def test_relocations_tell_pointers_from_equal_integers(tmp_path):
    """An integer that happens to equal a function's address makes it address-taken by the word
    scan (an over-estimate); with ``--emit-relocs`` only words the linker relocated count."""
    source = """
        typedef int (*op_fn)(int);
        KEEP int op_small(int x) { FRAME(2); return pad[0]; }
        KEEP int op_tiny(int x) { FRAME(2); return pad[1]; }
        KEEP int irq_only(int x) { FRAME(64); return pad[3]; }
        const op_fn ops[2] = { op_small, op_tiny };
        const volatile unsigned magic = MAGIC;
        volatile unsigned sel;
        volatile int ticks;
        void SysTick_Handler(void) { ticks += irq_only(ticks); }
        int main(void) { return ops[sel & 1u](5) + (int)magic; }
        """
    address = symbol_value(build(tmp_path / "probe", {"main.c": source}, cflags=("-DMAGIC=0",)).elf, "irq_only")
    scan, relocs = (build(tmp_path / name, {"main.c": source}, cflags=(f"-DMAGIC={address}u",), ldflags=ldflags)
                    for name, ldflags in [("scan", ()), ("relocs", ("-Wl,--emit-relocs",))])
    assert symbol_value(scan.elf, "irq_only") == symbol_value(relocs.elf, "irq_only") == address
    assert names(scan.analyse().reset_path) == ["Reset_Handler", "main", "irq_only"]
    assert names(relocs.analyse().reset_path)[-1] in {"op_small", "op_tiny"}


@pytest.mark.parametrize(("cflags", "mechanism"), [((), r"ldr\tr\d, \[pc"), (("-mpure-code",), r"movt\t")],
                         ids=["literal-pool", "movw-movt"])
def test_pointer_built_in_code_is_address_taken(tmp_path, cflags, mechanism):
    fw = build(tmp_path, {"main.c": """
        typedef int (*op_fn)(int);
        KEEP int callback(int x) { FRAME(64); return pad[3]; }
        volatile op_fn hook;
        int main(void) { hook = callback; return hook(3) + 1; }
        """}, cflags=cflags)
    assert re.search(mechanism, fw.disassembly("main"))
    report = fw.analyse()
    assert names(report.reset_path) == ["Reset_Handler", "main", "callback"]


def test_gcc_clone_matches_its_su_entry(tmp_path):
    fw = build(tmp_path, {"main.c": """
        __attribute__((noinline)) static int scale(int x, int k) { FRAME(32); return pad[1] * k; }
        volatile int n = 3;
        int main(void) { return scale(n, 7) + 1; }
        """})
    report = fw.analyse()
    assert names(report.reset_path) == ["Reset_Handler", "main", "scale.constprop.0"]
    assert (report.reset_path[-1].bytes, report.reset_path[-1].source) == (fw.su("scale.constprop"), "su")


def test_tail_call_is_followed(tmp_path):
    fw = build(tmp_path, {"main.c": """
        KEEP int deep(int x) { FRAME(64); return pad[1]; }
        KEEP int tail(int x) { return deep(x + 1); }
        int main(void) { return tail(2) + 1; }
        """})
    assert re.search(r"\tb(\.w)?\t[0-9a-f]+ <deep>", fw.disassembly("tail"))
    report = fw.analyse()
    assert names(report.reset_path) == ["Reset_Handler", "main", "tail", "deep"]
    assert report.reset_bytes == sum(fw.su(name) for name in ("Reset_Handler", "main", "tail", "deep"))


def test_branch_future_call_is_followed(tmp_path):
    """Armv8.1-M branch future: BFL is a call, a BF inside the function is a jump like any other."""
    fw = build(tmp_path, {"main.c": """
        KEEP int deep(int x) { FRAME(64); return pad[1]; }
        KEEP int caller(int x) {
            __asm__ volatile("bf 2f, 3f\\n\\tnop\\n2:\\tnop\\n3:\\tbfl 4f, deep\\n\\tnop\\n4:\\tnop" ::: "r0", "r1", "r2",
                             "r3", "r12", "lr", "memory");
            return x;
        }
        int main(void) { return caller(2) + 1; }
        """})
    text = fw.disassembly("caller")
    assert re.search(r"\tbfl\t.*<deep>", text) and re.search(r"\tbf\t", text), text
    report = fw.analyse()
    assert names(report.reset_path) == ["Reset_Handler", "main", "caller", "deep"]


def test_helium_code_is_read_as_helium(tmp_path):
    """An ELF with MVE code is disassembled as Armv8.1-M mainline: objdump 2.40 otherwise reads
    VCTP as a branch-future BFCSEL whose nonsense target adds an edge to whatever function lies
    there (the Helium kernels' stack bound grew by 1.5 KiB that way)."""
    from tigris_scons.armcode import disassemble, has_mve

    fw = build(tmp_path, {"main.c": """
        #include <arm_mve.h>
        KEEP int sum(const int8_t *p, int n) {
            int acc = 0;
            for (int i = 0; i < n; i += 16) {
                mve_pred16_t live = vctp8q((uint32_t)(n - i));
                acc = vaddvaq_p_s8(acc, vldrbq_z_s8(p + i, live), live);
            }
            return acc;
        }
        int main(void) { static int8_t data[40]; return sum(data, 40); }
        """}, cflags=("-mcpu=cortex-m55",), ldflags=("-mcpu=cortex-m55",))
    ops = {op for _, op, _ in disassemble(fw.objdump, fw.elf)}
    assert has_mve(fw.elf) and "vctp.8" in ops and not ops & {"bf", "bfcsel", "bfl", "bfx", "bflx"}, sorted(ops)
    assert names(fw.analyse().reset_path) == ["Reset_Handler", "main", "sum"]
    plain = build(tmp_path / "plain", {"main.c": "int main(void) { return 0; }"})
    assert not has_mve(plain.elf)


def test_interrupt_handler_adds_its_path_and_the_exception_frame(tmp_path):
    fw = build(tmp_path, {"main.c": """
        KEEP int irq_work(int x) { FRAME(32); return pad[2]; }
        volatile int ticks;
        void SysTick_Handler(void) { ticks += irq_work(ticks); }
        KEEP int work(int x) { FRAME(4); return pad[1]; }
        int main(void) { return work(1); }
        """})
    report = fw.analyse()
    assert names(report.handler_path) == ["SysTick_Handler", "irq_work"]
    assert report.handler_bytes == fw.su("SysTick_Handler") + fw.su("irq_work") + EXCEPTION_ENTRY_BYTES
    assert report.reset_bytes == fw.su("Reset_Handler") + fw.su("main") + fw.su("work")
    assert report.worst_bytes == report.reset_bytes + report.handler_bytes
    assert EXCEPTION_ENTRY_BYTES == 104 + 4  # extended FP frame + alignment pad


def test_recursion_is_refused_naming_the_cycle_then_bounded(tmp_path):
    fw = build(tmp_path, {"main.c": """
        KEEP int pong(int x);
        KEEP int ping(int x) { FRAME(4); return x > 0 ? pong(x - 1) + pad[1] : 0; }
        KEEP int pong(int x) { FRAME(8); return x > 0 ? ping(x - 1) + pad[2] : 0; }
        volatile int n = 6;
        int main(void) { return ping(n); }
        """})
    with pytest.raises(StackError, match="recursion ping -> pong -> ping has no bound"):
        fw.analyse()
    report = fw.analyse(recursion_bounds={"pong": 3})
    assert names(report.reset_path) == ["Reset_Handler", "main"] + ["ping", "pong"] * 3
    assert report.reset_bytes == fw.su("Reset_Handler") + fw.su("main") + 3 * (fw.su("ping") + fw.su("pong"))


def test_dynamic_frame_is_refused(tmp_path):
    fw = build(tmp_path, {"main.c": """
        volatile int n = 5;
        KEEP int vla(int x) { volatile char buf[x]; buf[0] = 1; return buf[x - 1]; }
        int main(void) { return vla(n); }
        """})
    assert [e.kind for path in fw.su_files for e in read_su(path) if e.name == "vla"] == ["dynamic"]
    with pytest.raises(StackError, match=r"vla: dynamic stack use \(VLA or alloca\) without a bound"):
        fw.analyse()


def test_same_named_statics_are_told_apart_by_file(tmp_path):
    fw = build(tmp_path, {
        "a.c": "KEEP static int check(int x) { FRAME(64); return pad[1]; }\nint fa(int x) { return check(x) + 1; }\n",
        "b.c": "KEEP static int check(int x) { FRAME(2); return pad[1]; }\nint fb(int x) { return check(x) + 2; }\n",
        "main.c": "int fa(int), fb(int);\nint main(void) { return fa(1) + fb(2); }\n",
    })
    report = fw.analyse()
    assert names(report.reset_path) == ["Reset_Handler", "main", "fa", "check"]
    assert report.reset_path[-1].bytes == fw.su("check", "a.c") > fw.su("check", "b.c")


def test_same_named_statics_in_same_named_files_are_refused(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    fw = build(tmp_path, {
        "x/util.c": "KEEP static int check(int x) { FRAME(64); return pad[1]; }\nint fa(int x) { return check(x); }\n",
        "y/util.c": "KEEP static int check(int x) { FRAME(2); return pad[1]; }\nint fb(int x) { return check(x); }\n",
        "main.c": "int fa(int), fb(int);\nint main(void) { return fa(1) + fb(2); }\n",
    })
    with pytest.raises(StackError, match=r"check: \.su entries of different functions match it"):
        fw.analyse()


def test_libc_function_gets_its_frame_from_its_instructions(tmp_path):
    fw = build(tmp_path, {"main.c": """
        #include <string.h>
        char dst[64];
        volatile int n = 64;
        KEEP void fill(int x) { FRAME(2); memset(dst, pad[0], n); }
        int main(void) { fill(3); return dst[5]; }
        """})
    report = fw.analyse()
    assert names(report.reset_path) == ["Reset_Handler", "main", "fill", "memset"]
    memset = report.reset_path[-1]
    pushed = re.search(r"\tpush(?:\.w)?\t\{([^}]*)\}", fw.disassembly("memset"))
    assert (memset.source, memset.bytes) == ("prologue", 4 * len(pushed[1].split(",")))
    assert "memset" in report.from_prologue and "fill" not in report.from_prologue


def test_naked_reset_and_asm_stack_switch(tmp_path):
    """gcc writes 0 for naked functions: their asm is measured, and a computed sp needs trust."""
    fw = build(tmp_path, {"main.c": """
        #define CUSTOM_RESET
        __attribute__((naked, noreturn)) void Reset_Handler(void) {
            __asm__ volatile("push {r4, r5}\\n ldr r0, =__stack_top\\n msr msp, r0\\n b main\\n");
        }
        __attribute__((naked)) void switch_stack(void) { __asm__ volatile("mov sp, r0\\n bx lr\\n"); }
        int main(void) { switch_stack(); return 0; }
        """ + VECTORS_C}, vectors=False)
    assert fw.su("Reset_Handler") == 0
    with pytest.raises(StackError, match=r"switch_stack: 'mov sp, r0' at 0x[0-9a-f]+ sets sp to a value"):
        fw.analyse()
    report = fw.analyse(trusted={"switch_stack"})
    assert report.reset_path[0].name == "Reset_Handler"
    assert (report.reset_path[0].bytes, report.reset_path[0].source) == (8, "prologue")


def test_variadic_register_save_area_is_counted(tmp_path):
    fw = build(tmp_path, {"main.c": """
        #include <stdarg.h>
        KEEP int sum(int count, ...) {
            va_list ap; va_start(ap, count); int s = 0;
            for (int i = 0; i < count; i++) s += va_arg(ap, int);
            va_end(ap); return s;
        }
        int main(void) { return sum(3, 1, 2, 3); }
        """})
    frame = fw.analyse().reset_path[-1]
    assert frame.name == "sum" and frame.source == "prologue" and frame.bytes > fw.su("sum")


def test_refuses_an_elf_without_vector_table(tmp_path):
    fw = build(tmp_path, {"main.c": "int main(void) { return 0; }\n"})
    script = (tmp_path / "fw.ld").read_text().replace("__vectors_start = .;", "")
    (tmp_path / "fw.ld").write_text(script)
    subprocess.run([require_tool("arm-none-eabi-gcc"), *LDFLAGS, "-T", str(tmp_path / "fw.ld"),
                    str(tmp_path / "vectors.o"), str(tmp_path / "main.o"), "-o", str(fw.elf)], check=True)
    with pytest.raises(StackError, match="no __vectors_start symbol"):
        fw.analyse()
    (tmp_path / "junk.elf").write_bytes(b"not an elf")
    with pytest.raises(StackError, match="not a readable ELF"):
        analyse_stack(tmp_path / "junk.elf", [])
