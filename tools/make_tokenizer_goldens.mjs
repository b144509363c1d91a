// Makes extra tokenizer goldens with Hugging Face's own Rust `tokenizers` (npm
// @anush008/tokenizers 0.6.0 = tokenizers 0.22.x, pinned in tools/package.json):
//
//   cd tools && npm install && node make_tokenizer_goldens.mjs
//
// Writes (read by tests/tokenizer/test_tokenizer.cpp):
//  - tests/data/tokenizer/extra.jsonl, one case per line:
//      {"text": s, "ids": [...]}                            encode(s), with <s> </s>
//      {"text": s, "add_special_tokens": false, "ids": []}  encode(s) without them
//      {"text": s, "max_length": n, "ids": [...]}           truncation=True, max_length=n
//      {"hex": h, "ids": [...]}  bytes h (maybe invalid UTF-8), decoded with
//                                errors="replace" semantics (TextDecoder, U+FFFD per maximal
//                                subpart, the same as Python's bytes.decode), then encode
//      {"decode": [...], "skip_special_tokens": b, "text": s}  decode(ids)
//  - tests/data/tokenizer/char_classes.txt: the class HF's GPT-2 regex gives every code
//    point (L letter, N number, W whitespace, O other) as "first last class" hex ranges.
// Deterministic: fixed seeds, fixed input files.
import { Tokenizer, byteLevelPreTokenizer } from '@anush008/tokenizers';
import fs from 'node:fs';
import path from 'node:path';

import { rng, root, tokPath } from './golden_util.mjs';

const outDir = path.join(root, 'tests/data/tokenizer');
const tweetDir = path.resolve(root, '../shared/data/tweeteval');

const tok = Tokenizer.fromFile(tokPath);
const truncTok = Tokenizer.fromFile(tokPath);

const rand = rng(20240601);
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

const lines = [];
async function enc(text, opts = {}) {
  if (opts.max_length) {
    truncTok.setTruncation(opts.max_length);
    const e = await truncTok.encode(text);
    lines.push({ text, max_length: opts.max_length, ids: Array.from(e.getIds()) });
  } else if (opts.add_special_tokens === false) {
    const e = await tok.encode(text, null, { addSpecialTokens: false });
    lines.push({ text, add_special_tokens: false, ids: Array.from(e.getIds()) });
  } else {
    const e = await tok.encode(text);
    lines.push({ text, ids: Array.from(e.getIds()) });
  }
}

// 1. Tweets from the other TweetEval tasks (raw lines, newline stripped).
for (const task of ['emoji', 'emotion', 'hate', 'irony', 'offensive']) {
  const file = path.join(tweetDir, task, 'train_text.txt');
  const texts = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0);
  for (let i = 0; i < 60; ++i) await enc(texts[Math.floor((i * texts.length) / 60)]);
}

// 2. Special tokens written in the text (<mask> has lstrip=true in roberta-base).
const specials = [
  'a<mask> b', 'a <mask> b', 'a  <mask>b', '<mask>', ' <mask>', '\t\n <mask>', '\u00a0<mask>',
  '\u3000 <mask> ', '<mask><mask>', '<mask> <mask>', 'x <mask>.', '<s>x</s>', '<s> x </s>',
  '</s><s>', '<pad><unk>', '<s', '</s', '<<mask>>', '<mask >', '<MASK>', '< mask>',
  '<|endoftext|>', 'a<|endoftext|>b', 'madeupword0000', 'I like <mask> and <s>.',
  'The capital of France is <mask>.', '<mask>ing', 'un<mask>able', '<mask>\u2028<mask>',
  '\u00e9<mask>', '😀<mask>😀', '<s><pad></s><unk><mask>', '<ma<mask>sk>', 'e\u0301 <mask>',
];
for (const s of specials) {
  await enc(s);
  await enc(s, { add_special_tokens: false });
}

// 3. Long words (the BPE heap path starts at 257 bytes) and long texts.
const longs = [
  'a'.repeat(300), 'ab'.repeat(200), 'supercalifragilisticexpialidocious'.repeat(12),
  '1234567890'.repeat(40), '!?'.repeat(150), '😂'.repeat(80), '漢字'.repeat(60),
  ' '.repeat(300) + 'x', '\n'.repeat(280), 'Pneumonoultramicroscopicsilicovolcanoconiosis',
  'hahahahahahahahahahahahahahahahahahahahahahahahahahahahahahahahahahahahahahahahaha',
  'x'.repeat(2000),
];
for (const s of longs) await enc(s);
{
  let w = '';
  for (let i = 0; i < 3000; ++i) w += String.fromCharCode(97 + Math.floor(rand() * 26));
  await enc(w);
}

// 4. Odd whitespace around letters, digits and punctuation.
const spaces = [' ', '  ', '\t', '\n', '\r\n', '\r', '\u00a0', '\u3000', '\u2028', '\u2029', '\u0085',
  '\u000b', '\u000c', '\u1680', '\u2009', '\u200b', '\u180e', '\ufeff', ' \n ', '\t ', ' \t'];
for (const a of spaces) {
  await enc(`x${a}y`);
  await enc(`${a}x`);
  await enc(`x${a}`);
  await enc(`x${a}${a}1${a}!`);
}

// 5. Every code point U+0000..U+00FF alone, and between letters.
for (let b = 0; b < 256; ++b) {
  const c = String.fromCodePoint(b);
  await enc(c);
  await enc(`a${c}b ${c}`);
}

// 6. Contractions and case.
for (const s of ["'s 'S 'll 'LL ''s", "I'm you're we've they'll he'd it's don't", "y'all'd've",
  "'", "''", "' s", "rock'n'roll", "O'Neil's", "'re're", "x'd'", "'\u00e9", "’s curly"]) await enc(s);

