// Tokenizer variants for the differential sweep (tools/tokenizer_sweep.sh), none committed:
// models trained by HF's own library (npm `tokenizers`: BPE, WordPiece, Unigram, WordLevel
// trainers) on a text corpus that is not the tweets, then tokenizer.json documents that combine
// them with the components and options the committed fixtures do not cover (BertNormalizer
// options, Metaspace schemes, each Split behaviour with and without invert, Punctuation and
// Digits, Replace with a regex, added-token flags, TemplateProcessing with type ids, BPE options).
//
//   node tools/make_sweep_tokenizers.mjs CORPUS.txt OUT_DIR
//
// Writes OUT_DIR/<name>/tokenizer.json per variant. Deterministic for a given corpus.
import {
  BPE, Tokenizer, Unigram, WordLevel, WordPiece, bertPreTokenizer, byteLevelPreTokenizer, whitespacePreTokenizer,
} from '@anush008/tokenizers';
import fs from 'node:fs';
import path from 'node:path';

const [corpus, out] = process.argv.slice(2);
if (!corpus || !out) {
  console.error('usage: node make_sweep_tokenizers.mjs CORPUS.txt OUT_DIR');
  process.exit(2);
}
fs.mkdirSync(out, { recursive: true });

function train(model, preTokenizer) {
  const t = new Tokenizer(model);
  t.setPreTokenizer(preTokenizer);
  t.train([corpus]);
  const file = path.join(out, '_trained.json');
  t.save(file);
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.unlinkSync(file);
  return doc.model;
}
const wordpiece = train(WordPiece.empty(), bertPreTokenizer());
const bpe = train(BPE.empty(), whitespacePreTokenizer());
const unigram = train(Unigram.empty(), whitespacePreTokenizer());
const wordlevel = train(WordLevel.empty(), whitespacePreTokenizer());

const added = (content, id, o = {}) => ({
  id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true, ...o,
});
const special = (id) => ({ SpecialToken: { id, type_id: 0 } });
const seq = (id, typeId) => ({ Sequence: { id, type_id: typeId } });
const template = (cls, sep, ids, typeB = 1) => ({
  type: 'TemplateProcessing',
  single: [special(cls), seq('A', 0), special(sep)],
  pair: [special(cls), seq('A', 0), special(sep), seq('B', typeB), { SpecialToken: { id: sep, type_id: typeB } }],
  special_tokens: { [cls]: { id: cls, ids: [ids[cls]], tokens: [cls] }, [sep]: { id: sep, ids: [ids[sep]], tokens: [sep] } },
});
const write = (name, doc) => {
  fs.mkdirSync(path.join(out, name), { recursive: true });
  fs.writeFileSync(path.join(out, name, 'tokenizer.json'), JSON.stringify({ version: '1.0', truncation: null, padding: null, ...doc }));
};

