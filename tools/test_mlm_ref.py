"""Self-checks of the reference's RobertaForMaskedLM (tools/roberta_ref.py): the loss is the
mean cross-entropy over the labelled positions only, the decoder is tied (one tensor, one
gradient that sums the lookup's and the decoder's parts), gradcheck in float64, and the
saved names are what transformers' safetensors save of RobertaForMaskedLM holds.

    /usr/bin/python3 -m unittest tools/test_mlm_ref.py
"""
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roberta_ref as rr  # noqa: E402


def tiny(vocab=40):
    c = rr.RobertaConfig.from_dict(dict(hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=16, vocab_size=vocab, max_position_embeddings=20,
                                        type_vocab_size=1, layer_norm_eps=1e-5, architectures=["RobertaForMaskedLM"]))
    torch.manual_seed(0)
    return rr.no_dropout(rr.RobertaForMaskedLM(c)).train()


class MaskedLmReference(unittest.TestCase):
    def setUp(self):
        self.m = tiny()
        self.ids = torch.tensor([[0, 5, 6, 7, 8, 2], [0, 9, 10, 2, 1, 1]])
        self.attn = (self.ids != 1).long()
        self.labels = torch.full_like(self.ids, -100)
        self.labels[0, 2], self.labels[1, 1] = 6, 9

    def test_loss_is_mean_over_labelled_positions(self):
        loss, logits = self.m(self.ids, self.attn, labels=self.labels)
        want = (F.cross_entropy(logits[0, 2:3], torch.tensor([6])) + F.cross_entropy(logits[1, 1:2], torch.tensor([9]))) / 2
        self.assertAlmostEqual(loss.item(), want.item(), places=6)

    def test_decoder_is_tied_and_saved_names_are_hfs(self):
        m = self.m
        self.assertIs(m.lm_head.decoder.weight, m.roberta.embeddings.word_embeddings.weight)
        self.assertIs(m.lm_head.decoder.bias, m.lm_head.bias)
        names = [n for n, _ in m.hf_named_parameters()]
        self.assertNotIn("lm_head.decoder.weight", names)
        self.assertNotIn("lm_head.decoder.bias", names)
        for n in ("lm_head.dense.weight", "lm_head.dense.bias", "lm_head.layer_norm.weight",
                  "lm_head.layer_norm.bias", "lm_head.bias", "roberta.embeddings.word_embeddings.weight"):
            self.assertIn(n, names)
        # state_dict (what torch.save / the .bin writes) has every alias, as HF's does.
        self.assertIn("lm_head.decoder.weight", m.state_dict())

    def test_tied_gradient_sums_both_uses(self):
        m = self.m
        loss, _ = m(self.ids, self.attn, labels=self.labels)
        loss.backward()
        g = m.roberta.embeddings.word_embeddings.weight.grad.clone()
        # Untie: the decoder's part alone, through a detached copy of the embedding.
        m.zero_grad()
        w = m.roberta.embeddings.word_embeddings.weight
        dec = torch.nn.Parameter(w.detach().clone())
        h = m.lm_head.layer_norm(F.gelu(m.lm_head.dense(m.roberta(self.ids, self.attn))))
        logits = h @ dec.t() + m.lm_head.bias
        F.cross_entropy(logits.view(-1, logits.shape[-1]), self.labels.view(-1), ignore_index=-100).backward()
        self.assertTrue(torch.allclose(g, w.grad + dec.grad, atol=1e-6))
        self.assertGreater(dec.grad[20:].abs().max().item(), 0)  # every row, unused ids too

    def test_gradcheck_float64(self):
        m = self.m.double()
        emb = m.roberta.embeddings.word_embeddings.weight

        def f(weight):
            with torch.no_grad():
                emb.copy_(weight)
            # Differentiate through the decoder's use explicitly; the lookup is linear in the
            # rows too, so check the whole function of the tied weight by finite differences.
            return m(self.ids, self.attn, labels=self.labels)[0]

        w0 = emb.detach().clone()
        loss = m(self.ids, self.attn, labels=self.labels)[0]
        loss.backward()
        analytic = emb.grad.clone()
        eps = 1e-6
        for (r, c) in [(5, 0), (6, 3), (25, 7), (39, 1)]:
            wp, wm = w0.clone(), w0.clone()
            wp[r, c] += eps
            wm[r, c] -= eps
            fd = (f(wp).item() - f(wm).item()) / (2 * eps)
            self.assertAlmostEqual(fd, analytic[r, c].item(), places=6)
        with torch.no_grad():
            emb.copy_(w0)


if __name__ == "__main__":
    unittest.main()
