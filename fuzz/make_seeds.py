#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/corpus/<target>/) and dictionaries
(fuzz/dict/<target>.dict) from the test fixtures in tests/data. Standard library only;
the output is committed, and this script re-creates it byte for byte:

    python3 fuzz/make_seeds.py
"""
import gzip
import io
import json
import os
import shutil
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CORPUS = ROOT / "fuzz" / "corpus"
DICTS = ROOT / "fuzz" / "dict"
SEP = b"\n==rc-fuzz-file==\n"  # fuzz_util.h kFileSeparator


def put(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def safetensors(tensors, metadata=None):
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return len(text).to_bytes(8, "little") + text + b"".join(blobs)


def seeds_safetensors():
    for f in sorted((DATA / "io").glob("*.safetensors")):
        put("fuzz_safetensors", f.name, f.read_bytes())
    put("fuzz_safetensors", "empty_header", safetensors([]))
    put("fuzz_safetensors", "metadata", safetensors([("w", "F32", [2], bytes(8))], {"format": "pt"}))
    put("fuzz_safetensors", "dtypes", safetensors([
        ("a", "F16", [2, 1], bytes(4)), ("b", "BF16", [1], bytes(2)), ("c", "F64", [1], bytes(8)),
        ("d", "I64", [], bytes(8)), ("e", "U8", [0, 3], b""), ("f", "BOOL", [2], b"\x00\x01"),
        ("g", "I8", [1], b"\x7f"), ("h", "I32", [1], bytes(4)), ("i", "I16", [1], bytes(2))]))


def seeds_pickle_and_zip():
    for f in sorted((DATA / "io").glob("*.bin")):
        if f.stat().st_size > 8192:
            continue
        put("fuzz_pytorch_bin", f.name, f.read_bytes())
        try:
            with zipfile.ZipFile(f) as z:
                for n in z.namelist():
                    if n.endswith("/data.pkl"):
                        put("fuzz_pickle", f.stem + ".pkl", z.read(n))
        except zipfile.BadZipFile:
            pass


def tar_bytes(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                t.addfile(info)
            elif kind == "file":
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            elif kind == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = data.decode()
                t.addfile(info)
    return buf.getvalue()


def seeds_tar():
    # Byte 0: even = the harness gzips the rest, odd = the rest as is (fuzz_tar.cpp).
    for f in sorted((DATA / "io").glob("*.tar.gz")):
        raw = f.read_bytes()
        put("fuzz_tar", f.name, b"\x01" + raw)
        try:
            plain = gzip.decompress(raw)
            if len(plain) <= 65536:  # the bomb stays compressed only
                put("fuzz_tar", f.stem + ".plain", b"\x00" + plain)
        except OSError:
            pass
    put("fuzz_tar", "nested.plain", b"\x00" + tar_bytes([
        ("./", "dir", b""), ("code/", "dir", b""), ("code/serving.json", "file", b'{"format_version": 1}'),
        ("config.json", "file", b"{}"), ("a//b/./c.txt", "file", b"x" * 100)]))
    put("fuzz_tar", "long_name.plain", b"\x00" + tar_bytes([("d/" + "n" * 200, "file", b"long")]))
    put("fuzz_tar", "symlink.plain", b"\x00" + tar_bytes([("link", "symlink", b"../../etc/passwd")]))


def seeds_config():
    cfg = (DATA / "tiny" / "config.json").read_bytes()
    put("fuzz_config", "tiny_config.json", cfg)
    put("fuzz_config", "minimal.json", b'{"model_type": "roberta"}')
    put("fuzz_config", "num_labels.json", b'{"num_labels": 5, "classifier_dropout": 0.2, "layer_norm_eps": 1e-05}')
    put("fuzz_config", "serving.json", json.dumps({
        "format_version": 1, "name": "sentiment", "version": "2", "max_length": 128, "max_batch_size": 32,
        "max_batch_delay_ms": 5, "labels": ["negative", "neutral", "positive"], "precision": "bf16"}, indent=2))


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


def small_tokenizer(n_merges=120):
    """RoBERTa's specials, the 256 byte tokens and the first merges of roberta-base whose
    parts are already in the vocabulary: a real tokenizer, 1/100 of the size."""
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for ch in bytes_to_unicode():
        vocab[ch] = len(vocab)
    merges = []
    for line in (DATA / "tiny" / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]:
        a, b = line.split(" ")
        if a in vocab and b in vocab and a + b not in vocab:
            merges.append(line)
            vocab[a + b] = len(vocab)
            if len(merges) == n_merges:
                break
    vocab["<mask>"] = len(vocab)
    return vocab, merges


def seeds_tokenizers():
    vocab, merges = small_tokenizer()
    vocab_json = json.dumps(vocab, ensure_ascii=False).encode()
    merges_txt = ("#version: 0.2\n" + "\n".join(merges) + "\n").encode()
    config = json.dumps({"model_max_length": 512, "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                         "pad_token": "<pad>", "mask_token": {"content": "<mask>", "lstrip": True, "rstrip": False,
                                                              "normalized": False, "single_word": False,
                                                              "__type": "AddedToken"},
                         "add_prefix_space": False}).encode()
    specials = json.dumps({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
                           "mask_token": "<mask>", "additional_special_tokens": ["<extra>"]}).encode()
    put("fuzz_vocab_merges", "two_files", vocab_json + SEP + merges_txt)
    put("fuzz_vocab_merges", "four_files", vocab_json + SEP + merges_txt + SEP + config + SEP + specials)
    put("fuzz_vocab_merges", "tiny", b'{"a": 0, "b": 1, "ab": 2, "<s>": 3, "</s>": 4}' + SEP + b"a b\n")

    full = json.loads((Path("/work/shared/data/roberta-base-tokenizer/tokenizer.json")).read_text()
                      if Path("/work/shared/data/roberta-base-tokenizer/tokenizer.json").exists() else "{}")
    added = [{"id": vocab[t], "special": True, "content": t, "single_word": False, "lstrip": t == "<mask>",
              "rstrip": False, "normalized": t != "<mask>"} for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")]
    tj = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
          "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                             "trim_offsets": True, "add_prefix_space": False},
          "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True},
          "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                    "end_of_word_suffix": "", "fuse_unk": False, "vocab": vocab, "merges": merges}}
    del full
    put("fuzz_tokenizer_json", "roberta_small.json", json.dumps(tj, ensure_ascii=False))
    tj2 = json.loads(json.dumps(tj))
    tj2["model"]["merges"] = [m.split(" ") for m in merges[:40]]
    tj2["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel", "add_prefix_space": True}]}
    tj2["post_processor"] = {"type": "TemplateProcessing",
                             "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                        {"Sequence": {"id": "A", "type_id": 0}},
                                        {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                             "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                                                "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}
    tj2["padding"] = {"pad_id": 1, "pad_token": "<pad>"}
    put("fuzz_tokenizer_json", "pairs_template.json", json.dumps(tj2, ensure_ascii=False))


def seeds_tokenize():
    lines = (DATA / "tokenizer" / "roberta-base.jsonl").read_text(encoding="utf-8").splitlines()
    step = max(1, len(lines) // 40)
    for i, line in enumerate(lines[::step][:40]):
        text = json.loads(line)["text"].encode()
        put("fuzz_tokenize", f"tweet{i:02d}", bytes([0 if i % 2 else 140]) + text)
    for i, raw in enumerate([b"\xff\xfe broken \xc0\xaf \xed\xa0\x80 \xe2\x82", b"a <mask> b<s></s><pad>",
                             "caf\u00e9 \U0001F600 \u0301\u200b".encode(), b"   \t\n\r\n  x  ", b"1234567890 ''s 've"]):
        put("fuzz_tokenize", f"edge{i}", bytes([130]) + raw)


def seeds_multipart():
    # First line: the Content-Type header value; the rest: the body (fuzz_multipart.cpp).
    curl_type = b"multipart/form-data; boundary=------------------------d74496d66958873e"
    curl = (b"--------------------------d74496d66958873e\r\n"
            b'Content-Disposition: form-data; name="data"; filename="t.txt"\r\nContent-Type: text/plain\r\n\r\n'
            b"Covid cases are increasing fast!\r\n--------------------------d74496d66958873e--\r\n")
    put("fuzz_multipart", "curl", curl_type + b"\n" + curl)
    requests_body = (b'--8f1e2b\r\nContent-Disposition: form-data; name="other"\r\n\r\nignored\r\n'
                     b'--8f1e2b\r\nContent-Disposition: form-data; name="data"; filename="data"\r\n'
                     b'Content-Type: application/json\r\n\r\n{"inputs": ["a", "b"], "top_k": 2}\r\n--8f1e2b--\r\n')
    put("fuzz_multipart", "requests_json", b"multipart/form-data; boundary=8f1e2b\n" + requests_body)
    put("fuzz_multipart", "quoted_lf", b'multipart/form-data; charset=utf-8; boundary="a b;c"\n'
        b'preamble\n--a b;c\ncontent-disposition: form-data; name="body"\n\nline\n--a b;c\r\n'
        b'Content-Disposition: form-data; name="e"\r\n\r\n\r\n--a b;c--')


def seeds_request_bodies():
    # Byte 0: parser (0 invocation, 1 tei, 2 csv, 3 accept, 4 multipart, 5 hf_endpoint); byte 1: content type index
    # (0 json, 1 csv, 2 plain, 3 none) -- fuzz_request_bodies.cpp's tables.
    bodies = [
        (0, 0, b'{"inputs": "hello"}'),
        (0, 0, b'{"inputs": ["a", "b"], "parameters": {"return_all_scores": true}}'),
        (0, 3, b'["x","y","z"]'),
        (0, 0, b'{"inputs": "t", "top_k": null, "raw_scores": true, "truncate": false}'),
        (0, 0, b'{"text_inputs": ["a"], "parameters": {"top_k": 2}}'),
        (0, 2, b"one text, with a comma"),
        (0, 1, b'first\n"second, quoted"\n"with ""quotes"""\r\nlast'),
        (1, 0, b'{"inputs": ["a", "b"], "raw_scores": true, "truncate": true, "add_special_tokens": false}'),
        (1, 0, b'{"inputs": [["a"], ["b", "c"]]}'),
        (2, 1, b'a\n"b,c"\n'),
        (3, 0, b"text/csv;q=0.9, application/json, */*"),
    ]
    curl = (b'--xyz\r\nContent-Disposition: form-data; name="data"; filename="t.txt"\r\n'
            b'Content-Type: text/plain\r\n\r\nCovid cases are increasing fast!\r\n--xyz--\r\n')
    bodies += [(0, 7, curl), (4, 7, curl)]  # 7: multipart/form-data; boundary=xyz
    bodies += [  # 5: Hugging Face Inference Endpoints' POST / (@huggingface/inference's body)
        (5, 0, b'{"inputs": "I love it", "parameters": {"top_k": 2, "function_to_apply": "SIGMOID"}}'),
        (5, 0, b'{"inputs": {"text": "a", "text_pair": "b"}, "parameters": {"top_k": null, "truncation": true}}'),
    ]
    for i, (p, ct, body) in enumerate(bodies):
        put("fuzz_request_bodies", f"body{i:02d}", bytes([p, ct]) + body)


