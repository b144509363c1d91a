"""Self-checks of the reference model (tools/roberta_ref.py) and the pure-Python file I/O.

Run: /usr/bin/python3 -m unittest discover -s tools -p 'test_*.py' -v
(Debian's Python, which has torch 1.13; a few seconds on one core.)
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_io  # noqa: E402
import roberta_ref as rr  # noqa: E402
from torch.nn.utils import stateless  # noqa: E402

torch.set_num_threads(1)


def micro_config(**kw):
    d = dict(vocab_size=20, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=12,
             max_position_embeddings=16, type_vocab_size=1, layer_norm_eps=1e-5,
             id2label={"0": "a", "1": "b", "2": "c"})
    d.update(kw)
    return rr.RobertaConfig(**d)


def randomize(model, std=0.3, seed=0):
    """Larger-than-HF values so that every parameter visibly matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * std + (1.0 if name.endswith("LayerNorm.weight") else 0.0))
        model.roberta.embeddings.word_embeddings.weight[1].zero_()
        model.roberta.embeddings.position_embeddings.weight[1].zero_()
    return model


class PositionIds(unittest.TestCase):
    def test_padded_row(self):
        ids = torch.tensor([[0, 5, 6, 2, 1, 1], [0, 7, 8, 9, 10, 2]])
        pos = rr.create_position_ids_from_input_ids(ids, 1)
        self.assertEqual(pos.tolist(), [[2, 3, 4, 5, 1, 1], [2, 3, 4, 5, 6, 7]])


class Config(unittest.TestCase):
    def test_defaults_are_transformers(self):
        c = rr.RobertaConfig()
        self.assertEqual((c.vocab_size, c.hidden_size, c.num_hidden_layers, c.num_attention_heads,
                          c.intermediate_size, c.max_position_embeddings, c.type_vocab_size),
                         (50265, 768, 12, 12, 3072, 512, 2))
        self.assertEqual((c.layer_norm_eps, c.pad_token_id, c.bos_token_id, c.eos_token_id), (1e-12, 1, 0, 2))
        self.assertEqual(c.num_labels, 2)
        self.assertIsNone(c.classifier_dropout)

    def test_id2label_string_keys(self):
        c = rr.RobertaConfig.from_dict({"model_type": "roberta", "id2label": {"0": "neg", "1": "pos", "2": "x"}})
        self.assertEqual(c.num_labels, 3)
        self.assertEqual(c.id2label[2], "x")
        self.assertEqual(c.to_dict()["id2label"], {"0": "neg", "1": "pos", "2": "x"})

    def test_rejects_other_model_type(self):
        with self.assertRaises(ValueError):
            rr.RobertaConfig.from_dict({"model_type": "bert"})


class Keys(unittest.TestCase):
    def test_state_dict_keys_match_hf(self):
        m = rr.RobertaForSequenceClassification(micro_config(num_hidden_layers=1))
        keys = list(m.state_dict().keys())
        want = ["roberta.embeddings.word_embeddings.weight", "roberta.embeddings.position_embeddings.weight",
                "roberta.embeddings.token_type_embeddings.weight", "roberta.embeddings.LayerNorm.weight",
                "roberta.embeddings.LayerNorm.bias"]
        p = "roberta.encoder.layer.0."
        for n in ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                  "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"]:
            want += [p + n + ".weight", p + n + ".bias"]
        want += ["classifier.dense.weight", "classifier.dense.bias", "classifier.out_proj.weight",
                 "classifier.out_proj.bias"]
        self.assertEqual(keys, want)

    def test_hf_init(self):
        torch.manual_seed(0)
        m = rr.RobertaForSequenceClassification(rr.RobertaConfig(vocab_size=1000, hidden_size=64,
                                                                 num_hidden_layers=1, num_attention_heads=4,
                                                                 intermediate_size=128))
        w = m.roberta.encoder.layer[0].intermediate.dense.weight
        self.assertAlmostEqual(w.std().item(), 0.02, delta=0.002)  # 8192 samples: std error ~1.6e-4
        self.assertEqual(m.roberta.encoder.layer[0].intermediate.dense.bias.abs().max().item(), 0.0)
        self.assertEqual(m.roberta.embeddings.word_embeddings.weight[1].abs().max().item(), 0.0)
        self.assertEqual(m.roberta.embeddings.position_embeddings.weight[1].abs().max().item(), 0.0)
        self.assertEqual(m.roberta.embeddings.LayerNorm.weight.min().item(), 1.0)


