// The official Hugging Face JS client against `roberta serve`'s POST / (Inference Endpoints'
// route), called as a user calls a custom endpoint: new InferenceClient().endpoint(url).
// Every answer must pass the client's own validation (providers/hf-inference.js getResponse)
// and equal what `roberta predict` / `roberta fill-mask` print for the same text, which
// test_hf_client.sh ran first and passes in as JSON files.
//   node client.mjs CLASSIFIER_URL MLM_URL EXPECTED.json TWEETS_URL NER_URL
// (TWEETS_URL: the classifier served with --preprocess tweet --function-to-apply sigmoid.)
import { readFileSync } from "node:fs";
import { InferenceClient, HfInference } from "@huggingface/inference";

const [classifierUrl, mlmUrl, expectedPath, tweetsUrl, nerUrl, embedUrl] = process.argv.slice(2);
const expected = JSON.parse(readFileSync(expectedPath, "utf8"));
let failures = 0;
const fail = (what) => {
  failures++;
  console.log(`FAIL: ${what}`);
};
// Scores are float32 on both sides: equal once rounded back to float32.
const same = (a, b) => Math.fround(a) === Math.fround(b);

// textClassification: every label, best first, each score the CLI's for that label.
function checkClassification(what, got, cli, topK) {
  const labels = Object.keys(cli.scores);
  const want = labels.map((label) => ({ label, score: cli.scores[label] })).sort((a, b) => b.score - a.score);
  const n = topK ?? want.length;
  if (!Array.isArray(got) || got.length !== n) return fail(`${what}: ${n} labels expected, got ${JSON.stringify(got)}`);
  got.forEach((entry, i) => {
    if (entry.label !== want[i].label || !same(entry.score, want[i].score))
      fail(`${what}: entry ${i} is ${JSON.stringify(entry)}, roberta predict gives ${JSON.stringify(want[i])}`);
  });
  console.log(`ok: ${what}: ${JSON.stringify(got)}`);
}

const classifier = new InferenceClient().endpoint(classifierUrl);
for (const c of expected.classification) {
  const got = await classifier.textClassification({ inputs: c.text, parameters: c.parameters });
  checkClassification(`textClassification(${JSON.stringify(c.text)}, ${JSON.stringify(c.parameters ?? {})})`, got, c.cli, c.parameters?.top_k);
}
// The deprecated spelling users still have in their code reaches the same route.
const legacy = await new HfInference().endpoint(classifierUrl).textClassification({ inputs: expected.classification[0].text });
checkClassification("HfInference().endpoint(url).textClassification", legacy, expected.classification[0].cli);

// `serve --preprocess tweet --function-to-apply sigmoid` answers the raw tweet as `predict` with
// the same flags does, which differs from the unprocessed text's answer.
const tweets = new InferenceClient().endpoint(tweetsUrl);
for (const c of expected.tweets) {
  const got = await tweets.textClassification({ inputs: c.text });
  checkClassification(`serve --preprocess tweet: textClassification(${JSON.stringify(c.text)})`, got, c.cli);
  if (Object.keys(c.cli.scores).every((l) => same(c.cli.scores[l], c.unprocessed.scores[l])))
    fail("the tweet must be one that preprocessing changes");
}

// tokenClassification: the entity groups `roberta predict --aggregation simple` prints.
const ner = new InferenceClient().endpoint(nerUrl);
for (const c of expected.tokens) {
  const got = await ner.tokenClassification({ inputs: c.text });
  const ok = Array.isArray(got) && c.cli.length > 0 && got.length === c.cli.length && got.every((g, i) =>
    g.entity_group === c.cli[i].entity_group && same(g.score, c.cli[i].score) && g.word === c.cli[i].word &&
    g.start === c.cli[i].start && g.end === c.cli[i].end);
  if (!ok) fail(`tokenClassification(${JSON.stringify(c.text)}): ${JSON.stringify(got)} != roberta predict ${JSON.stringify(c.cli)}`);
  else console.log(`ok: tokenClassification(${JSON.stringify(c.text)}): ${got.length} entity groups`);
}

const mlm = new InferenceClient().endpoint(mlmUrl);
for (const c of expected.fill_mask) {
  const parameters = c.targets ? { top_k: c.top_k, targets: c.targets } : { top_k: c.top_k };
  const got = await mlm.fillMask({ inputs: c.text, parameters });
  const ok = Array.isArray(got) && got.length === c.cli.length && got.every((g, i) =>
    same(g.score, c.cli[i].score) && g.token === c.cli[i].token && g.token_str === c.cli[i].token_str && g.sequence === c.cli[i].sequence);
  if (!ok) fail(`fillMask(${JSON.stringify(c.text)}): ${JSON.stringify(got)} != roberta fill-mask ${JSON.stringify(c.cli)}`);
  else console.log(`ok: fillMask(${JSON.stringify(c.text)}, top_k ${c.top_k}${c.targets ? ", targets " + c.targets : ""}): ${got.length} candidates`);
}

// An embedding model (a sentence-transformers folder): featureExtraction answers one text with
// its vector, equal to `roberta embed --normalize`; sentenceSimilarity the cosines.
if (embedUrl) {
  const st = new InferenceClient().endpoint(embedUrl);
  for (const c of expected.embed) {
    const got = await st.featureExtraction({ inputs: c.text });
    const ok = Array.isArray(got) && got.length === c.cli.length && got.every((v, i) => same(v, c.cli[i]));
    if (!ok) fail(`featureExtraction(${JSON.stringify(c.text)}): ${JSON.stringify(got)} != roberta embed ${JSON.stringify(c.cli)}`);
    else console.log(`ok: featureExtraction(${JSON.stringify(c.text)}): ${got.length} values`);
  }
  const [a, b] = expected.embed;
  const sims = await st.sentenceSimilarity({ inputs: { source_sentence: a.text, sentences: [b.text, a.text] } });
  const cos = a.cli.reduce((s, v, i) => s + v * b.cli[i], 0);  // both unit vectors
  if (!Array.isArray(sims) || sims.length !== 2 || Math.abs(sims[0] - cos) > 1e-5 || Math.abs(sims[1] - 1) > 1e-5)
    fail(`sentenceSimilarity: ${JSON.stringify(sims)}, expected [${cos}, 1]`);
  else console.log(`ok: sentenceSimilarity: ${JSON.stringify(sims)}`);
}

// A task the model cannot serve: the client surfaces our {"error"} message, naming both tasks.
async function expectRefused(what, call, needles) {
  try {
    const got = await call();
    fail(`${what}: answered ${JSON.stringify(got)}`);
  } catch (e) {
    const status = e.httpResponse?.status;
    if (status !== 400 || !needles.every((n) => e.message.includes(n)))
      fail(`${what}: expected a 400 naming ${needles.join(" and ")}, got ${status}: ${e.message}`);
    else console.log(`ok: ${what} refused: ${e.message}`);
  }
}
await expectRefused("textClassification on the masked-LM endpoint", () => mlm.textClassification({ inputs: "I love it" }),
  ["fill-mask", "text-classification"]);
await expectRefused("fillMask with targets on the classifier endpoint",
  () => classifier.fillMask({ inputs: "I <mask> it", parameters: { targets: ["love"] } }), ["fill-mask", "text-classification"]);

if (failures) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("PASS");