// WordPiece: the trainer's vocabulary with BERT's specials appended.
const wpVocab = { ...wordpiece.vocab };
for (const t of ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']) if (!(t in wpVocab)) wpVocab[t] = Object.keys(wpVocab).length;
const wpSpecials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map((t) => added(t, wpVocab[t]));
const wpModel = (o = {}) => ({ type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab: wpVocab, ...o });
const bert = (normalizer, o = {}) => ({
  added_tokens: wpSpecials, normalizer, pre_tokenizer: { type: 'BertPreTokenizer' },
  post_processor: template('[CLS]', '[SEP]', wpVocab), decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
  model: wpModel(), ...o,
});
const bn = (clean_text, handle_chinese_chars, strip_accents, lowercase) =>
  ({ type: 'BertNormalizer', clean_text, handle_chinese_chars, strip_accents, lowercase });
write('wp-bn-default', bert(bn(true, true, null, true)));
write('wp-bn-cased-nostrip', bert(bn(true, true, null, false)));
write('wp-bn-strip-cased', bert(bn(true, true, true, false)));
write('wp-bn-nostrip-lower', bert(bn(true, true, false, true)));
write('wp-bn-raw', bert(bn(false, false, null, false)));
write('wp-bn-noclean-chinese', bert(bn(false, true, true, true), { model: wpModel({ max_input_chars_per_word: 8 }) }));
// Added tokens with each flag, on a lower-casing normalizer (normalized tokens are matched
// after it, the others before).
const nWp = Object.keys(wpVocab).length;
write('wp-added-flags', bert(bn(true, true, null, true), {
  added_tokens: [...wpSpecials,
    added('GNU', nWp + 0, { special: false }),
    added('license', nWp + 1, { special: false, normalized: true, single_word: true }),
    added('<ent>', nWp + 2, { special: false, lstrip: true, rstrip: true }),
    added('ation', nWp + 3, { special: false, normalized: true }),
    added('[MASK2]', nWp + 4, { lstrip: true, single_word: true }),
    added('日本', nWp + 5, { special: false, normalized: true, rstrip: true }),
    added(' free', nWp + 6, { special: false, normalized: false, single_word: true })],
}));
// Each Split behaviour, with and without invert, before WordPiece.
for (const behavior of ['Removed', 'Isolated', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous']) {
  for (const invert of [false, true]) {
    write(`wp-split-${behavior.toLowerCase()}${invert ? '-invert' : ''}`, bert(bn(true, true, null, true), {
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Split', pattern: { Regex: '\\s+|[aeiou]{2}|\\p{P}' }, behavior, invert },
        { type: 'Split', pattern: { String: 'e' }, behavior, invert }] },
    }));
  }
}
for (const behavior of ['Removed', 'Isolated', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous']) {
  write(`wp-punct-${behavior.toLowerCase()}`, bert(bn(true, true, null, true), {
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Punctuation', behavior },
      { type: 'Digits', individual_digits: behavior === 'Isolated' }] },
  }));
}
write('wp-replace-regex', bert({ type: 'Sequence', normalizers: [
  { type: 'Replace', pattern: { Regex: '\\p{Lu}{2,}' }, content: 'UPPER' },
  { type: 'Replace', pattern: { Regex: '[0-9]' }, content: '' },
  { type: 'Replace', pattern: { String: 'the' }, content: 'ðe' },
  { type: 'Replace', pattern: { Regex: '\\s{2,}' }, content: ' ' },
  { type: 'NFKD' }, { type: 'StripAccents' }, { type: 'Lowercase' }, { type: 'Strip', strip_left: true, strip_right: true }] }, {
  pre_tokenizer: { type: 'Whitespace' },
}));
// TemplateProcessing whose pair gives the second sequence type 2 and an extra special.
write('wp-template-types', bert(bn(true, true, null, true), {
  post_processor: {
    type: 'TemplateProcessing',
    single: [special('[CLS]'), seq('A', 0), special('[SEP]')],
    pair: [special('[CLS]'), seq('A', 0), { SpecialToken: { id: '[SEP]', type_id: 1 } }, seq('B', 2),
      { SpecialToken: { id: '[MASK]', type_id: 2 } }, { SpecialToken: { id: '[SEP]', type_id: 3 } }],
    special_tokens: Object.fromEntries(['[CLS]', '[SEP]', '[MASK]'].map((t) => [t, { id: t, ids: [wpVocab[t]], tokens: [t] }])),
  },
}));

// Unigram with each Metaspace scheme, split and not.
const uniVocab = [...unigram.vocab];
const uniUnk = unigram.unk_id ?? 0;
for (const scheme of ['always', 'first', 'never']) {
  for (const split of [true, false]) {
    write(`uni-metaspace-${scheme}${split ? '' : '-nosplit'}`, {
      added_tokens: [added(uniVocab[uniUnk][0], uniUnk)],
      normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }] },
      pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: scheme, split },
      post_processor: null,
      decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: scheme, split },
      model: { type: 'Unigram', unk_id: uniUnk, vocab: uniVocab, byte_fallback: false },
    });
  }
}

