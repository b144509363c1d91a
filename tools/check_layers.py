#!/usr/bin/env python3
"""Lists the include graph of roberta.cpp by layer and fails on any edge the layering forbids.

Layers (docs/architecture.md): each may include only itself and the layers named for it.
The public headers (include/roberta) may be included from anywhere and include nothing of src/.
A folder under src/ that is not in the table fails the check, so a new layer is placed on
purpose. tests/ and bench/ are not checked: tests may include internals (STYLE.md 7.3).

Usage: tools/check_layers.py [ROOT] [--graph]   (ROOT defaults to the repository)
Exit 0 when every edge is allowed, 1 otherwise (each bad include printed as file:line).
"""
import pathlib
import re
import sys

# layer -> the layers it may include (besides itself and the public API "roberta").
ALLOWED = {
    "core": set(),
    "tensor": {"core"},
    "device": {"core", "tensor"},
    "kernels": {"core", "tensor", "device"},
    "io": {"core", "tensor"},
    "net": {"core"},                           # beside io: the HTTP client, S3, AWS credentials
    "hub": {"core", "tensor", "io", "net"},    # Hugging Face Hub downloads and cache
    "tokenizer": {"core", "io"},
    "model": {"core", "tensor", "device", "kernels", "io", "tokenizer"},
    "dist": {"core", "tensor", "device"},       # launch contracts, gloo/NCCL collectives
    "train": {"core", "tensor", "device", "kernels", "io", "tokenizer", "model", "dist"},
    "serve": {"core", "tensor", "device", "kernels", "io", "tokenizer", "model"},
    "cli": {"core", "tensor", "device", "kernels", "io", "tokenizer", "model", "train", "serve", "net", "hub", "dist"},
}
PUBLIC = "roberta"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/')
# "../x.h" would reach another layer's folder past the include roots the build gives each
# layer (src/CMakeLists.txt), so it is refused outright.
PARENT = re.compile(r'^\s*#\s*include\s+"\.\./')
SOURCES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"}


def layer_files(root):
    """(layer, path) for every source file of a layer; layer None for an unknown src/ folder."""
    src = root / "src"
    if src.is_dir():
        for folder in sorted(p for p in src.iterdir() if p.is_dir()):
            name = folder.name if folder.name in ALLOWED else None
            for f in sorted(folder.rglob("*")):
                if f.suffix in SOURCES:
                    yield (name or "?" + folder.name), f
    for f in sorted((root / "cli").rglob("*")) if (root / "cli").is_dir() else []:
        if f.suffix in SOURCES:
            yield "cli", f
    for f in sorted((root / "include" / PUBLIC).rglob("*")) if (root / "include" / PUBLIC).is_dir() else []:
        if f.suffix in SOURCES:
            yield PUBLIC, f


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    root = pathlib.Path(args[0] if args else pathlib.Path(__file__).resolve().parent.parent)
    graph = {}
    bad = []
    for layer, f in layer_files(root):
        if layer.startswith("?"):
            bad.append(f"{f.relative_to(root)}: src/{layer[1:]} is not a known layer; add it to "
                       "tools/check_layers.py and docs/architecture.md")
            continue
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if PARENT.match(line):
                bad.append(f"{f.relative_to(root)}:{n}: {layer} includes a parent folder ({line.strip()}); "
                           "spell it \"layer/file.h\"")
                continue
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            graph.setdefault(layer, set()).add(target)
            if target == layer or target == PUBLIC:
                continue
            allowed = set() if layer == PUBLIC else ALLOWED.get(layer, set())
            if target not in allowed:
                bad.append(f"{f.relative_to(root)}:{n}: {layer} includes {target} ({line.strip()})")
    if "--graph" in argv:
        for layer in sorted(graph):
            print(f"{layer:10s} -> {' '.join(sorted(graph[layer] - {layer}))}")
    for b in bad:
        print("check_layers: " + b, file=sys.stderr)
    if bad:
        print(f"check_layers: {len(bad)} forbidden include(s); the allowed edges are in tools/check_layers.py",
              file=sys.stderr)
        return 1
    print(f"check_layers: ok ({sum(len(v - {k}) for k, v in graph.items())} layer edges, none upward)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
