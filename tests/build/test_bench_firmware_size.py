"""bench/firmware_size.py: the linker-map parser and the categoriser, on a synthetic GNU ld map."""

from __future__ import annotations

import pytest

from bench import firmware_size as fs

RT = "/b/cm55/runtime-a16/libtgr.a"
LIBC = "/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/lib/thumb/v8-m.main+dp/hard/libc_nano.a"
LIBGCC = "/usr/lib/gcc/arm-none-eabi/12.2.1/thumb/v8-m.main+dp/hard/libgcc.a"
MODEL_DIR = "/b/m"

# (output, name, address, size, object): what the map below places, before merging effects.
PLACED = [
    (".vectors", ".vectors", 0x0, 0x1C0, f"{MODEL_DIR}/obj/startup.o"),
    (".text", ".text.main", 0x1C0, 0x40, f"{MODEL_DIR}/obj/main.o"),
    (".text", ".text.a_function_with_a_very_long_section_name", 0x200, 0x30, f"{RT}(executor.o)"),
    (".text", ".text.run_tiles", 0x230, 0x50, f"{RT}(path_tiles.o)"),
    (".text", ".text.conv", 0x280, 0x64, f"{RT}(ops_conv.o)"),
    (".text", ".text.k", 0x2E4, 0x20, "/b/cm55/runtime-a16/kernels/kernels_conv.o"),
    (".text", ".text.memcpy", 0x308, 0x10, f"{LIBC}(lib_a-memcpy.o)"),
    (".text", ".text.div", 0x318, 0x18, f"{LIBGCC}(_udivmoddi4.o)"),
    (".text", ".text.tgr_built_in", 0x330, 0x8, f"{MODEL_DIR}/gen/ops_built_in.o"),
    (".text", ".text.mystery", 0x338, 0x4, "/elsewhere/mystery.o"),
    (".rodata", ".rodata.str1.4", 0x33C, 0x11, f"{RT}(loader.o)"),
    (".data", ".data", 0x20000000, 0x8, f"{LIBC}(lib_a-impure.o)"),
    (".bss", ".bss.fw_state", 0x20000008, 0x100, f"{MODEL_DIR}/obj/main.o"),
]
FILL_TEXT = 0x4  # between .text.k and .text.memcpy
FILL_RODATA = 0x3  # after .rodata.str1.4
MERGED = (".rodata", ".rodata.folded.str1.4", 0x34D, 0x25, f"{RT}(ops_reduce.o)")  # merged away: 0 B


def _line(name: str, address: int, size: int, obj: str) -> str:
    if len(name) >= 15:  # ld wraps a long input section name onto its own line
        return f" {name}\n                0x{address:08x}     0x{size:x} {obj}"
    return f" {name:<14s} 0x{address:08x}     0x{size:x} {obj}"


def synthetic_map() -> str:
    out = [
        "Archive member included to satisfy reference by file (symbol)",
        "",
        "Discarded input sections",
        "",
        f" .text.unused   0x00000000       0x99 {RT}(ops_conv.o)",
        "",
        "Memory Configuration",
        "",
        "Linker script and memory map",
        "",
        f"LOAD {MODEL_DIR}/obj/main.o",
        f"LOAD {RT}",
        "START GROUP",
        f"LOAD {LIBC}",
        "END GROUP",
        "                0x00004000                        __stack_size = 0x4000",
        "",
    ]
    by_output: dict[str, list[tuple]] = {}
    for entry in PLACED:
        by_output.setdefault(entry[0], []).append(entry)
    headers = {".vectors": (0x0, 0x1C0), ".text": (0x1C0, 0x17C), ".rodata": (0x33C, 0x14),
               ".data": (0x20000000, 0x8), ".bss": (0x20000008, 0x100)}
    for output, (address, size) in headers.items():
        if output == ".data":
            out.append(f"{output:<15s} 0x{address:08x}     0x{size:x} load address 0x00000350")
        elif output == ".rodata":  # wrapped output header
            out += [output, f"                0x{address:08x}     0x{size:x}"]
        else:
            out.append(f"{output:<15s} 0x{address:08x}     0x{size:x}")
        out.append(f" *({output} {output}.*)")
        for _, name, addr, sz, obj in by_output[output]:
            out.append(_line(name, addr, sz, obj))
            out.append(f"                0x{addr:08x}                {name.split('.')[-1]}_symbol")
            if name == ".text.k":
                out.append(f" *fill*         0x{addr + sz:08x}        0x{FILL_TEXT:x} ")
            if name == ".rodata.str1.4":
                out.append("                                 0x20 (size before relaxing)")
                # a merged-away section: listed at the same address as the fill that follows
                _, mname, _, msz, mobj = MERGED
                out.append(_line(mname, addr + sz, msz, mobj))
                out.append(f" *fill*         0x{addr + sz:08x}        0x{FILL_RODATA:x} ")
        out.append("")
    out += ["OUTPUT(/b/m/m.elf elf32-littlearm)", "", ".debug_info     0x00000000     0x1234",
            f" .debug_info    0x00000000      0x100 {MODEL_DIR}/obj/main.o"]
    return "\n".join(out) + "\n"