// BPE: the trainer's model with its options varied.
const bpeVocab = { ...bpe.vocab };
for (const t of ['<unk>', '<s>', '</s>']) if (!(t in bpeVocab)) bpeVocab[t] = Object.keys(bpeVocab).length;
const bpeDoc = (model, o = {}) => ({
  added_tokens: ['<unk>', '<s>', '</s>'].map((t) => added(t, bpeVocab[t])),
  normalizer: { type: 'NFC' }, pre_tokenizer: { type: 'Whitespace' },
  post_processor: { type: 'BertProcessing', sep: ['</s>', bpeVocab['</s>']], cls: ['<s>', bpeVocab['<s>']] },
  decoder: { type: 'BPEDecoder', suffix: '' },
  model: { ...bpe, vocab: bpeVocab, unk_token: '<unk>', dropout: null, ...model }, ...o,
});
write('bpe-unk-fused', bpeDoc({ fuse_unk: true }));
write('bpe-unk-unfused', bpeDoc({ fuse_unk: false }));
write('bpe-ignore-merges', bpeDoc({ ignore_merges: true }));
write('bpe-no-unk', bpeDoc({ unk_token: null }));
write('bpe-bytelevel-digits', bpeDoc({}, {
  pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true },
    { type: 'Punctuation', behavior: 'Contiguous' }, { type: 'WhitespaceSplit' }] },
  post_processor: { type: 'RobertaProcessing', sep: ['</s>', bpeVocab['</s>']], cls: ['<s>', bpeVocab['<s>']],
    trim_offsets: true, add_prefix_space: true },
}));

// WordLevel with Whitespace and the digit / punctuation splitters.
const wlVocab = { ...wordlevel.vocab };
for (const t of ['[UNK]', '[CLS]', '[SEP]']) if (!(t in wlVocab)) wlVocab[t] = Object.keys(wlVocab).length;
write('wordlevel-plain', {
  added_tokens: ['[UNK]', '[CLS]', '[SEP]'].map((t) => added(t, wlVocab[t])),
  normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'Lowercase' }] },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Whitespace' }, { type: 'Digits', individual_digits: false }] },
  post_processor: template('[CLS]', '[SEP]', wlVocab),
  decoder: null,
  model: { type: 'WordLevel', vocab: wlVocab, unk_token: '[UNK]' },
});
// Second batch: prefixes, replacements and the byte-level / decoder / template options.
const rekey = (vocab, f) => Object.fromEntries(Object.entries(vocab).map(([k, v]) => [f(k), v]));
write('wp-prefix-at', bert(bn(true, true, null, true), {
  decoder: { type: 'WordPiece', prefix: '@@', cleanup: false },
  model: wpModel({ continuing_subword_prefix: '@@', vocab: rekey(wpVocab, (k) => (k.startsWith('##') ? '@@' + k.slice(2) : k)) }),
}));
write('wp-maxchars-5', bert(bn(true, true, null, true), { model: wpModel({ max_input_chars_per_word: 5 }) }));
write('wp-split-literal', bert(bn(true, true, null, false), {
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { String: '.' }, behavior: 'Isolated', invert: false },
    { type: 'Split', pattern: { String: '(' }, behavior: 'MergedWithNext', invert: false },
    { type: 'CharDelimiterSplit', delimiter: ' ' }, { type: 'Punctuation', behavior: 'Isolated' }] },
  normalizer: { type: 'Sequence', normalizers: [
    { type: 'Replace', pattern: { String: '*' }, content: '' }, { type: 'Replace', pattern: { Regex: '[\\[\\]]' }, content: '|' },
    { type: 'Prepend', prepend: '>' }, { type: 'NFKD' }, { type: 'Lowercase' }] },
}));
write('wp-template-multi', bert(bn(true, true, null, true), {
  post_processor: {
    type: 'TemplateProcessing',
    single: [special('[CLS]'), seq('A', 0), special('[SEP]')],
    pair: [special('[CLS]'), seq('A', 0), special('[SEP]'), seq('B', 1), { SpecialToken: { id: '[SEP]', type_id: 1 } }],
    special_tokens: { '[CLS]': { id: '[CLS]', ids: [wpVocab['[CLS]'], wpVocab['[MASK]']], tokens: ['[CLS]', '[MASK]'] },
      '[SEP]': { id: '[SEP]', ids: [wpVocab['[SEP]']], tokens: ['[SEP]'] } },
  },
  decoder: { type: 'Sequence', decoders: [{ type: 'WordPiece', prefix: '##', cleanup: true },
    { type: 'Strip', content: ' ', start: 1, stop: 1 }, { type: 'Replace', pattern: { String: 'e' }, content: 'E' }] },
}));
const uniUnderscore = uniVocab.map(([p, sc]) => [p.replaceAll('▁', '_'), sc]);
write('uni-metaspace-underscore', {
  added_tokens: [added(uniVocab[uniUnk][0], uniUnk)],
  normalizer: null,
  pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true },
    { type: 'Metaspace', replacement: '_', prepend_scheme: 'first', split: true }] },
  post_processor: null,
  decoder: { type: 'Sequence', decoders: [{ type: 'Metaspace', replacement: '_', prepend_scheme: 'first', split: true },
    { type: 'Fuse' }] },
  model: { type: 'Unigram', unk_id: uniUnk, vocab: uniUnderscore, byte_fallback: true },
});
// Byte-level BPE trained by HF on the corpus, with each ByteLevel option.
const bl = train(BPE.empty(), byteLevelPreTokenizer(false, true));
const blVocab = { ...bl.vocab };
for (const t of ['<s>', '</s>']) if (!(t in blVocab)) blVocab[t] = Object.keys(blVocab).length;
const byteLevel = (aps, trim, useRegex = true) => ({ type: 'ByteLevel', add_prefix_space: aps, trim_offsets: trim, use_regex: useRegex });
const blDoc = (pre, post) => ({
  added_tokens: ['<s>', '</s>'].map((t) => added(t, blVocab[t])),
  normalizer: null, pre_tokenizer: pre, post_processor: post, decoder: byteLevel(true, true),
  model: { ...bl, vocab: blVocab, unk_token: null, dropout: null },
});
const roberta = (trim, aps) => ({ type: 'RobertaProcessing', sep: ['</s>', blVocab['</s>']], cls: ['<s>', blVocab['<s>']], trim_offsets: trim, add_prefix_space: aps });
write('bl-roberta-notrim', blDoc(byteLevel(true, true), roberta(false, true)));
write('bl-roberta-noprefix', blDoc(byteLevel(false, true), roberta(true, false)));
write('bl-bytelevel-post-notrim', blDoc(byteLevel(false, false), byteLevel(false, false)));
write('bl-noregex-template', blDoc({ type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' }, byteLevel(true, true, false)] },
  template('<s>', '</s>', blVocab)));
write('bl-digits-punct', blDoc({ type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true },
  { type: 'Punctuation', behavior: 'MergedWithNext' }, byteLevel(true, true)] }, byteLevel(true, true)));
