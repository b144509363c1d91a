#!/usr/bin/python3
"""Writes the checkpoint and archive fixtures of tests/io into tests/data/io/.

Run with the Debian Python that has torch 1.13:  /usr/bin/python3 tools/make_io_fixtures.py
The C++ tests never type expected values: every *.bin that should load has a sibling
*.expected.safetensors written here by a tiny pure-Python safetensors writer (so the
reader is also checked against a writer that is not ours), holding each tensor made
contiguous. Hostile files are hand-assembled (pickle opcodes, zip and tar entries) so
each one breaks exactly one rule. Must match tests/io/test_pytorch_bin.cpp and
tests/io/test_archive.cpp (file names) and tests/data/io/README.md (what each file is).
"""
import collections
import io
import json
import os
import struct
import tarfile
import zipfile

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "io")

ST_DTYPE = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
            torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
            torch.uint8: "U8", torch.bool: "BOOL"}


def tensor_bytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: same bits as int16
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors(path, tensors, metadata=None):
    """Minimal reference writer: names sorted, data packed in that order, header padded
    with spaces to 8 bytes as safetensors does."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name]
        b = tensor_bytes(t)
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def save_with_expected(name, obj):
    """torch.save into <name>.bin (archive folder = <name>) plus the expected values."""
    torch.save(obj, os.path.join(OUT, name + ".bin"))
    write_safetensors(os.path.join(OUT, name + ".expected.safetensors"),
                      {k: v for k, v in obj.items()}, {"generator": "tools/make_io_fixtures.py",
                                                       "torch": torch.__version__})


# ---- tiny pickle assembler (protocol 2, the opcodes torch.save emits) -------------------

def p_str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def p_int(v):
    return b"J" + struct.pack("<i", v)


def p_global(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def p_tuple(items):
    return b"(" + b"".join(items) + b"t"


def p_tensor(storage_type, key, numel, offset, size, stride):
    pid = p_tuple([p_str("storage"), p_global("torch", storage_type), p_str(key), p_str("cpu"), p_int(numel)])
    args = p_tuple([pid + b"Q", p_int(offset), p_tuple([p_int(v) for v in size]),
                    p_tuple([p_int(v) for v in stride]), b"\x89",
                    p_global("collections", "OrderedDict") + b")R"])
    return p_global("torch._utils", "_rebuild_tensor_v2") + args + b"R"


def p_state_dict(entries):
    """entries: list of (name, pickled value bytes) -> a plain dict pickle."""
    body = b"".join(p_str(k) + v for k, v in entries)
    return b"\x80\x02}(" + body + b"u."


def write_torch_zip(path, pickle_bytes, storages, folder="archive", extra=None):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr(zipfile.ZipInfo(folder + "/data.pkl", (1980, 1, 1, 0, 0, 0)), pickle_bytes)
        for key, data in storages.items():
            z.writestr(zipfile.ZipInfo(folder + "/data/" + key, (1980, 1, 1, 0, 0, 0)), data)
        z.writestr(zipfile.ZipInfo(folder + "/version", (1980, 1, 1, 0, 0, 0)), b"3\n")
        for name, data in (extra or {}).items():
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)


def make_checkpoints():
    g = torch.Generator().manual_seed(1234)

    # Plain dict, every dtype the loader maps, a 0-d tensor and an empty one.
    plain = {
        "dense.weight": torch.randn(3, 4, generator=g),
        "dense.bias": torch.randn(3, generator=g),
        "half": torch.randn(2, 3, generator=g).half(),
        "bfloat": torch.randn(2, 2, generator=g).bfloat16(),
        "double": torch.randn(3, generator=g).double(),
        "ids": torch.arange(-2, 3, dtype=torch.int64),
        "int32": torch.tensor([-7, 0, 2147483647], dtype=torch.int32),
        "int16": torch.tensor([-300, 300], dtype=torch.int16),
        "int8": torch.tensor([-128, 127], dtype=torch.int8),
        "uint8": torch.tensor([0, 255, 7], dtype=torch.uint8),
        "mask": torch.tensor([True, False, True]),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 4),
    }
    save_with_expected("plain_dict", plain)

    # OrderedDict with _metadata (BUILD), Parameters (_rebuild_parameter), saved to a buffer
    # so the archive folder is torch's default "archive".
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    sd = module.state_dict()
    assert isinstance(sd, collections.OrderedDict)
    sd["params.kept"] = torch.nn.Parameter(torch.randn(2, 2, generator=g))
    buf = io.BytesIO()
    torch.save(sd, buf)
    with open(os.path.join(OUT, "ordered_dict.bin"), "wb") as f:
        f.write(buf.getvalue())
    write_safetensors(os.path.join(OUT, "ordered_dict.expected.safetensors"), dict(sd))

    # Views: one storage shared by several tensors, offsets, transposes, stride 0.
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    views = {
        "base": base,
        "transposed": base.t(),
        "block": base[1:3, 2:5],
        "row": base[2],
        "flat_window": base.view(-1)[5:17].view(3, 4),
        "every_other": base[:, ::2],
        "broadcast": torch.arange(3, dtype=torch.float64).expand(2, 3),
        "half_t": torch.randn(3, 5, generator=g).half().t(),
    }
    save_with_expected("shared_views", views)
    # Same content under an unusual folder name, to prove the folder is not hard-coded.
    with zipfile.ZipFile(os.path.join(OUT, "shared_views.bin")) as src, \
            zipfile.ZipFile(os.path.join(OUT, "odd_folder.bin"), "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            rest = info.filename.split("/", 1)[1]
            dst.writestr(zipfile.ZipInfo("my.export-v2 (1)/" + rest, (1980, 1, 1, 0, 0, 0)), src.read(info))

    # Legacy (pre-1.6) serialization: must be refused with a hint.
    torch.save({"w": torch.ones(2)}, os.path.join(OUT, "legacy.bin"), _use_new_zipfile_serialization=False)


def make_hostile_checkpoints():
    floats = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    # A hand-assembled valid one first: proves the assembler matches what the loader reads.
    ok = p_state_dict([("w", p_tensor("FloatStorage", "0", 4, 1, [2], [2]))])
    write_torch_zip(os.path.join(OUT, "handmade.bin"), ok, {"0": floats}, folder="hand made")
    write_safetensors(os.path.join(OUT, "handmade.expected.safetensors"),
                      {"w": torch.tensor([2.0, 4.0])})

    evil = {
        # The classic: os.system("...") via GLOBAL + REDUCE.
        "evil_os_system.bin": b"\x80\x02" + p_global("os", "system") + p_tuple([p_str("touch /tmp/rc_pwned")]) + b"R.",
        # builtins.eval through STACK_GLOBAL, hidden as a dict value.
        "evil_eval.bin": b"\x80\x02}(" + p_str("w") + b"\x8c\x08builtins\x8c\x04eval\x93"
                         + p_tuple([p_str("__import__('os').system('touch /tmp/rc_pwned')")]) + b"Ru.",
        # A torch-namespaced name that is not on the whitelist.
        "evil_torch_load.bin": b"\x80\x02}(" + p_str("w") + p_global("torch", "load")
                               + p_tuple([p_str("/etc/passwd")]) + b"Ru.",
    }
    for name, pkl in evil.items():
        write_torch_zip(os.path.join(OUT, name), pkl, {})

    bad = {
        # View reads past the end of its 4-element storage.
        "oob_view.bin": (p_state_dict([("w", p_tensor("FloatStorage", "0", 4, 0, [10], [1]))]), {"0": floats}),
        "oob_offset.bin": (p_state_dict([("w", p_tensor("FloatStorage", "0", 4, 4, [1], [1]))]), {"0": floats}),
        "oob_stride.bin": (p_state_dict([("w", p_tensor("FloatStorage", "0", 4, 0, [2, 2], [3, 1]))]),
                           {"0": floats}),
        # The storage member is shorter than the pickle says.
        "short_storage.bin": (p_state_dict([("w", p_tensor("FloatStorage", "0", 4, 0, [4], [1]))]),
                              {"0": floats[:8]}),
        "missing_storage.bin": (p_state_dict([("w", p_tensor("FloatStorage", "0", 4, 0, [4], [1]))]), {}),
        # Stride 0 over a 1-element storage claiming 10^12 elements.
        "stride0_bomb.bin": (p_state_dict([("w", p_tensor("FloatStorage", "0", 1, 0, [1000000, 1000000], [0, 0]))]),
                             {"0": floats[:4]}),
        "complex_storage.bin": (p_state_dict([("w", p_tensor("ComplexFloatStorage", "0", 2, 0, [2], [1]))]),
                                {"0": floats}),
        "not_a_dict.bin": (b"\x80\x02]" + p_tensor("FloatStorage", "0", 4, 0, [4], [1]) + b"a.", {"0": floats}),
        "truncated_pickle.bin": (p_state_dict([("w", p_tensor("FloatStorage", "0", 4, 0, [4], [1]))])[:-7],
                                 {"0": floats}),
    }
    for name, (pkl, storages) in bad.items():
        write_torch_zip(os.path.join(OUT, name), pkl, storages)
    # Two data.pkl: which one is the checkpoint?
    write_torch_zip(os.path.join(OUT, "two_pickles.bin"), ok, {"0": floats},
                    extra={"other/data.pkl": ok})


def make_archives():
    def add(tf, name, data=b"", kind=tarfile.REGTYPE, linkname="", size=None):
        info = tarfile.TarInfo(name)
        info.type, info.linkname, info.mtime, info.mode = kind, linkname, 0, 0o644
        info.size = len(data) if size is None else size
        tf.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

    def tgz(name, fill):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tf:
            add(tf, "ok.txt", b"fine\n")  # a good member first: a failure must remove it too
            fill(tf)
        import gzip
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(gzip.compress(raw.getvalue(), mtime=0))

    tgz("good.tar.gz", lambda tf: (add(tf, "dir/", kind=tarfile.DIRTYPE), add(tf, "dir/a.json", b'{"a": 1}\n'),
                                   add(tf, "b/c/d.bin", bytes(range(256)))))
    tgz("dotdot.tar.gz", lambda tf: add(tf, "sub/../../evil", b"x"))
    tgz("absolute.tar.gz", lambda tf: add(tf, "/tmp/rc_abs_evil", b"x"))
    tgz("symlink.tar.gz", lambda tf: add(tf, "passwd", kind=tarfile.SYMTYPE, linkname="/etc/passwd"))
    tgz("hardlink.tar.gz", lambda tf: add(tf, "passwd", kind=tarfile.LNKTYPE, linkname="/etc/passwd"))
    tgz("device.tar.gz", lambda tf: add(tf, "null", kind=tarfile.CHRTYPE))
    tgz("fifo.tar.gz", lambda tf: add(tf, "pipe", kind=tarfile.FIFOTYPE))
    tgz("duplicate.tar.gz", lambda tf: add(tf, "ok.txt", b"again\n"))
    # 1 MiB of zeros, ~1 KB compressed: the tests extract it with a smaller member limit.
    tgz("bomb.tar.gz", lambda tf: add(tf, "zeros.bin", bytes(1 << 20)))
    with open(os.path.join(OUT, "not_gzip.tar.gz"), "wb") as f:
        f.write(b"this is not an archive\n" * 4)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    make_checkpoints()
    make_hostile_checkpoints()
    make_archives()
    print("wrote", len(os.listdir(OUT)), "files to", os.path.normpath(OUT))
