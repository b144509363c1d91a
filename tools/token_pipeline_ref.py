#!/usr/bin/env python3
"""Reference answers for src/model/token_pipeline.cpp: transformers' TokenClassificationPipeline
post-processing, restated in plain Python (no numpy / transformers here), fed hand-built cases.

Source: huggingface/transformers src/transformers/pipelines/token_classification.py, v4.36 and
later (group_sub_entities splits on the first '-' since PR #27325; single chunk, no stride, not
pre-split): postprocess (numpy softmax of the float32
logits, filter of ignore_labels), gather_pre_entities (special tokens skipped; the fallback
is_subword heuristic `start > 0 and " " not in sentence[start-1:start+1]`, because a
byte-level BPE tokenizer has no continuing_subword_prefix; the unk token takes its text
slice and is never a subword), aggregate, aggregate_word, aggregate_words,
group_sub_entities (`entity.split("-", 1)[-1]`), get_tag, group_entities.
convert_tokens_to_string of a fast tokenizer is its decoder's decode: tokenizers' ByteLevel
decoder (tokenizers/src/pre_tokenizers/byte_level.rs, decode_chain): a token whose
characters all map to bytes becomes those bytes, any other token its own UTF-8 bytes; the
result is String::from_utf8_lossy (= bytes.decode("utf-8", "replace")). Every token list
decoded here is also decoded by HF's own decoder (npm tokenizers, getDecoder().decode) and
must agree.

numpy's float32 arithmetic is emulated by rounding to float32 after each operation:
softmax max / subtract / exp / sum (numpy's pairwise sum; K = 7 < 8 makes it a plain loop) /
divide; np.nanmean sums in float32 (pairwise for a 1-D list, row after row for axis=0) and
divides in float64 (float32 / intp promotes), then rounds to float32. exp here is correctly
rounded; numpy's SIMD expf may differ by an ulp.

Ids, tokens (convert_ids_to_tokens) and character offsets come from HF's Rust tokenizers via
tools/token_pipeline_encode.mjs on assets/tokenizer/roberta-base/tokenizer.json.
Writes tests/data/task_metrics/token_pipeline_cases.json.
Run: npm ci --prefix tools && python3 tools/token_pipeline_ref.py
"""
import json
import math
import os
import struct
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENIZER = 'assets/tokenizer/roberta-base/tokenizer.json'
UNK_ID = 3
ID2LABEL = ['O', 'B-PER', 'I-PER', 'B-ORG', 'I-ORG', 'B-LOC', 'I-LOC']
STRATEGIES = ['none', 'simple', 'first', 'average', 'max']


def f32(x):
    return struct.unpack('f', struct.pack('f', x))[0]


