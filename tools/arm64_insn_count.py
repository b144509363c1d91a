#!/usr/bin/env python3
"""Counts the aarch64 instructions a program executes under qemu-user, and the multiply-accumulates
(MACs) each kind of arithmetic instruction performed, without a TCG plugin (Debian 12's
qemu-user-static has none): qemu logs every translated block (-d in_asm) and every block
execution (-d exec,nochain: no chaining, so each execution is logged); this script multiplies
each block's instructions by its execution count.

Usage:
  tools/arm64_insn_count.py [--cpu max,sve256=on] [--sve-bits 256] [--top 25] [--json OUT] -- CMD ARGS...
  tools/arm64_insn_count.py --log qemu.log [--sve-bits 256]        (an existing log)
Runs CMD under qemu-aarch64-static with OMP_NUM_THREADS=1 (one thread: one log stream) and
prints the total executed instructions, the top mnemonics, and the MACs by instruction class
(fp32 FMLA/FMADD, BFMMLA/BFDOT, SMMLA/SDOT, ...), so that one can see which instructions
carried a GEMM's work. The log is large (~170 MB for 4 M executed blocks): use small shapes.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

# "0x0000005502838850:  d503201f  nop" (in_asm) and "Trace 0: 0x7f.. [flags/pc/...]" (exec).
IN_RE = re.compile(r"^0x([0-9a-f]+):\s+([0-9a-f]{8})\s+(\S+)\s*(.*)$")
# qemu 7.2's disassembler prints the Armv8.6 matrix instructions as ".byte": decode them here
# (Arm ARM encodings; mask, value, mnemonic, operands marking NEON "v" or SVE "z").
MATRIX = [(0xffe0fc00, 0x6e40ec00, "bfmmla", "v"), (0xffe0fc00, 0x4e80a400, "smmla", "v"),
          (0xffe0fc00, 0x6e80a400, "ummla", "v"), (0xffe0fc00, 0x4e80ac00, "usmmla", "v"),
          (0xffe0fc00, 0x6460e400, "bfmmla", "z"), (0xffe0fc00, 0x45009800, "smmla", "z"),
          (0xffe0fc00, 0x45c09800, "ummla", "z")]


def decode_unknown(word: int, mnem: str, ops: str):
    if mnem != ".byte":
        return mnem, ops
    for mask, value, name, kind in MATRIX:
        if word & mask == value:
            return name, ("z0.s" if kind == "z" else "v0.4s")
    return mnem, ops
TRACE_RE = re.compile(r"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")


def lanes(operands: str, sve_bits: int) -> int:
    """fp32 (or destination-element) lanes of a vector instruction's destination."""
    first = operands.split(",")[0].strip()
    m = re.match(r"v\d+\.(\d+)([bhsd])", first)
    if m:
        return int(m.group(1))
    m = re.match(r"z\d+\.([bhsd])", first)
    if m:
        return sve_bits // {"b": 8, "h": 16, "s": 32, "d": 64}[m.group(1)]
    return 1


def macs(mnemonic: str, operands: str, sve_bits: int):
    """(class, MACs) of one instruction, or None when it does no multiply-accumulate work."""
    segs_128 = sve_bits // 128 if operands.lstrip().startswith("z") else 1
    if mnemonic in ("fmla", "fmls"):
        return ("fp32 fmla (vector)" if lanes(operands, sve_bits) > 1 else "fp fmla (scalar lane)",
                lanes(operands, sve_bits))
    if mnemonic in ("fmadd", "fmsub", "fnmadd", "fnmsub"):
        return ("fp scalar fmadd", 1)
    if mnemonic == "bfmmla":  # (2×4)·(4×2) bf16 → 2×2 fp32 per 128 bits
        return ("bf16 bfmmla", 16 * segs_128)
    if mnemonic == "bfdot":  # 2 bf16 products per fp32 lane
        return ("bf16 bfdot", 2 * lanes(operands, sve_bits))
    if mnemonic in ("bfmlalb", "bfmlalt"):
        return ("bf16 bfmlal", lanes(operands, sve_bits))
    if mnemonic in ("smmla", "ummla", "usmmla"):  # (2×8)·(8×2) int8 → 2×2 int32 per 128 bits
        return ("int8 smmla", 32 * segs_128)
    if mnemonic in ("sdot", "udot", "usdot", "sudot"):  # 4 int8 products per int32 lane
        return ("int8 sdot", 4 * lanes(operands, sve_bits))
    if mnemonic in ("smlal", "smlal2", "umlal", "umlal2", "mla", "madd", "smaddl"):
        return ("integer mla", lanes(operands, sve_bits))
    if mnemonic == "fmul":
        return None
    return None


