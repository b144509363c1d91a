#!/usr/bin/env python3
"""Lists the include graph of roberta.cpp by layer and fails on any edge the layering forbids.

Layers (docs/architecture.md): each may include only itself and the layers named for it.
The public headers (include/roberta) belong to the layer that implements them (PUBLIC_LAYER):
"roberta/trainer.h" is an include of train, allowed where train is. They include nothing of src/.
A folder under src/ that is not in the table fails the check, so a new layer is placed on
purpose. tests/ and bench/ are not checked: tests may include internals (STYLE.md 7.3).
Boost.Asio and Beast may be included only by the HTTP transport's files (TRANSPORT_FILES).

Usage: tools/check_layers.py [ROOT] [--graph]   (ROOT defaults to the repository)
       tools/check_layers.py --against-build FILE
Exit 0 when every edge is allowed, 1 otherwise (each bad include printed as file:line).
--against-build compares ALLOWED with the layers each CMake layer target sees, as
tests/layering/CMakeLists.txt writes them ("layer: dep dep ..." per line): the build and
this table are one rule and must not drift apart.
"""
import pathlib
import re
import sys

# layer -> the layers it may include (besides itself and the public API "roberta"): the
# layers its CMake target links, directly or through another (src/CMakeLists.txt), which
# the build enforces too; keep both and docs/architecture.md in step.
ALLOWED = {
    "core": set(),
    "tensor": {"core"},
    "device": {"core"},
    "kernels": {"core", "tensor", "device"},
    "io": {"core", "tensor"},
    "net": {"core"},                           # beside io: the HTTP client, S3, AWS credentials
    "hub": {"core", "tensor", "io", "net"},    # Hugging Face Hub downloads and cache
    "tokenizer": {"core"},
    "model": {"core", "tensor", "device", "kernels", "io", "tokenizer"},
    "dist": {"core", "device"},                 # launch contracts, gloo/NCCL collectives
    "train": {"core", "tensor", "device", "kernels", "io", "tokenizer", "model", "dist"},
    "serve": {"core", "tensor", "device", "kernels", "io", "tokenizer", "model"},
    "cli": {"core", "tensor", "device", "kernels", "io", "tokenizer", "model", "train", "serve", "net", "hub", "dist"},
}
# include/roberta/<file> -> the layer that implements it. The build gives each layer's target
# exactly these (src/CMakeLists.txt, rc_public_<layer>); --against-build compares the two.
PUBLIC_LAYER = {
    "error.h": "core", "log.h": "core", "version.h": "core",
    "runtime.h": "device",
    "tokenizer.h": "tokenizer",
    "classifier.h": "model", "fill_mask.h": "model",
    "trainer.h": "train", "pretrain.h": "train", "benchmark.h": "train",
}
# Boost's Asio and Beast belong to the HTTP transport alone: serve's routes, auth, metrics
# and OpenAPI use serve/http_message.h's plain types, so these files are the only ones in
# src/, cli/ or include/ that may include them (issue 28: Beast compiled in 2 TUs, not 11).
TRANSPORT_ONLY = re.compile(r'^\s*#\s*include\s+[<"](boost/(?:beast|asio)\b[^>"]*)[>"]')
TRANSPORT_FILES = {"src/serve/http_server_impl.h", "src/serve/http_session.cpp", "src/serve/http_server.cpp"}
PUBLIC = "roberta"
PUBLIC_INCLUDE = re.compile(r'^\s*#\s*include\s+"roberta/([A-Za-z0-9_.]+)"')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/')
# "../x.h" would reach another layer's folder past the include roots the build gives each
# layer (src/CMakeLists.txt), so it is refused outright.
PARENT = re.compile(r'^\s*#\s*include\s+"\.\./')
SOURCES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".inc"}


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
            yield PUBLIC + "/" + f.name, f


