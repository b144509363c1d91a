// Goldens of the tokenizer pipeline with Hugging Face's own Rust `tokenizers` (npm
// @anush008/tokenizers 0.6.0 = tokenizers 0.22.x, pinned in tools/package.json):
//
//   /usr/bin/python3 tools/make_pipeline_fixtures.py   # the tokenizer files (once)
//   npm ci --prefix tools && node tools/make_pipeline_goldens.mjs
//
// For every tests/data/tokenizer/pipeline/<name>/tokenizer.json writes <name>.jsonl, read by
// tests/tokenizer/test_tokenizer_pipeline.cpp, one case per line:
//   {"kind": "encode", "text"|"hex", ids, type_ids, offsets, special_tokens_mask, decode, decode_skip}
//        encode(text) with specials; offsets in code points; decode(ids, false / true)
//   {"kind": "plain", "text", ids}                    encode(text, add_special_tokens=false)
//   {"kind": "pair", "text", "text_pair", ids, type_ids[, max_length, direction]}
//   {"kind": "truncate", "text", max_length, direction, ids}
//   {"kind": "words", "words", ids, word_ids}         is_split_into_words (isPretokenized)
//   {"kind": "vocab", vocab_size, tokens: [[token, id], ...]}
// "hex" texts are bytes (often invalid UTF-8) decoded as Python's errors="replace" does.
// Deterministic: fixed seed, fixed input files.
import { Tokenizer, mergeEncodings } from '@anush008/tokenizers';
import fs from 'node:fs';
import path from 'node:path';

import { rng, root } from './golden_util.mjs';

// Options (the differential sweep, tools/tokenizer_sweep.sh): --dir D (folders of tokenizer.json,
// default tests/data/tokenizer/pipeline), --texts FILE (its non-empty lines, at most 200, in
// place of the tweets), --only NAME (one folder).
const argv = process.argv.slice(2);
const opt = (name) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
const dir = path.resolve(opt('--dir') ?? path.join(root, 'tests/data/tokenizer/pipeline'));
const shared = fs.existsSync(path.resolve(root, '../shared')) ? path.resolve(root, '../shared') : '/work/shared';
const read = (task) => fs.readFileSync(path.join(shared, `data/tweeteval/${task}/test_text.txt`), 'utf8')
  .split('\n').filter((l) => l.length > 0);
const tweets = opt('--texts')
  ? fs.readFileSync(opt('--texts'), 'utf8').split('\n').filter((l) => l.length > 0).slice(0, 200)
  : [...read('emotion').slice(0, 100), ...read('hate').slice(0, 60), ...read('stance/climate').slice(0, 40)];

