// Makes the goldens of the token-classification side of the tokenizer with Hugging Face's own
// Rust `tokenizers` (npm @anush008/tokenizers 0.6.0 = tokenizers 0.22.x, pinned in
// tools/package.json):
//
//   npm ci --prefix tools && node tools/make_offset_goldens.mjs
//
// Writes (read by tests/tokenizer/test_tokenizer_offsets.cpp):
//  - tests/data/tokenizer/offsets.jsonl: what a fast tokenizer gives for
//    tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True[,
//    truncation=True, max_length=n]), one case a line:
//      {"text": s | "hex": h, "add_prefix_space": b, ["max_length": n,]
//       "ids": [...], "offsets": [[start, end], ...], "special_tokens_mask": [...]}
//    Offsets are code points of the text (the binding encodes with encode_char_offsets, as
//    transformers' Python binding does). "hex" cases are bytes (often invalid UTF-8) decoded
//    with U+FFFD per maximal ill-formed subpart (TextDecoder, as Python's errors="replace"),
//    so their offsets count code points of that repaired text. add_prefix_space=true is
//    roberta-base loaded as AutoTokenizer.from_pretrained(..., add_prefix_space=True) does:
//    RobertaTokenizerFast.__init__ sets add_prefix_space in both the ByteLevel pre-tokenizer
//    and the RobertaProcessing post-processor (whose trim_offsets stays true).
//  - tests/data/tokenizer/words.jsonl: tokenizer(words, is_split_into_words=True[,
//    truncation=True, max_length=n]) with add_prefix_space=True (what run_ner.py needs for
//    RoBERTa), one case a line: {"words": [...], ["max_length": n,] "ids": [...],
//    "word_ids": [...]} with null for the special tokens.
//    The npm bindings have no pre-tokenized input (EncodeOptions.is_pretokenized is a TODO in
//    their tokenizer.rs), so the sequence is assembled here exactly as tokenizers'
//    Tokenizer::encode_single_sequence (tokenizers/src/tokenizer/mod.rs) does for
//    InputSequence::PreTokenized: each word goes alone through the whole pipeline (added
//    vocabulary, normalizer, ByteLevel pre-tokenizer with its prefix space, BPE) with
//    word index i, the encodings are merged (Encoding::merge, growing_offsets=false), then
//    post_process truncates to max_length - 2 (truncate_encodings, right, stride 0) and
//    RobertaProcessing adds <s> ... </s> with no word. The ids of each word come from the
//    Rust library: encode(word, add_special_tokens=false).
// Deterministic: fixed seed, no input files but the tokenizer.
import { Tokenizer } from '@anush008/tokenizers';
import fs from 'node:fs';
import path from 'node:path';

import { rng, root, tokPath } from './golden_util.mjs';

const outDir = path.join(root, 'tests/data/tokenizer');
const rand = rng(20261202);
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

const tokJson = JSON.parse(fs.readFileSync(tokPath, 'utf8'));
const prefixJson = structuredClone(tokJson);
prefixJson.pre_tokenizer.add_prefix_space = true;
prefixJson.post_processor.add_prefix_space = true;
const makers = {
  false: () => Tokenizer.fromString(JSON.stringify(tokJson)),
  true: () => Tokenizer.fromString(JSON.stringify(prefixJson)),
};

// ---- offsets.jsonl ----
const offsetLines = [];
async function offsets(text, addPrefixSpace, maxLength = 0, hex = null) {
  const tok = makers[addPrefixSpace]();
  if (maxLength) tok.setTruncation(maxLength);
  const e = await tok.encode(text);
  const line = hex === null ? { text } : { hex };
  line.add_prefix_space = addPrefixSpace;
  if (maxLength) line.max_length = maxLength;
  Object.assign(line, {
    ids: Array.from(e.getIds()),
    offsets: e.getOffsets().map((o) => Array.from(o)),
    special_tokens_mask: Array.from(e.getSpecialTokensMask()),
  });
  offsetLines.push(line);
}

