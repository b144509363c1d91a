// Byte-level BPE tokenizers whose vocabulary lacks most of the 256 byte symbols, as HF's BPE
// trainer makes them without the ByteLevel alphabet (what the differential sweep's bl-* variants
// found, tools/tokenizer_sweep.sh): trained by HF's own library (npm `tokenizers`) on a few ASCII
// lines, so every non-ASCII byte is missing and there is no unk token. tokenizers drops such a
// byte, and the offsets of the word's later tokens count only the symbols kept.
//
//   npm ci --prefix tools && node tools/make_partial_bytes_tokenizers.mjs
//   node tools/make_pipeline_goldens.mjs --only bl-partial-bytes
//   node tools/make_pipeline_goldens.mjs --only bl-partial-bytes-notrim
//
// Writes tests/data/tokenizer/pipeline/<name>/tokenizer.json (both add_prefix_space=false):
//   bl-partial-bytes         RobertaProcessing (trim_offsets)
//   bl-partial-bytes-notrim  ByteLevel post-processor without trim_offsets
import { BPE, Tokenizer, byteLevelPreTokenizer } from '@anush008/tokenizers';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { root } from './golden_util.mjs';

const lines = [
  'The quick brown fox jumps over the lazy dog, then naps in the sun.',
  'Hello world! This is a small corpus for a byte-level BPE tokenizer.',
  'Report an error if the file cannot be read; see the manual for details.',
  'Numbers like 3.14, 1,000 and 2024-01-01 appear here too.',
  "Don't stop: we'll keep going until it's done (or nearly so).",
  'Offsets, words and ids are checked against the library itself.',
];
const corpus = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rc-partial-bytes-')), 'corpus.txt');
fs.writeFileSync(corpus, lines.join('\n').repeat(3) + '\n');
const t = new Tokenizer(BPE.empty());
t.setPreTokenizer(byteLevelPreTokenizer(false, true));
t.train([corpus]);
const saved = path.join(path.dirname(corpus), 'trained.json');
t.save(saved);
const model = JSON.parse(fs.readFileSync(saved, 'utf8')).model;
fs.rmSync(path.dirname(corpus), { recursive: true });

const vocab = { ...model.vocab };
for (const s of ['<s>', '</s>']) if (!(s in vocab)) vocab[s] = Object.keys(vocab).length;
const added = (content) => ({
  id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
});
const byteLevel = (aps, trim) => ({ type: 'ByteLevel', add_prefix_space: aps, trim_offsets: trim, use_regex: true });
const write = (name, post) => {
  const dir = path.join(root, 'tests/data/tokenizer/pipeline', name);
  fs.mkdirSync(dir, { recursive: true });
  const doc = {
    version: '1.0', truncation: null, padding: null, added_tokens: ['<s>', '</s>'].map(added), normalizer: null,
    pre_tokenizer: byteLevel(false, true), post_processor: post, decoder: byteLevel(true, true),
    model: { ...model, vocab, unk_token: null, dropout: null },
  };
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(doc) + '\n');
  console.log(`${name}: ${Object.keys(vocab).length} tokens`);
};
write('bl-partial-bytes', {
  type: 'RobertaProcessing', sep: ['</s>', vocab['</s>']], cls: ['<s>', vocab['<s>']], trim_offsets: true,
  add_prefix_space: false,
});
write('bl-partial-bytes-notrim', byteLevel(false, false));