const hard = [
  '', ' ', '   ', 'a', 'Hello, World!', 'hello  world', '  leading and trailing  ', 'tab\there', 'line\nbreak\r\n',
  'Café résumé naïve façade', 'ÉCOLE Über STRASSE straße', 'İstanbul ıi', 'Ωμέγα Σίσυφος ΣΑΣ',
  '日本語のテキスト', '中文字符测试', '한국어 텍스트', 'full-width ＡＢＣ１２３！？', 'ligature ﬁ ﬂ ﬀ', 'ｶﾀｶﾅ halfwidth',
  'combining e\u0301 a\u0300 o\u0308\u0304', 'zero\u200bwidth\u200cjoin\u200d', 'soft\u00adhyphen', 'nbsp\u00a0here',
  'control\u0001\u0007\u001f chars', 'bidi \u202eright\u202c', 'العربية نص', 'עברית', 'हिन्दी देवनागरी', 'ไทย',
  'emoji 😀👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷', 'keycap 1️⃣ #️⃣', 'math 𝔾𝕠𝕠𝕕 𝐀𝐁', '½ ² ³ ⅷ ①', 'don\'t I\'M we\'ll it’s',
  '@user #hashtag http://t.co/abc123 https://example.com/x?y=1', '$100.50 3.14 1,000,000 2024-01-01',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'supercalifragilisticexpialidocious antidisestablishmentarianism', '...!!!???', '""\'\'``', 'a.b,c;d:e',
  '[CLS] [SEP] [MASK] [UNK] [PAD]', '<s> </s> <mask> <unk> <pad>', 'a [MASK] b', 'a <mask> b', 'a<mask>b',
  'x [link] y[link]z [link]', '\u3000ideographic\u3000space', 'multiple     spaces     here', ' ▁ meta▁space',
  'Ⓐ ⓑ ㈱ ㎏ ™ ℃', 'a <mention> b', '  <mention>  x', 'x<mention>y', 'hello world hellos Hello', 'ab-cd--ef, g;h|i',
  'x \u3000 y', '\u3000\u3000z', 'a\u00a0\u00a0b', 'tab\t\u3000end \u2028 x', 'q\u2003\u2003 \u0085r', 'ǅ ǆ ﬃ ᵃ', '\ufeffbom', 'a\u0000b', 'replacement \ufffd char', '𠀀𠀁 ext-b',
  // Added for the differential sweep: more scripts, marks, sequences, spacing and long words.
  '東京都は日本の首都です。人口は約1400万人。', '我爱北京天安门，你呢？', 'カタカナとひらがな、漢字ｶﾀｶﾅ', '한국어와 日本語 mixed',
  'مرحبا بالعالم! كيف حالك؟ ١٢٣', 'السَّلَامُ عَلَيْكُمْ', 'a\u0308\u0301\u0323b q\u0307\u0323 \u1100\u1161\u11a8', 'e\u0301e\u0301e\u0301',
  '👩‍💻👨‍👨‍👧 🧑🏿‍🤝‍🧑🏻 ❤️‍🔥 🏴‍☠️', 'x\u200dy\u200cz\u2060w\ufe0fv', '\u0001\u0002\u0003abc\u007f\u0080\u009f', 'a\rb\fc\vd',
  '     ', 'a      b', ' \t \n x \n\n\n y  ', 'end   ', '   start',
  'x'.repeat(150), 'Pneumonoultramicroscopicsilicovolcanoconiosis'.repeat(4), '日'.repeat(120), 'é'.repeat(101),
  'ab'.repeat(60) + ' ' + 'cd'.repeat(60), '1234567890'.repeat(12), '🙂'.repeat(30), '-'.repeat(40),
  'The GNU GPL (v3.0) — “free” software; see <https://www.gnu.org/licenses/>.', 'naïve coöperate Zürich Ærø Œuvre',
  'ÀÁÂÃÄÅ àáâãäå ÇçÑñ ǄǅǆǇǈǉ ẞß ﬀﬁﬂﬃﬄﬅﬆ', 'İIıi ΣσςΣ', 'Ｈｅｌｌｏ　Ｗｏｒｌｄ！', '①②③ ⑴⑵ ⒈⒉ ㊀㊁',
];
const hexes = ['61e282', 'c0af', 'eda080', 'ff', '68656c6c6fff776f726c64', 'e4b8ade6', 'f09f98', '80808061',
  'c3', 'efbfbd', '6162c3a9', 'e282ac20f0', '2020ff2020'];

let rand = rng(20261202);
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const decoder = new TextDecoder('utf-8');
const pool = ['a', 'Z', 'é', 'ß', 'İ', 'ǅ', '日', '한', 'ا', 'א', 'ह', 'ि', '\u0301', '\u20e3', '1', '٣', '½', '²', ' ', '  ',
  '\t', '\n', '\u00a0', '\u3000', '\u200b', '\u200d', '\u0085', '\u2028', '.', ',', "'", '-', '#', '@', '$', '_', '😀',
  '👍🏽', '🇫🇷', '\ufe0f', 'ﬁ', 'Ａ', '\u0000', '\u001f', '\ufffd', '[MASK]', '<mask>', '<s>', '▁', "'s", "'ll", 'x'];