def against_build(path):
    bad = []
    seen = set()
    seen_public = set()
    for line in pathlib.Path(path).read_text().splitlines():
        if not line.strip():
            continue
        layer, _, deps = line.partition(":")
        layer = layer.strip()
        if layer.startswith(PUBLIC + "/"):  # "roberta/trainer.h: train": the layer whose root holds it
            name, owner = layer[len(PUBLIC) + 1:], deps.strip()
            seen_public.add(name)
            if PUBLIC_LAYER.get(name) != owner:
                bad.append(f"include/{layer}: the build gives it to {owner or 'no layer'}, the table to "
                           f"{PUBLIC_LAYER.get(name) or 'no layer'}")
            continue
        seen.add(layer)
        sees = set(deps.split())
        if layer not in ALLOWED:
            bad.append(f"the build has a layer '{layer}' that tools/check_layers.py does not know")
            continue
        if sees != ALLOWED[layer]:
            more, fewer = sorted(sees - ALLOWED[layer]), sorted(ALLOWED[layer] - sees)
            bad.append(f"{layer}: the build lets it include {' '.join(sorted(sees)) or 'nothing'}, the table says "
                       f"{' '.join(sorted(ALLOWED[layer])) or 'nothing'}"
                       + (f" (build only: {' '.join(more)})" if more else "")
                       + (f" (table only: {' '.join(fewer)})" if fewer else ""))
    for layer in sorted(set(ALLOWED) - seen - {"cli"}):
        bad.append(f"the table has a layer '{layer}' that the build does not")
    for name in sorted(set(PUBLIC_LAYER) - seen_public):
        bad.append(f"the table has a public header '{name}' that the build does not")
    for b in bad:
        print("check_layers: " + b, file=sys.stderr)
    if bad:
        print("check_layers: fix src/CMakeLists.txt (the links) or ALLOWED here, and docs/architecture.md",
              file=sys.stderr)
        return 1
    print(f"check_layers: the table matches the build ({len(seen)} layers)")
    return 0


def main(argv):
    if "--against-build" in argv:
        return against_build(argv[argv.index("--against-build") + 1])
    args = [a for a in argv[1:] if not a.startswith("--")]
    root = pathlib.Path(args[0] if args else pathlib.Path(__file__).resolve().parent.parent)
    graph = {}
    bad = []
    for layer, f in layer_files(root):
        if layer.startswith("?"):
            bad.append(f"{f.relative_to(root)}: src/{layer[1:]} is not a known layer; add it to "
                       "tools/check_layers.py and docs/architecture.md")
            continue
        public_header = layer.startswith(PUBLIC + "/")
        if public_header:
            name = layer[len(PUBLIC) + 1:]
            if name not in PUBLIC_LAYER:
                bad.append(f"{f.relative_to(root)}: no layer owns this public header; add it to PUBLIC_LAYER in "
                           "tools/check_layers.py and rc_public_<layer> in src/CMakeLists.txt")
                continue
            layer = PUBLIC_LAYER[name]  # a public header may include what its layer may
        rel = f.relative_to(root).as_posix()
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            transport = TRANSPORT_ONLY.match(line)
            if transport and rel not in TRANSPORT_FILES:
                bad.append(f"{rel}:{n}: includes <{transport.group(1)}>, which only the HTTP transport "
                           f"({', '.join(sorted(TRANSPORT_FILES))}) may; use serve/http_message.h's types")
                continue
            if PARENT.match(line):
                bad.append(f"{f.relative_to(root)}:{n}: {layer} includes a parent folder ({line.strip()}); "
                           "spell it \"layer/file.h\"")
                continue
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            pm = PUBLIC_INCLUDE.match(line)
            if pm:  # roberta/<file>: an include of the layer that owns it
                if pm.group(1) not in PUBLIC_LAYER:
                    bad.append(f"{f.relative_to(root)}:{n}: includes {line.strip()}, which no layer owns")
                    continue
                target = PUBLIC_LAYER[pm.group(1)]
            elif public_header:
                bad.append(f"{f.relative_to(root)}:{n}: roberta includes {target}, a public header includes nothing "
                           f"of src/ ({line.strip()})")
                continue
            graph.setdefault(layer, set()).add(target)
            if target == layer:
                continue
            if target not in ALLOWED.get(layer, set()):
                what = f"{layer} includes {target}" if not pm else f"{layer} includes {target}'s public header"
                bad.append(f"{f.relative_to(root)}:{n}: {what} ({line.strip()})")
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