const texts = [
  '', ' ', '  ', 'x', ' x', 'x ', '  x  ', 'hello world', 'Hello  world', 'Hello world!  ',
  '\tTabs\tand\nnewlines\r\nhere', 'EU rejects German call to boycott British lamb .',
  'Peter Blackburn', 'BRUSSELS 1996-08-22', "I don't think it's O'Neil's car.", "rock'n'roll y'all'd've",
  'café naïve résumé Ångström', 'e\u0301 combining', 'Zoë Saldaña in São Paulo', '東京都に住んでいます',
  '北京 is in 中国', '한국어 텍스트', 'Привет, мир', 'مرحبا بالعالم', 'שלום עולם', 'नमस्ते दुनिया',
  '😀', '😀😀😀', 'I ❤️ NY 🇺🇸 👨‍👩‍👧 👍🏽!', 'emoji😀inside', '@user @MrBean_ thanks!', '@ user',
  'check https://t.co/AbC123 and http://example.com/a?b=c&d=e#f', 'www.example.org/path', '#NLProc #100DaysOfCode',
  'The capital of France is <mask>.', '<mask>', ' <mask>', 'a<mask>b', 'a <mask> b', 'a  <mask>b', '<mask><mask>',
  '\u00a0<mask>', '\t\n <mask>', '<s>x</s>', 'I like <mask> and <s>.', '<mask>ing', '😀<mask>😀',
  'non\u00a0breaking\u00a0spaces', 'ideographic\u3000space', 'line\u2028separator', 'zero\u200bwidth\u200bspace',
  '\u200b', '\u00a0', '\u3000', ' \u00a0 ', 'multiple     spaces   between', '   leading spaces', 'trailing spaces   ',
  '$100.50 and 3.14159, 1,000,000', '2024-06-01T12:00:00Z', '!!!???...', '"quoted" (parens) [brackets]',
  '𝐀𝐁𝐂 𝟘𝟙𝟚 mathematical', 'x'.repeat(300), 'supercalifragilisticexpialidocious', 'Pneumonoultramicroscopic',
  "'s 'S 'll ''s", '’s curly ’quotes’', 'Ⅻ ½ ² ٣', 'ǅ İ ß', '\u0000\u0007\u001f\u007f', 'a\r\nb', '\n\n\n',
];
for (const t of texts) {
  await offsets(t, false);
  await offsets(t, true);
}

const pool = [
  'a', 'Z', 'é', 'ß', '0', '7', '²', '½', ' ', ' ', ' ', '  ', '\t', '\n', '\u00a0', '\u3000', '.', ',', '!', "'",
  '"', '#', '@', '_', '-', '/', ':)', '😀', '👍🏽', '👨‍👩‍👧', '🇫🇷', '中', '文', '한', 'ж', 'Ω', 'क', 'ि', '\u0301',
  '\u200d', '\u200b', '\ufffd', '𝐀', '\u{10ffff}', '<mask>', '<s>', '</s>', "'s", "'ll", 'http://t.co/x', '#tag',
  '@user', '...', '\r\n', 'the', 'New', 'York', 'don', "'t",
];
for (let i = 0; i < 300; ++i) {
  const n = 1 + Math.floor(rand() * 20);
  let s = '';
  for (let k = 0; k < n; ++k) s += pick(pool);
  await offsets(s, rand() < 0.5);
}

// Truncation: max_length counts <s> and </s>.
for (const n of [2, 3, 4, 5, 8, 16]) {
  for (const s of ['Hello world, this is a fairly long sentence with many tokens in it.', 'a <mask> b <mask> c',
    '😀😀😀 emoji at the start', '  spaces first and a café', 'short']) {
    await offsets(s, false, n);
    await offsets(s, true, n);
  }
}

// Bytes that may be invalid UTF-8.
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
const crafted = [
  [0x80], [0xc2], [0xc2, 0x41], [0xe2, 0x82], [0xe2, 0x82, 0x41], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x98],
  [0x61, 0xff, 0x62], [0x20, 0xc3], [0xc3, 0x20, 0x61], [0x68, 0xc3, 0xa9, 0xff, 0x20, 0x77],
  [0xff, 0x20, 0x3c, 0x6d, 0x61, 0x73, 0x6b, 0x3e], [0xf0, 0x9f, 0x98, 0x80, 0xc0, 0xaf, 0x7a],
];
const hexOf = (bytes) => Buffer.from(bytes).toString('hex');
for (const b of crafted) {
  await offsets(decoder.decode(Uint8Array.from(b)), false, 0, hexOf(b));
  await offsets(decoder.decode(Uint8Array.from(b)), true, 0, hexOf(b));
}
for (let i = 0; i < 60; ++i) {
  const n = 1 + Math.floor(rand() * 16);
  const b = [];
  for (let k = 0; k < n; ++k) {
    const r = rand();
    b.push(r < 0.4 ? 0x61 + Math.floor(rand() * 26) : r < 0.55 ? 0x20 : Math.floor(rand() * 256));
  }
  await offsets(decoder.decode(Uint8Array.from(b)), rand() < 0.5, 0, hexOf(b));
}

fs.writeFileSync(path.join(outDir, 'offsets.jsonl'), offsetLines.map((l) => JSON.stringify(l)).join('\n') + '\n');
console.log(`offsets.jsonl: ${offsetLines.length} cases`);