JSON_DICT = ['"{"', '"}"', '"["', '"]"', '":"', '","', '"\\""', '"true"', '"false"', '"null"', '"-1"', '"0"',
             '"1e308"', '"1e-400"', '"-0"', '"1.5"', '"18446744073709551616"', '"9223372036854775807"',
             '"-9223372036854775809"', '"\\\\u0000"', '"\\\\ud800"', '"\\xef\\xbb\\xbf"']


def write_dict(target, words):
    DICTS.mkdir(parents=True, exist_ok=True)
    lines = []
    for w in words:  # libFuzzer's format: "..." with \\, \" and \xNN escapes only
        if not w.startswith('"'):
            w = '"' + "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\x{b:02x}"
                              for b in w.encode()) + '"'
        lines.append(w)
    (DICTS / f"{target}.dict").write_text("\n".join(lines) + "\n")


def dicts():
    config_keys = ["model_type", "roberta", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                   "intermediate_size", "max_position_embeddings", "type_vocab_size", "hidden_act", "gelu",
                   "hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout", "layer_norm_eps",
                   "initializer_range", "pad_token_id", "bos_token_id", "eos_token_id", "architectures",
                   "problem_type", "id2label", "label2id", "num_labels", "format_version", "name", "version",
                   "max_length", "max_batch_size", "max_batch_delay_ms", "labels", "precision"]
    write_dict("fuzz_config", JSON_DICT + config_keys)
    write_dict("fuzz_safetensors", JSON_DICT + ["__metadata__", "dtype", "shape", "data_offsets", "F32", "F16",
                                                "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL", "U64",
                                                "F8_E4M3", "C64"])
    tok_keys = ["model", "vocab", "merges", "added_tokens", "pre_tokenizer", "post_processor", "ByteLevel",
                "Sequence", "pretokenizers", "RobertaProcessing", "BertProcessing", "TemplateProcessing",
                "SpecialToken", "special_tokens", "ids", "single", "sep", "cls", "processors", "padding", "pad_id",
                "normalizer", "content", "special", "lstrip", "rstrip", "single_word", "normalized", "id",
                "add_prefix_space", "type", "BPE", "<s>", "</s>", "<pad>", "<unk>", "<mask>", "\u0120", "\u0120t"]
    write_dict("fuzz_tokenizer_json", JSON_DICT + tok_keys)
    write_dict("fuzz_vocab_merges", JSON_DICT + tok_keys + [SEP.decode(), "#version: 0.2\n", "bos_token",
                                                            "eos_token", "unk_token", "pad_token", "mask_token",
                                                            "additional_special_tokens", "__type", "AddedToken"])
    write_dict("fuzz_request_bodies", JSON_DICT + ["inputs", "text_inputs", "parameters", "return_all_scores",
                                                   "raw_scores", "truncate", "truncation_direction",
                                                   "add_special_tokens", "top_k", "function_to_apply", "sigmoid", "softmax",
                                                   "none", "truncation", "targets", "\r\n", '"\\"\\""', "application/json",
                                                   "text/csv", "*/*", ";q=0.5"])
    write_dict("fuzz_multipart", ["multipart/form-data", "boundary=", '"\\x0d\\x0a--"', '"--"', "Content-Disposition",
                                  "form-data", "name=", "filename=", "Content-Type", "text/plain", "application/json",
                                  "application/octet-stream", "data", "body", '"\\""', '";"'])
    # Pickle opcodes torch emits and the names the whitelist knows.
    write_dict("fuzz_pickle", ['"\\x80\\x02"', '"\\x95"', '"."', '"("', '"}"', '"]"', '")"', '"N"', '"\\x88"',
                               '"\\x89"', '"J"', '"K"', '"M"', '"\\x8a"', '"G"', '"X"', '"\\x8c"', '"\\x8d"', '"B"',
                               '"C"', '"t"', '"\\x85"', '"\\x86"', '"\\x87"', '"q"', '"r"', '"\\x94"', '"h"', '"j"',
                               '"s"', '"u"', '"a"', '"e"', '"c"', '"\\x93"', '"R"', '"b"', '"Q"',
                               "collections\nOrderedDict\n", "torch._utils\n_rebuild_tensor_v2\n",
                               "torch._utils\n_rebuild_parameter\n", "torch\nFloatStorage\n", "torch\nHalfStorage\n",
                               "torch\nBFloat16Storage\n", "torch\nLongStorage\n", "storage", "cpu",
                               "_rebuild_parameter_with_state", "os\nsystem\n"])
    write_dict("fuzz_pytorch_bin", ['"PK\\x03\\x04"', '"PK\\x01\\x02"', '"PK\\x05\\x06"', "data.pkl", "/data/",
                                    "byteorder", "little", "version", "archive/"])
    write_dict("fuzz_tar", ['"ustar\\x00"', '"ustar  \\x00"', '"././@LongLink"', "path=", "linkpath=", "size=",
                            "../", "./", "/etc/passwd", "code/serving.json", '"\\x1f\\x8b\\x08"'])


def main():
    shutil.rmtree(CORPUS, ignore_errors=True)
    shutil.rmtree(DICTS, ignore_errors=True)
    seeds_safetensors()
    seeds_pickle_and_zip()
    seeds_tar()
    seeds_config()
    seeds_tokenizers()
    seeds_tokenize()
    seeds_request_bodies()
    seeds_multipart()
    dicts()
    total = sum(f.stat().st_size for f in CORPUS.rglob("*") if f.is_file())
    count = sum(1 for f in CORPUS.rglob("*") if f.is_file())
    print(f"make_seeds: {count} seeds, {total} bytes in {CORPUS.relative_to(ROOT)}; dictionaries in "
          f"{DICTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
