// Tokenizes texts with Hugging Face's Rust `tokenizers` (npm @anush008/tokenizers), the
// implementation the golden ids are defined by.
// Input on stdin: {"tokenizer": "path/to/tokenizer.json", "texts": [...], "max_length": 128}
// (max_length optional: truncation to that many tokens INCLUDING <s> and </s>, as
// HF's tokenizer(..., truncation=True, max_length=N) does).
// Output on stdout: {"ids": [[...], ...]} — one array per text, no padding.
// With "text_pairs": [...] (one per text) each row is tokenizer(text, text_pair) (longest_first
// truncation to max_length), and the output adds "type_ids": [[...], ...] (token_type_ids).
// Needs `npm install` in tools/ once (tools/package.json pins the version).
import { Tokenizer } from '@anush008/tokenizers';

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
if (!req.tokenizer || !Array.isArray(req.texts)) {
  console.error('hf_tokenize: expected {"tokenizer": path, "texts": [...]} on stdin');
  process.exit(2);
}
const tok = Tokenizer.fromFile(req.tokenizer);
if (req.max_length) tok.setTruncation(req.max_length);
const ids = [];
const typeIds = [];
for (let i = 0; i < req.texts.length; ++i) {
  const enc = req.text_pairs ? await tok.encode(req.texts[i], req.text_pairs[i]) : await tok.encode(req.texts[i]);
  ids.push(Array.from(enc.getIds()));
  typeIds.push(Array.from(enc.getTypeIds()));
}
process.stdout.write(JSON.stringify(req.text_pairs ? { ids, type_ids: typeIds } : { ids }) + '\n');