// ---- words.jsonl ----
const wordTok = makers[true]();
const wordLines = [];
async function words(ws, maxLength = 0) {
  const ids = [], wordIds = [];
  for (let i = 0; i < ws.length; ++i) {
    const e = await wordTok.encode(ws[i], null, { addSpecialTokens: false });
    for (const id of e.getIds()) {
      ids.push(id);
      wordIds.push(i);
    }
  }
  if (maxLength) {  // truncate_encodings: max_length less the post-processor's 2 added tokens
    ids.length = Math.min(ids.length, maxLength - 2);
    wordIds.length = ids.length;
  }
  const line = { words: ws };
  if (maxLength) line.max_length = maxLength;
  Object.assign(line, { ids: [0, ...ids, 2], word_ids: [null, ...wordIds, null] });
  wordLines.push(line);
}

const sentences = [
  ['EU', 'rejects', 'German', 'call', 'to', 'boycott', 'British', 'lamb', '.'],
  ['Peter', 'Blackburn'], ['BRUSSELS', '1996-08-22'], ['-DOCSTART-'],
  ['I', "don't", 'think', "it's", "O'Neil", "'s", 'car', '.'], ["'s", "'t", "'re", "'ll", "''"],
  ['café', 'naïve', 'résumé', 'Ångström', 'e\u0301'], ['Zoë', 'Saldaña', 'in', 'São', 'Paulo'],
  ['東京', '都', 'に', '住んでいます'], ['北京', 'is', 'in', '中国'], ['한국어', '텍스트'], ['Привет', ',', 'мир'],
  ['😀'], ['I', '❤️', 'NY', '🇺🇸', '👨‍👩‍👧', '👍🏽', '!'], ['emoji😀inside'],
  ['@user', '@MrBean_', 'thanks', '!'], ['{{USERNAME}}', '{{URL}}', 'RT', ':'],
  ['check', 'https://t.co/AbC123', 'and', 'http://example.com/a?b=c&d=e#f'], ['#NLProc', '#100DaysOfCode'],
  ['The', 'capital', 'of', 'France', 'is', '<mask>', '.'], ['<mask>'], ['a<mask>b'], ['a', ' <mask>', 'b'],
  ['<s>', 'x', '</s>'], ['<mask>ing'],
  ['New York', 'City'], ['two  spaces'], [' leading'], ['trailing '], [' '], ['  '], ['\t'], ['\n'],
  ['\u00a0'], ['\u3000'], ['\u200b'], ['\u2028'], ['x', ' ', 'y'], ['x', '\u00a0', 'y'], ['x', '\u200b', 'y'],
  [''], ['a', '', 'b'], [], ['$100.50', '3.14159', '1,000,000'], ['!!!', '???', '...'],
  ['"', 'quoted', '"', '(', 'parens', ')'], ['𝐀𝐁𝐂', '𝟘𝟙𝟚'], ['x'.repeat(300)], ['supercalifragilisticexpialidocious'],
  ['\ufffd'], ['\u0000', '\u0007'], ['a\r\nb'], ['Ⅻ', '½', '²', '٣'], ['ǅ', 'İ', 'ß'],
];
for (const s of sentences) await words(s);

const wordPool = [
  'the', 'The', 'New', 'York', 'Obama', 'U.S.', 'U.N.', 'Jürgen', 'Müller', 'François', '東京', '中国', '😀', '👍🏽',
  '🇫🇷', '@user', '#tag', 'http://t.co/x', "don't", "'s", '.', ',', '!', '?', '-', '(', ')', '"', "'", '1996',
  '3.5', '½', 'é', 'ß', 'ж', 'Ω', 'क', 'ि', '<mask>', '<s>', ' ', '\u00a0', '\u200b', '', 'a b', 'x\ty', '...',
  'RT', ':', 'lol', 'haha', 'Ⅻ', '𝐀', 'e\u0301',
];
for (let i = 0; i < 250; ++i) {
  const n = 1 + Math.floor(rand() * 16);
  const ws = [];
  for (let k = 0; k < n; ++k) {
    let w = pick(wordPool);
    if (rand() < 0.15) w += pick(wordPool);
    ws.push(w);
  }
  await words(ws);
}

for (const n of [2, 3, 4, 5, 8, 16]) {
  for (const s of [sentences[0], sentences[4], sentences[13], ['x'.repeat(40), 'y'], ['', '', 'a']]) await words(s, n);
}

fs.writeFileSync(path.join(outDir, 'words.jsonl'), wordLines.map((l) => JSON.stringify(l)).join('\n') + '\n');
console.log(`words.jsonl: ${wordLines.length} cases`);