// 7. Random strings from a pool of character kinds.
const pool = [
  'a', 'Z', 'é', 'ß', 'İ', 'ǅ', 'ʰ', '0', '7', '²', '½', 'Ⅻ', '٣', ' ', ' ', ' ', '\t', '\n', '\u00a0',
  '\u3000', '.', ',', '!', '?', "'", '"', '#', '@', '_', '-', '/', ':)', '😀', '👍🏽', '👨‍👩‍👧', '🇫🇷',
  '中', '文', '한', 'ア', 'ا', 'ש', 'ж', 'Ω', 'क', 'ि', 'ก', '\u0301', '\u200d', '\u200b', '\u0000',
  '\u0007', '\u001f', '\u007f', '\u0080', '\u009f', '\ufffd', '𝐀', '𝟘', '\u{10ffff}', '\ue000',
  '<mask>', '<s>', '</s>', "'s", "'ll", 'http://t.co/x', '#tag', '@user', '...', '\r\n',
];
for (let i = 0; i < 600; ++i) {
  const n = 1 + Math.floor(rand() * 24);
  let s = '';
  for (let k = 0; k < n; ++k) s += pick(pool);
  await enc(s);
}

// 8. Truncation (max_length counts <s> and </s>).
for (const n of [2, 3, 4, 5, 8, 16]) {
  for (const s of ['Hello world, this is a fairly long sentence with many tokens in it.',
    'a <mask> b <mask> c <mask> d', '😀😀😀😀😀 emoji at the start', 'short']) {
    await enc(s, { max_length: n });
  }
}

// 9. Bytes that may be invalid UTF-8, repaired with U+FFFD per maximal subpart.
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
const hexOf = (bytes) => Buffer.from(bytes).toString('hex');
const crafted = [
  [0x80], [0xbf], [0xc0, 0xaf], [0xc1, 0xbf], [0xc2], [0xc2, 0x41], [0xe0, 0x80, 0x80],
  [0xe0, 0xa0], [0xe2, 0x82], [0xe2, 0x82, 0x41], [0xed, 0xa0, 0x80], [0xed, 0x9f, 0xbf],
  [0xef, 0xbf, 0xbf], [0xf0, 0x8f, 0xbf, 0xbf], [0xf0, 0x9f, 0x98], [0xf0, 0x9f, 0x98, 0x41],
  [0xf4, 0x8f, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80], [0xf5, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xfe], [0xff], [0xfe, 0xff], [0x61, 0xff, 0x62], [0x20, 0xc3], [0xc3, 0x20], [0xe1, 0x80, 0xe1, 0x80],
  [0x3c, 0x6d, 0x61, 0x73, 0x6b, 0x3e, 0xff], [0xff, 0x20, 0x3c, 0x6d, 0x61, 0x73, 0x6b, 0x3e],
];
for (const b of crafted) {
  const e = await tok.encode(decoder.decode(Uint8Array.from(b)));
  lines.push({ hex: hexOf(b), ids: Array.from(e.getIds()) });
}
for (let i = 0; i < 200; ++i) {
  const n = 1 + Math.floor(rand() * 20);
  const b = [];
  for (let k = 0; k < n; ++k) {
    const r = rand();
    b.push(r < 0.4 ? 0x61 + Math.floor(rand() * 26) : r < 0.5 ? 0x20 : Math.floor(rand() * 256));
  }
  const e = await tok.encode(decoder.decode(Uint8Array.from(b)));
  lines.push({ hex: hexOf(b), ids: Array.from(e.getIds()) });
}

// 10. decode(): random ids (specials, partial UTF-8 tokens, out-of-range ids).
const vocabSize = tok.getVocabSize(true);
for (let i = 0; i < 150; ++i) {
  const n = 1 + Math.floor(rand() * 12);
  const ids = [];
  for (let k = 0; k < n; ++k) {
    const r = rand();
    ids.push(r < 0.15 ? pick([0, 1, 2, 3, 50264, 50260]) : r < 0.2 ? vocabSize + Math.floor(rand() * 10)
      : Math.floor(rand() * vocabSize));
  }
  for (const skip of [false, true]) {
    lines.push({ decode: ids, skip_special_tokens: skip, text: await tok.decode(ids, skip) });
  }
}

fs.writeFileSync(path.join(outDir, 'extra.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
console.log(`extra.jsonl: ${lines.length} cases`);

// Character classes of every code point, as HF's regex sees them.
const pre = byteLevelPreTokenizer(false, true);
const onePiece = (s) => pre.preTokenizeString(s).length === 1;
const ranges = [];
for (let cp = 0; cp <= 0x10ffff; ++cp) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;  // not characters
  const c = String.fromCodePoint(cp);
  const cls = onePiece('a' + c) ? 'L' : onePiece('1' + c) ? 'N' : onePiece('!' + c) ? 'O' : 'W';
  const last = ranges[ranges.length - 1];
  if (last && last[2] === cls && last[1] === cp - 1) last[1] = cp;
  else ranges.push([cp, cp, cls]);
}
const header = '# first last class (hex code points; L letter, N number, W whitespace, O other)\n' +
  '# made by tools/make_tokenizer_goldens.mjs from HF tokenizers ByteLevel pre-tokenizer\n';
fs.writeFileSync(path.join(outDir, 'char_classes.txt'),
  header + ranges.map(([a, b, c]) => `${a.toString(16)} ${b.toString(16)} ${c}`).join('\n') + '\n');
console.log(`char_classes.txt: ${ranges.length} ranges`);
