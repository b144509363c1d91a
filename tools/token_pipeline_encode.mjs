// Encodes texts as transformers' TokenClassificationPipeline.preprocess does for a fast
// tokenizer (add special tokens, special_tokens_mask, offsets in characters = code points),
// with Hugging Face's Rust tokenizers (npm @anush008/tokenizers; encode_char_offsets).
// Also decodes lists of token strings with the tokenizer's decoder (convert_tokens_to_string
// of a fast tokenizer: for roberta, tokenizers' ByteLevel decoder).
// stdin: {"tokenizer": "path/to/tokenizer.json", "texts": [...], "decode": [[token, ...], ...]}
// stdout: {"encodings": [{"ids", "tokens", "offsets", "special_tokens_mask"}, ...],
//          "decoded": [string, ...]}
// Used by tools/token_pipeline_ref.py. Needs `npm ci --prefix tools` once.
import { Tokenizer } from '@anush008/tokenizers';

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const tok = Tokenizer.fromFile(req.tokenizer);
const encodings = [];
for (const t of req.texts ?? []) {
  const enc = await tok.encode(t);
  encodings.push({
    ids: Array.from(enc.getIds()),
    tokens: enc.getTokens(),
    offsets: enc.getOffsets(),
    special_tokens_mask: Array.from(enc.getSpecialTokensMask()),
  });
}
const decoder = tok.getDecoder();
const decoded = (req.decode ?? []).map((tokens) => decoder.decode(tokens));
process.stdout.write(JSON.stringify({ encodings, decoded }) + '\n');