def count(log_path: str, sve_bits: int):
    blocks = {}  # pc -> list of (mnemonic, operands)
    execs = collections.Counter()
    current = None
    with open(log_path, "r", errors="replace") as f:
        for line in f:
            if line.startswith("Trace "):
                m = TRACE_RE.match(line)
                if m:
                    execs[int(m.group(1), 16)] += 1
                current = None
                continue
            if line.startswith("IN:"):
                current = []
                continue
            if current is not None:
                m = IN_RE.match(line)
                if m:
                    if not current:
                        blocks[int(m.group(1), 16)] = current
                    current.append(decode_unknown(int(m.group(2), 16), m.group(3), m.group(4)))
                elif not line.strip():
                    current = None
    insns = collections.Counter()
    mac = collections.Counter()
    missing = 0
    for pc, n in execs.items():
        block = blocks.get(pc)
        if block is None:
            missing += n
            continue
        for mnem, ops in block:
            insns[mnem] += n
            r = macs(mnem, ops, sve_bits)
            if r:
                mac[r[0]] += n * r[1]
    return insns, mac, sum(execs.values()), missing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu", default="max,sve256=on", help="QEMU_CPU model (default max,sve256=on)")
    ap.add_argument("--sve-bits", type=int, default=256, help="SVE vector length for MAC counts")
    ap.add_argument("--log", help="count an existing qemu log instead of running a command")
    ap.add_argument("--keep-log", help="write the qemu log here instead of a deleted temp file")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json", help="also write the counts as JSON here")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    log = a.log
    tmp = None
    if not log:
        if not cmd:
            ap.error("give a command after -- or --log")
        log = a.keep_log or tempfile.mkstemp(prefix="qemu-insn-", suffix=".log")[1]
        tmp = None if a.keep_log else log
        env = dict(os.environ, OMP_NUM_THREADS="1", QEMU_CPU=a.cpu)
        r = subprocess.run(["qemu-aarch64-static", "-d", "in_asm,exec,nochain", "-D", log] + cmd, env=env)
        if r.returncode != 0:
            print(f"arm64_insn_count: the command exited with {r.returncode}", file=sys.stderr)
            sys.exit(1)
    try:
        insns, mac, blocks, missing = count(log, a.sve_bits)
    finally:
        if tmp:
            os.unlink(tmp)
    total = sum(insns.values())
    total_mac = sum(mac.values())
    print(f"executed blocks {blocks:,} (unmatched {missing:,}); executed instructions {total:,}")
    print(f"top {a.top} mnemonics:")
    for m, n in insns.most_common(a.top):
        print(f"  {m:10s} {n:14,d}  {100.0 * n / max(total, 1):5.1f}%")
    print("multiply-accumulates by instruction class:")
    for k, n in mac.most_common():
        print(f"  {k:22s} {n:16,d}  {100.0 * n / max(total_mac, 1):5.1f}%")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"instructions": total, "blocks": blocks, "by_mnemonic": dict(insns), "macs": dict(mac)}, f,
                      indent=1)


if __name__ == "__main__":
    main()
