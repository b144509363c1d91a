#!/usr/bin/python3
"""Average the F32 model.safetensors of several checkpoint folders (uniform; docs/quality.md, the eighteenth session).
Usage: tools/average_checkpoints.py OUT CK1 CK2 ...   (config and tokenizer files copied from CK1)"""
import json, struct, sys, os, shutil
import numpy as np
def read(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8+n]); base = 8+n
    out = {}
    for k, v in h.items():
        if k == '__metadata__': continue
        s, e = v['data_offsets']; assert v['dtype'] == 'F32'
        out[k] = np.frombuffer(b[base+s:base+e], dtype=np.float32).reshape(v['shape'])
    return out, h.get('__metadata__')
out = sys.argv[1]; cks = sys.argv[2:]
acc = None
for c in cks:
    t, meta = read(os.path.join(c, 'model.safetensors'))
    if acc is None: acc = {k: v.astype(np.float64) for k, v in t.items()}
    else:
        for k in acc: acc[k] += t[k]
os.makedirs(out, exist_ok=True)
keys = sorted(acc); hdr = {}; off = 0; blobs = []
for k in keys:
    a = (acc[k] / len(cks)).astype(np.float32); blobs.append(a.tobytes())
    hdr[k] = {'dtype': 'F32', 'shape': list(a.shape), 'data_offsets': [off, off + a.nbytes]}; off += a.nbytes
if meta: hdr['__metadata__'] = meta
hb = json.dumps(hdr).encode(); hb += b' ' * ((8 - len(hb) % 8) % 8)
with open(os.path.join(out, 'model.safetensors'), 'wb') as f:
    f.write(struct.pack('<Q', len(hb))); f.write(hb); [f.write(x) for x in blobs]
for fn in os.listdir(cks[0]):
    if fn.startswith(('optimizer', 'scheduler', 'rng', 'trainer_state', 'training_args', 'model.safetensors')): continue
    if os.path.isfile(os.path.join(cks[0], fn)): shutil.copy(os.path.join(cks[0], fn), out)