LAYERS = {"executor": "exec", "path_tiles": "exec", "path_select": "exec", "ops_conv": "ops",
          "ops_reduce": "ops", "kernels_conv": "kernels", "loader": "load"}
LOADABLE = {".vectors", ".text", ".rodata", ".data"}


def test_parse_map_reads_every_placed_section_including_wrapped_ones():
    lmap = fs.parse_map(synthetic_map())
    got = {(s.output, s.name): (s.address, s.size, s.obj) for s in lmap.input_sections}
    for output, name, address, size, obj in PLACED:
        assert got[(output, name)] == (address, size, obj)
    assert (".text", ".text.unused") not in got  # discarded, not placed
    assert got[(".debug_info", ".debug_info")][1] == 0x100
    assert lmap.outputs[".rodata"] == (0x33C, 0x14)  # wrapped header
    assert lmap.outputs[".data"] == (0x20000000, 0x8)
    assert lmap.fill == {".text": FILL_TEXT, ".rodata": FILL_RODATA}


def test_merged_string_section_is_clamped_to_what_it_occupies():
    merged = [s for s in fs.parse_map(synthetic_map()).input_sections if s.name == MERGED[1]]
    assert len(merged) == 1
    assert merged[0].listed == MERGED[3] and merged[0].size == 0


def test_sections_of_each_output_add_up_to_its_size():
    lmap = fs.parse_map(synthetic_map())
    for output in LOADABLE:
        placed = sum(s.size for s in lmap.input_sections if s.output == output)
        assert placed + lmap.fill.get(output, 0) == lmap.outputs[output][1], output


def _expected(extra_other: int) -> dict[str, int]:
    """Category totals computed from PLACED with the documented rules."""
    rule = {"startup.o": "firmware", "main.o": "firmware", "executor": "core", "loader": "core",
            "path_tiles": "paths", "ops_conv": "ops", "kernels_conv": "kernels", "lib_a-memcpy": "libs",
            "_udivmoddi4": "libs", "lib_a-impure": "libs", "ops_built_in": "core", "mystery": "other"}
    totals = dict.fromkeys(fs.CATEGORIES, 0)
    for output, _, _, size, obj in PLACED:
        if output not in LOADABLE:
            continue
        member = obj.rsplit("(", 1)[-1].rstrip(")").rsplit("/", 1)[-1]
        key = member if member in rule else member.removesuffix(".o")
        totals[rule[key]] += size
    totals["other"] += extra_other
    return totals


def test_categorise_attributes_every_loadable_byte():
    lmap = fs.parse_map(synthetic_map())
    padding = FILL_TEXT + FILL_RODATA + 12  # fill plus 12 B of alignment between output sections
    image = sum(s for o, (_, s) in lmap.outputs.items() if o in LOADABLE) + 12
    br = fs.categorise(lmap.input_sections, LOADABLE, image, LAYERS, [MODEL_DIR])
    assert br.totals == _expected(padding)
    assert sum(br.totals.values()) == image
    assert br.padding == padding
    assert br.objects["core"]["generated ops_built_in.o"] == 0x8
    assert br.objects["other"] == {"mystery.o": 0x4}
    assert ".bss" not in {s.output for s in lmap.input_sections if s.output in LOADABLE}


def test_categorise_refuses_an_image_smaller_than_its_sections():
    lmap = fs.parse_map(synthetic_map())
    with pytest.raises(ValueError):
        fs.categorise(lmap.input_sections, LOADABLE, 0x100, LAYERS, [MODEL_DIR])


@pytest.mark.parametrize("obj, category", [
    (f"{RT}(path_select.o)", "core"),
    (f"{RT}(path_tiles.o)", "paths"),
    ("/b/cm55/runtime-a16/ops/ops_conv.o", "ops"),
    (f"{LIBC}(lib_a-memset.o)", "libs"),
    ("/usr/lib/gcc/arm-none-eabi/12.2.1/thumb/crti.o", "libs"),
    (f"{MODEL_DIR}/obj/selftest.o", "firmware"),
    (f"{MODEL_DIR}/obj/op_table.o", "core"),
    ("/b/other/op_table.o", "other"),
    ("linker stubs", "other"),
])
def test_classify(obj, category):
    assert fs.classify(obj, LAYERS, [MODEL_DIR])[0] == category


def test_loadable_sections_are_progbits_with_a_load_region():
    size = {"sections": [
        {"name": ".text", "type": "PROGBITS", "load_region": "ITCM", "size": 4},
        {"name": ".data", "type": "PROGBITS", "load_region": "ITCM", "size": 4},
        {"name": ".bss", "type": "NOBITS", "load_region": None, "size": 4},
        {"name": ".empty", "type": "PROGBITS", "load_region": "ITCM", "size": 0},
    ]}
    assert fs.loadable_sections(size) == {".text", ".data"}