// The same model with the 256 byte symbols the trainer left out appended (as every real
// byte-level vocabulary holds them): the byte-level fast path takes these (it leaves a
// vocabulary without them to the pipeline). add_prefix_space=true only: the fast path's
// encode_words puts a space before each word whatever the file says (docs/tokenizer.md).
const fullVocab = { ...blVocab };
const byteSymbols = [];
for (let b = 0; b < 256; ++b) {
  const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  if (printable) byteSymbols[b] = String.fromCodePoint(b);
}
let shifted = 0;
for (let b = 0; b < 256; ++b) if (byteSymbols[b] === undefined) byteSymbols[b] = String.fromCodePoint(256 + shifted++);
for (const sym of byteSymbols) if (!(sym in fullVocab)) fullVocab[sym] = Object.keys(fullVocab).length;
const fullDoc = (pre, post) => ({
  ...blDoc(pre, post), added_tokens: ['<s>', '</s>'].map((t) => added(t, fullVocab[t])),
  model: { ...bl, vocab: fullVocab, unk_token: null, dropout: null },
});
const fullRoberta = (trim, aps) => ({ ...roberta(trim, aps), sep: ['</s>', fullVocab['</s>']], cls: ['<s>', fullVocab['<s>']] });
write('bl-full-roberta', fullDoc(byteLevel(true, true), fullRoberta(true, true)));
write('bl-full-roberta-notrim', fullDoc(byteLevel(true, true), fullRoberta(false, true)));
write('bl-full-bytelevel-post-notrim', fullDoc(byteLevel(true, false), byteLevel(true, false)));
console.log(`wrote ${fs.readdirSync(out).length} variants to ${out}`);