class Forward(unittest.TestCase):
    def test_padded_batch_equals_alone(self):
        torch.manual_seed(1)
        m = randomize(rr.RobertaForSequenceClassification(micro_config())).eval()
        seqs = [[0, 5, 6, 2], [0, 7, 8, 9, 10, 11, 2], [0, 2]]
        T = max(map(len, seqs))
        ids = torch.tensor([s + [1] * (T - len(s)) for s in seqs])
        mask = torch.tensor([[1] * len(s) + [0] * (T - len(s)) for s in seqs])
        with torch.no_grad():
            batch = m(ids, mask)[1]
            alone = torch.cat([m(torch.tensor([s]))[1] for s in seqs])
        # measured max |diff| ~1e-7 (fp32 summation order only)
        self.assertLess((batch - alone).abs().max().item(), 1e-5)
        # and the padding really is ignored: a different pad VALUE in a masked slot changes nothing
        ids2 = ids.clone()
        ids2[0, -1] = 13
        with torch.no_grad():
            b2 = m(ids2, mask)[1]
        self.assertLess((b2 - batch).abs().max().item(), 1e-5)
        self.assertGreater(batch.std().item(), 0.1)  # logits are not degenerate

    def test_mask_uses_finite_min(self):
        m = rr.RobertaForSequenceClassification(micro_config())
        ext = m.roberta.get_extended_attention_mask(torch.tensor([[1, 0]]))
        self.assertEqual(ext[0, 0, 0, 1].item(), torch.finfo(torch.float32).min)
        self.assertEqual(ext[0, 0, 0, 0].item(), 0.0)

    def test_classifier_dropout_fallback(self):
        m = rr.RobertaForSequenceClassification(micro_config(hidden_dropout_prob=0.25))
        self.assertEqual(m.classifier.dropout.p, 0.25)
        m = rr.RobertaForSequenceClassification(micro_config(classifier_dropout=0.5))
        self.assertEqual(m.classifier.dropout.p, 0.5)


class GradCheck(unittest.TestCase):
    def test_gradcheck_all_params_float64(self):
        torch.manual_seed(2)
        m = randomize(rr.RobertaForSequenceClassification(micro_config(num_hidden_layers=1)))
        m = rr.no_dropout(m).double().train()
        names = [n for n, _ in m.named_parameters()]
        params = tuple(p.detach().clone().requires_grad_(True) for p in m.parameters())
        ids = torch.tensor([[0, 5, 6, 7, 2], [0, 9, 2, 1, 1]])
        mask = (ids != 1).long()
        labels = torch.tensor([2, 0])

        def f(*ps):
            return stateless.functional_call(m, dict(zip(names, ps)), (ids, mask), {"labels": labels})[0]

        self.assertTrue(torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-6, rtol=1e-4))


class SafetensorsIO(unittest.TestCase):
    def test_roundtrip_and_layout(self):
        t = {"b": torch.arange(6, dtype=torch.int64).reshape(2, 3), "a": torch.randn(3),
             "c": torch.randn(2, 2).to(torch.bfloat16)}
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.safetensors")
            hf_io.write_safetensors(p, t, {"k": "v"})
            back, meta = hf_io.read_safetensors(p)
            with open(p, "rb") as f:
                raw = f.read()
        self.assertEqual(meta, {"k": "v"})
        for k in t:
            self.assertTrue(torch.equal(back[k], t[k]), k)
        hlen = int.from_bytes(raw[:8], "little")
        self.assertEqual(hlen % 8, 0)
        header = json.loads(raw[8:8 + hlen])
        self.assertEqual(header["a"]["data_offsets"], [0, 12])  # sorted by name: a, b, c
        self.assertEqual(header["b"]["dtype"], "I64")


