#!/usr/bin/env bash
# Instructions and multiply-accumulates of ONE roberta forward on the arm64 build, counted under
# qemu-user (tools/arm64_insn_count.py), for docs/arm64.md. A roberta-base-wide model with
# LAYERS layers (default 1) runs `roberta bench infer` with --iters 1 and with --iters 2; the
# difference of the two counts is one forward (loading and packing cancel out). Scale to
# roberta-base (12 layers) at batch 32 × seq 64 by the GEMM MACs (printed).
# Usage: scripts/arm64-insn-count.sh [--precision bf16|fp32|int8] [--batch 1] [--seq 32]
# Env:   BUILD_DIR (default build-arm64), QEMU_CPU (default max,sve256=on), LAYERS (default 1),
#        WORK (default /tmp/rc-arm64-count).
set -euo pipefail
cd "$(dirname "$0")/.."

precision=bf16 batch=1 seq=32
while [ $# -gt 0 ]; do
  case "$1" in
    --precision) precision=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --seq) seq=$2; shift 2 ;;
    --help|-h) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "arm64-insn-count: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
BUILD_DIR=${BUILD_DIR:-build-arm64}
WORK=${WORK:-/tmp/rc-arm64-count}
LAYERS=${LAYERS:-1}
export QEMU_CPU=${QEMU_CPU:-max,sve256=on}
bin="$BUILD_DIR/cli/roberta"
[ -x "$bin" ] || { echo "arm64-insn-count: no $bin; run scripts/build-arm64.sh" >&2; exit 2; }
mkdir -p "$WORK"

# roberta-base shapes (hidden 768, 12 heads, FFN 3072), LAYERS layers.
/usr/bin/python3 - "$WORK/config.json" "$LAYERS" <<'EOF'
import json, sys
json.dump({"architectures": ["RobertaForSequenceClassification"], "model_type": "roberta", "hidden_size": 768,
           "num_attention_heads": 12, "intermediate_size": 3072, "num_hidden_layers": int(sys.argv[2]),
           "max_position_embeddings": 514, "vocab_size": 50265, "type_vocab_size": 1,
           "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "layer_norm_eps": 1e-5,
           "hidden_act": "gelu"}, open(sys.argv[1], "w"))
EOF
if [ ! -f "$WORK/model/config.json" ]; then
  qemu-aarch64-static "$bin" init --config "$WORK/config.json" --tokenizer /work/shared/data/roberta-base-tokenizer \
    --labels negative,neutral,positive --output "$WORK/model" >/dev/null
fi

for iters in 1 2; do
  tools/arm64_insn_count.py --cpu "$QEMU_CPU" --json "$WORK/count$iters.json" --top 0 -- \
    "$bin" bench infer --model "$WORK/model" --batch-size "$batch" --seq-len "$seq" --precision "$precision" \
    --iters "$iters" --warmup 0 --threads 1 >/dev/null
done

/usr/bin/python3 - "$WORK/count1.json" "$WORK/count2.json" "$batch" "$seq" "$LAYERS" <<'EOF'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
B, T, L = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
insn = b["instructions"] - a["instructions"]
macs = {k: b["macs"].get(k, 0) - a["macs"].get(k, 0) for k in b["macs"]}
total = sum(macs.values())
tokens = B * T
gemm = L * tokens * (768 * 2304 + 768 * 768 + 2 * 768 * 3072)  # QKV, attention out, FFN in + out
attn = L * B * 12 * 2 * T * T * 64                                 # QKᵀ and P·V (all tokens real)
print(f"one forward: {L} layer(s) x {B}x{T} tokens: {insn:,} instructions, {total:,} MACs counted")
print(f"  expected: linear GEMMs {gemm:,} MACs + attention {attn:,} MACs = {gemm + attn:,}")
for k, v in sorted(macs.items(), key=lambda kv: -kv[1]):
    print(f"  {k:22s} {v:15,d}  {100.0 * v / max(total, 1):5.1f}%")
top = {k: b["by_mnemonic"].get(k, 0) - a["by_mnemonic"].get(k, 0) for k in b["by_mnemonic"]}
print("  top mnemonics: " + ", ".join(f"{k} {v:,}" for k, v in sorted(top.items(), key=lambda kv: -kv[1])[:12]))
scale = (12 * 32 * 64) / (L * tokens)
print(f"scaled to roberta-base 12 layers x 32x64 (x{scale:.0f}, linear in tokens; attention grows with T too):"
      f" ~{insn * scale:,.0f} instructions per forward")
EOF
