// Makes the text-pair goldens with Hugging Face's own Rust `tokenizers` (npm
// @anush008/tokenizers 0.6.0 = tokenizers 0.22.x, pinned in tools/package.json):
//
//   cd tools && npm install && node make_pair_goldens.mjs
//
// Writes tests/data/tokenizer/pairs.jsonl (read by tests/tokenizer/test_tokenizer_pairs.cpp),
// one case per line:
//   {"text": a, "text_pair": b, "ids": [...]}                       encode(a, b): <s> a </s></s> b </s>
//   {"text": a, "text_pair": b, "max_length": n, "direction": d, "ids": [...]}
//        truncation=longest_first, max_length=n, direction "Right"|"Left"
//   {"text": a, "max_length": n, "direction": "Left", "ids": [...]}  one text, left truncation
// Deterministic: fixed seed, fixed input files.
import { Tokenizer } from '@anush008/tokenizers';
import fs from 'node:fs';
import path from 'node:path';

import { rng, root, tokPath } from './golden_util.mjs';

const tweets = fs.readFileSync(path.resolve(root, '../shared/data/tweeteval/irony/test_text.txt'), 'utf8')
  .split('\n').filter((l) => l.length > 0).slice(0, 120);

const rand = rng(20261130);
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

const plain = Tokenizer.fromFile(tokPath);
const lines = [];
async function pair(a, b) {
  const e = await plain.encode(a, b);
  lines.push({ text: a, text_pair: b, ids: Array.from(e.getIds()) });
}
async function truncated(a, b, maxLength, direction) {
  const t = Tokenizer.fromFile(tokPath);
  t.setTruncation(maxLength, { strategy: 'LongestFirst', direction: direction.toLowerCase() });
  const e = b === null ? await t.encode(a) : await t.encode(a, b);
  const line = { text: a };
  if (b !== null) line.text_pair = b;
  Object.assign(line, { max_length: maxLength, direction, ids: Array.from(e.getIds()) });
  lines.push(line);
}

const hand = [
  ['a', 'b'], ['', ''], ['', 'b'], ['a', ''], [' ', ' '], ['Hello world', 'How are you?'],
  ['A man is playing a guitar.', 'A man plays an instrument.'], ['<s>', '</s>'], ['x <mask> y', 'z'],
  ['The cat sat on the mat.', 'The mat was sat on by the cat.'], ['日本語', 'emoji 😀👍🏽'],
  ['line\nbreak', 'tab\there'], ['don\'t', 'I\'M'],
];
for (const [a, b] of hand) await pair(a, b);
for (let i = 0; i + 1 < 40; i += 2) await pair(tweets[i], tweets[i + 1]);
// Truncation: every split case (one side short, both long, odd/even budgets), both directions.
for (const [a, b] of hand.slice(5)) for (const n of [5, 6, 7, 8, 9, 12]) for (const d of ['Right', 'Left']) await truncated(a, b, n, d);
for (let i = 0; i < 60; ++i) {
  const a = pick(tweets), b = pick(tweets), n = 5 + Math.floor(rand() * 60), d = rand() < 0.5 ? 'Right' : 'Left';
  await truncated(a, b, n, d);
}
for (let i = 0; i < 30; ++i) await truncated(pick(tweets), null, 3 + Math.floor(rand() * 30), 'Left');

fs.writeFileSync(path.join(root, 'tests/data/tokenizer/pairs.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
console.log(`wrote ${lines.length} pair cases`);