for (const name of fs.readdirSync(dir).sort()) {
  const file = path.join(dir, name, 'tokenizer.json');
  if (!fs.existsSync(file) || (opt('--only') && name !== opt('--only'))) continue;
  const tok = Tokenizer.fromFile(file);
  rand = rng(20261202);  // the same picks for every tokenizer, whatever the others
  const lines = [];
  const encodeCase = async (text, hex = null) => {
    const e = await tok.encode(text);
    const ids = Array.from(e.getIds());
    const line = hex === null ? { kind: 'encode', text } : { kind: 'encode', hex };
    Object.assign(line, {
      ids, type_ids: Array.from(e.getTypeIds()), offsets: e.getOffsets().map((o) => Array.from(o)),
      special_tokens_mask: Array.from(e.getSpecialTokensMask()),
      decode: await tok.decode(ids, false), decode_skip: await tok.decode(ids, true),
    });
    lines.push(line);
  };
  for (const t of [...hard, ...tweets]) await encodeCase(t);
  for (const h of hexes) await encodeCase(decoder.decode(Buffer.from(h, 'hex')), h);
  for (let i = 0; i < 40; ++i) {  // random strings over a pool of character kinds
    let t = '';
    for (let k = 1 + Math.floor(rand() * 12); k > 0; --k) t += pick(pool);
    await encodeCase(t);
  }
  for (const t of [...hard.slice(0, 30), ...tweets.slice(0, 30)]) {
    const e = await tok.encode(t, null, { addSpecialTokens: false });
    lines.push({ kind: 'plain', text: t, ids: Array.from(e.getIds()) });
  }
  const pairs = [['a', 'b'], ['', ''], ['Hello world', 'How are you?'], ['日本語', 'emoji 😀'], ['x [MASK] y', 'z <mask>'],
    ['', 'x'], ['   ', 'مرحبا 😀'], ['x'.repeat(150), 'e\u0301 東京']];
  for (let i = 0; i < 20; ++i) pairs.push([pick(tweets), pick(tweets)]);
  for (const [a, b] of pairs) {
    const e = await tok.encode(a, b);
    lines.push({ kind: 'pair', text: a, text_pair: b, ids: Array.from(e.getIds()), type_ids: Array.from(e.getTypeIds()) });
  }
  for (let i = 0; i < 30; ++i) {
    const [a, b] = [pick(tweets), pick(tweets)];
    const n = 6 + Math.floor(rand() * 40), d = rand() < 0.5 ? 'Right' : 'Left';
    const t = Tokenizer.fromFile(file);
    t.setTruncation(n, { strategy: 'LongestFirst', direction: d.toLowerCase() });
    const e = await t.encode(a, b);
    lines.push({ kind: 'pair', text: a, text_pair: b, max_length: n, direction: d, ids: Array.from(e.getIds()),
      type_ids: Array.from(e.getTypeIds()) });
    const s = await t.encode(a);
    lines.push({ kind: 'truncate', text: a, max_length: n, direction: d, ids: Array.from(s.getIds()) });
  }
  for (let i = 0; i < 25; ++i) {
    const words = pick(tweets).split(' ').filter((w) => w.length > 0).slice(0, 12);
    if (i === 0) words.push('', 'Café', '[MASK]');
    // The binding takes no pre-tokenized input: as tokenizers' encode_single_sequence does for
    // it, each word is encoded alone, the encodings merged, then post-processed.
    const encs = [], wordOf = [];
    for (let w = 0; w < words.length; ++w) {
      const e = await tok.encode(words[w], null, { addSpecialTokens: false });
      encs.push(e);
      for (let k = 0; k < e.getLength(); ++k) wordOf.push(w);
    }
    const merged = tok.postProcess(mergeEncodings(encs, false), null, true);
    const special = Array.from(merged.getSpecialTokensMask());
    let next = 0;
    const wordIds = special.map((m) => (m ? -1 : wordOf[next++]));
    lines.push({ kind: 'words', words, ids: Array.from(merged.getIds()), word_ids: wordIds });
  }
  const vocab = tok.getVocab(true);
  const entries = Object.entries(vocab).sort((x, y) => x[1] - y[1]);
  const sample = entries.filter((_, i) => i % 37 === 0 || i < 8 || i >= entries.length - 6);
  lines.push({ kind: 'vocab', vocab_size: tok.getVocabSize(true), tokens: sample });
  fs.writeFileSync(path.join(dir, `${name}.jsonl`), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  console.log(`${name}: ${lines.length} cases`);
}