def bytes_to_unicode():  # GPT-2's byte <-> character table
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + list(range(ord('®'), ord('ÿ') + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


CHAR_TO_BYTE = bytes_to_unicode()


DECODED = []  # every (tokens, result) computed here; main() checks them against HF's decoder


def convert_tokens_to_string(tokens):
    result = byte_level_decode(tokens)
    DECODED.append((list(tokens), result))
    return result


def byte_level_decode(tokens):
    out = bytearray()
    for t in tokens:
        if all(c in CHAR_TO_BYTE for c in t):
            out.extend(CHAR_TO_BYTE[c] for c in t)
        else:
            out.extend(t.encode('utf-8'))
    return out.decode('utf-8', errors='replace')


def softmax_f32(row):
    m = max(row)
    e = [f32(math.exp(f32(z - m))) for z in row]
    s = 0.0
    for v in e:
        s = f32(s + v)
    return [f32(v / s) for v in e]


def argmax(v):  # np.argmax: the first maximum
    best = 0
    for i in range(1, len(v)):
        if v[i] > v[best]:
            best = i
    return best


def pairwise_sum_f32(a):
    """numpy's FLOAT_pairwise_sum (loops_utils.h.src), which np.sum adds to the identity 0."""
    n = len(a)
    if n < 8:
        res = 0.0
        for v in a:
            res = f32(res + v)
        return res
    if n <= 128:
        r = list(a[:8])
        i = 8
        while i < n - (n % 8):
            r = [f32(r[j] + a[i + j]) for j in range(8)]
            i += 8
        res = f32(f32(f32(r[0] + r[1]) + f32(r[2] + r[3])) + f32(f32(r[4] + r[5]) + f32(r[6] + r[7])))
        for v in a[i:]:
            res = f32(res + v)
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return f32(pairwise_sum_f32(a[:n2]) + pairwise_sum_f32(a[n2:]))


def nanmean_f32(values, pairwise):
    """np.nanmean of float32 values: NaNs become 0 in a float32 sum and leave the count; the sum
    is divided in float64 and rounded to float32. A 1-D nanmean sums pairwise; nanmean(axis=0)
    of a stacked (tokens, K) array adds row after row."""
    zeroed = [0.0 if math.isnan(v) else v for v in values]
    cnt = sum(1 for v in values if not math.isnan(v))
    if pairwise:
        tot = f32(0.0 + pairwise_sum_f32(zeroed))
    else:
        tot = 0.0
        for v in zeroed:
            tot = f32(tot + v)
    return f32(tot / cnt) if cnt else float('nan')


def gather_pre_entities(sentence, ids, tokens, scores, offsets, special):
    pre = []
    for idx, token_scores in enumerate(scores):
        if special[idx]:
            continue
        word = tokens[idx]  # convert_ids_to_tokens
        start, end = offsets[idx]
        word_ref = sentence[start:end]
        is_subword = start > 0 and ' ' not in sentence[start - 1:start + 1]
        if ids[idx] == UNK_ID:
            word, is_subword = word_ref, False
        pre.append({'word': word, 'scores': token_scores, 'start': start, 'end': end, 'index': idx,
                    'is_subword': is_subword})
    return pre


def aggregate_word(entities, strategy, id2label):
    word = convert_tokens_to_string([e['word'] for e in entities])
    if strategy == 'first':
        scores = entities[0]['scores']
        idx = argmax(scores)
        score = scores[idx]
    elif strategy == 'max':
        best = entities[0]
        for e in entities[1:]:  # Python's max(): the first entity with the largest max score
            if max(e['scores']) > max(best['scores']):
                best = e
        idx = argmax(best['scores'])
        score = best['scores'][idx]
    else:  # average
        avg = [nanmean_f32([e['scores'][k] for e in entities], pairwise=False) for k in range(len(id2label))]
        idx = argmax(avg)
        score = avg[idx]
    return {'entity': id2label[idx], 'score': score, 'word': word, 'start': entities[0]['start'],
            'end': entities[-1]['end']}


def aggregate_words(pre, strategy, id2label):
    words, group = [], None
    for e in pre:
        if group is None:
            group = [e]
        elif e['is_subword']:
            group.append(e)
        else:
            words.append(aggregate_word(group, strategy, id2label))
            group = [e]
    if group is not None:
        words.append(aggregate_word(group, strategy, id2label))
    return words


def get_tag(name):
    if name.startswith('B-'):
        return 'B', name[2:]
    if name.startswith('I-'):
        return 'I', name[2:]
    return 'I', name


def group_sub_entities(entities):
    return {'entity_group': entities[0]['entity'].split('-', 1)[-1],
            'score': nanmean_f32([e['score'] for e in entities], pairwise=True),
            'word': convert_tokens_to_string([e['word'] for e in entities]),
            'start': entities[0]['start'], 'end': entities[-1]['end']}


def group_entities(entities):
    groups, disagg = [], []
    for e in entities:
        if not disagg:
            disagg.append(e)
            continue
        bi, tag = get_tag(e['entity'])
        _, last_tag = get_tag(disagg[-1]['entity'])
        if tag == last_tag and bi != 'B':
            disagg.append(e)
        else:
            groups.append(group_sub_entities(disagg))
            disagg = [e]
    if disagg:
        groups.append(group_sub_entities(disagg))
    return groups


def postprocess(case, strategy, ignore_labels=('O',)):
    id2label = case.get('id2label', ID2LABEL)
    scores = [softmax_f32(row) for row in case['logits']]
    pre = gather_pre_entities(case['text'], case['ids'], case['tokens'], scores, case['offsets'],
                              case['special_tokens_mask'])
    if strategy in ('none', 'simple'):
        entities = []
        for p in pre:
            idx = argmax(p['scores'])
            entities.append({'entity': id2label[idx], 'score': p['scores'][idx], 'index': p['index'],
                             'word': p['word'], 'start': p['start'], 'end': p['end']})
    else:
        entities = aggregate_words(pre, strategy, id2label)
    if strategy != 'none':
        entities = group_entities(entities)
    return [e for e in entities if e.get('entity') not in ignore_labels and e.get('entity_group') not in ignore_labels]


# Hand-chosen logits: one row per non-special token, {label: logit}; other labels get a small
# fixed pattern so that no two labels tie.
def row(j, labels, id2label=ID2LABEL):
    base = [0.25 * ((3 * j + 5 * k) % 7) - 1.0 for k in range(len(id2label))]
    for name, v in labels.items():
        base[id2label.index(name.replace('_', '-'))] = v
    return base


# Labels with more than one '-' and without a B-/I- prefix: get_tag keeps "MONEY" and "X-Y"
# whole, group_sub_entities splits on the first '-' only ("tax-amount", "Y").
ODD_LABELS = ['O', 'B-tax-amount', 'I-tax-amount', 'B-date', 'I-date', 'MONEY', 'X-Y']


O = {'O': 6.0}
CASES = [
    # name, text, per-token rows (non-special tokens, in order), {token position: replacement id}
    ('entity_at_end', 'My name is Wolfgang and I live in Berlin',
     [O, O, O, {'B_PER': 7.5}, O, O, O, {'O': 2.0}, {'B_LOC': 5.0, 'I_LOC': 4.2}], {}),
    ('subwords_and_punctuation', 'Angela Merkel visited New York City.',
     [{'B_PER': 5.0}, {'I_ORG': 3.1, 'I_PER': 2.9, 'B_PER': 1.0}, {'I_PER': 4.4}, O,
      {'B_LOC': 3.3}, {'I_LOC': 4.0, 'I_ORG': 3.5}, {'I_LOC': 2.2, 'B_LOC': 2.0}, {'O': 3.0, 'I_LOC': 2.8}], {}),
    ('unicode_words', 'Zoë Saldaña flew to Köln',
     [{'B_PER': 4.0}, {'B_PER': 3.0, 'I_PER': 2.5}, {'I_PER': 3.6}, {'I_PER': 5.0}, {'I_PER': 2.0, 'O': 1.9},
      {'O': 2.5, 'I_PER': 2.4}, {'I_PER': 4.1}, O, O, {'B_LOC': 4.8}, {'I_LOC': 3.9, 'B_LOC': 3.0},
      {'O': 3.5, 'I_LOC': 3.4}], {}),
    ('adjacent_b_restarts', 'Mercedes Benz and BMW',
     [{'B_ORG': 6.0}, {'I_ORG': 5.5}, {'B_ORG': 4.0, 'I_ORG': 3.9}, O, {'B_ORG': 6.5}], {}),
    ('partial_byte_tokens', '東京 is in Japan',
     [{'B_LOC': 3.0}, {'I_LOC': 2.5}, {'I_LOC': 3.2}, {'I_LOC': 3.7, 'O': 3.0}, O, O, {'B_LOC': 7.0}], {}),
    ('emoji_inside_entity', 'I ❤️ NYC 🗽 Bob',
     [O, O, O, O, {'B_LOC': 5.5}, {'I_LOC': 1.5, 'O': 1.4}, {'I_LOC': 1.6}, {'I_LOC': 1.7}, {'B_PER': 3.3}], {}),
    ('all_outside', 'My name is Wolfgang and I live in Berlin', [O] * 9, {}),
    ('unk_token', 'Zoë Saldaña flew to Köln',  # <unk> in place of "Ã¶": its word is the text slice "ö"
     [O, O, O, O, O, O, O, O, O, {'B_LOC': 4.8}, {'I_LOC': 3.9}, {'I_LOC': 3.3, 'O': 3.2}], {'ids': {11: UNK_ID}}),
    # Offsets as a tokenizer without trim_offsets gives them: "ĠBob" starts AT its space, so
    # only the second half of the heuristic (the token's own first character) says "not a subword".
    ('untrimmed_offsets', 'Hi Bob Smithers',
     [O, {'B_PER': 4.0}, {'I_PER': 3.0}, {'I_PER': 2.0, 'B_PER': 1.9}, {'O': 2.2, 'I_PER': 2.1}],
     {'offsets': {2: [2, 6], 3: [6, 9]}}),
    ('label_names_with_dashes', 'Pay 30 dollars tax by May 5 now',
     [O, {'B_tax_amount': 3.0}, {'I_tax_amount': 2.7}, {'MONEY': 2.0}, {'MONEY': 1.5, 'X_Y': 1.4},
      {'B_date': 4.0}, {'I_date': 3.0}, {'X_Y': 2.6}], {'id2label': ODD_LABELS}),
]


def hf_tokenizers(request):
    request = dict(request, tokenizer=os.path.join(ROOT, TOKENIZER))
    run = subprocess.run(['node', os.path.join(ROOT, 'tools', 'token_pipeline_encode.mjs')],
                         input=json.dumps(request), capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(run.stdout)


def main():
    encodings = hf_tokenizers({'texts': [c[1] for c in CASES]})['encodings']
    out_cases = []
    for (name, text, rows, replace), e in zip(CASES, encodings):
        T = len(e['ids'])
        inner = [i for i in range(T) if not e['special_tokens_mask'][i]]
        assert len(inner) == len(rows), (name, len(inner), len(rows), e['tokens'])
        id2label = replace.get('id2label', ID2LABEL)
        logits = [[f32(v) for v in row(i, {'O': -2.0}, id2label)] for i in range(T)]  # special tokens: anything
        for j, (i, labels) in enumerate(zip(inner, rows)):
            logits[i] = [f32(v) for v in row(j, labels, id2label)]
        ids, tokens, offsets = list(e['ids']), list(e['tokens']), [list(o) for o in e['offsets']]
        for pos, new_id in replace.get('ids', {}).items():
            ids[pos] = new_id
            tokens[pos] = '<unk>'
        for pos, new_offsets in replace.get('offsets', {}).items():
            offsets[pos] = new_offsets
        case = {'name': name, 'text': text, 'ids': ids, 'tokens': tokens, 'offsets': offsets,
                'special_tokens_mask': e['special_tokens_mask'], 'ids_from_tokenizer': 'ids' not in replace,
                'logits': logits}
        if 'id2label' in replace:
            case['id2label'] = id2label
        case['expected'] = {s: postprocess(case, s) for s in STRATEGIES}
        case['expected_ignoring_nothing'] = {s: postprocess(case, s, ignore_labels=()) for s in STRATEGIES}
        out_cases.append(case)
    # The ByteLevel restatement above must agree with HF's decoder on every token list it saw,
    # including the already-decoded words that the word strategies decode a second time.
    decoded = hf_tokenizers({'decode': [t for t, _ in DECODED]})['decoded']
    for (tokens, ours), theirs in zip(DECODED, decoded):
        assert ours == theirs, (tokens, ours, theirs)
    print('convert_tokens_to_string agrees with HF tokenizers on', len(DECODED), 'token lists')
    out = {'generator': 'tools/token_pipeline_ref.py', 'tokenizer': TOKENIZER, 'id2label': ID2LABEL,
           'source': 'transformers pipelines/token_classification.py (v4.36+)', 'cases': out_cases}
    path = os.path.join(ROOT, 'tests', 'data', 'task_metrics', 'token_pipeline_cases.json')
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write('\n')
    print('wrote', path)


if __name__ == '__main__':
    main()