TINY = os.path.join(hf_io.REPO_ROOT, "tests", "data", "tiny")


class GoldenFixture(unittest.TestCase):
    """The committed fixture still agrees with the reference and with its README."""

    @classmethod
    def setUpClass(cls):
        cls.g, cls.meta = hf_io.read_safetensors(os.path.join(TINY, "golden.safetensors"))
        cls.model, cls.config = rr.load_pretrained(TINY)

    def test_logits_recomputed(self):
        g = self.g
        with torch.no_grad():
            logits = self.model(g["input_ids"], g["attention_mask"])[1]
            text_logits = self.model(g["text_ids"], g["text_attention_mask"])[1]
        # same machine kind, same thread count: measured 0.0; other CPUs may differ by ulps
        self.assertLess((logits - g["logits"]).abs().max().item(), 1e-5)
        self.assertLess((text_logits - g["text_logits"]).abs().max().item(), 1e-5)
        self.assertLess((g["logits_alone"] - g["logits"]).abs().max().item(), 1e-5)

    def test_loss_and_grads_recomputed(self):
        g = self.g
        m = rr.no_dropout(rr.clone_model(self.model)).train()
        loss, _ = m(g["input_ids"], g["attention_mask"], labels=g["labels"])
        loss.backward()
        self.assertLess(abs(loss.item() - g["loss"].item()), 1e-5)
        for n, p in m.named_parameters():
            ref = g["grad." + n]
            self.assertEqual(tuple(ref.shape), tuple(p.shape), n)
            # measured 0.0 here; 1e-5 relative to the largest entry allows other BLAS orders
            self.assertLess((p.grad - ref).abs().max().item(), 1e-5 * max(1.0, ref.abs().max().item()), n)

    def test_bin_equals_safetensors_and_has_position_ids(self):
        bin_sd = torch.load(os.path.join(TINY, "pytorch_model.bin"))
        st, meta = hf_io.read_safetensors(os.path.join(TINY, "model.safetensors"))
        self.assertEqual(meta, {"format": "pt"})
        self.assertEqual(set(bin_sd) - set(st), {"roberta.embeddings.position_ids"})
        self.assertEqual(bin_sd["roberta.embeddings.position_ids"].tolist(), [list(range(130))])
        for k, v in st.items():
            self.assertTrue(torch.equal(v, bin_sd[k]), k)

    def test_text_ids_and_metadata(self):
        texts = json.loads(self.meta["texts"])
        self.assertIn("Covid cases are increasing fast!", texts)
        self.assertEqual(self.g["text_ids"].shape[0], len(texts))
        lens = self.g["text_attention_mask"].sum(1)
        self.assertEqual(lens.max().item(), self.config.max_position_embeddings - 2)  # truncated text
        for i, n in enumerate(lens.tolist()):
            self.assertEqual(self.g["text_ids"][i, 0].item(), 0)
            self.assertEqual(self.g["text_ids"][i, n - 1].item(), 2)
        self.assertEqual(self.meta["fixture_version"], "1")

    def test_every_name_documented(self):
        with open(os.path.join(hf_io.REPO_ROOT, "tests", "data", "README.md"), encoding="utf-8") as f:
            readme = f.read()
        for name in self.g:
            doc = name
            if name.startswith("grad."):
                doc = "grad.<hf_name>"
            elif name.startswith("train_final."):
                doc = "train_final.<hf_name>"
            elif name.startswith("train.") and name.count(".") == 2:
                doc = "train.<s>." + name.split(".")[2]
            self.assertIn("`" + doc + "`", readme, name)


if __name__ == "__main__":
    unittest.main()
