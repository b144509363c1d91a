// The official openai npm client against `roberta serve`'s POST /v1/embeddings, called as a
// user calls any OpenAI-compatible server: new OpenAI({baseURL}).embeddings.create(...). The
// client asks for base64 unless told otherwise and decodes it itself (resources/embeddings.ts);
// every vector must equal, as float32, what `roberta embed` printed for the same text
// (test_openai_client.sh ran it first and passes the lines in as a JSON file).
//   node client.mjs BASE_URL EXPECTED.json
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const [baseURL, expectedPath] = process.argv.slice(2);
const expected = JSON.parse(readFileSync(expectedPath, "utf8"));
let failures = 0;
const fail = (what) => {
  failures++;
  console.log(`FAIL: ${what}`);
};
const same = (a, b) => Math.fround(a) === Math.fround(b);
function checkVector(what, got, want) {
  if (!Array.isArray(got) || got.length !== want.length) return fail(`${what}: ${want.length} values expected, got ${JSON.stringify(got)}`);
  got.forEach((v, i) => {
    if (!same(v, want[i])) fail(`${what}: value ${i} is ${v}, roberta embed prints ${want[i]}`);
  });
  console.log(`ok: ${what}`);
}

const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });

// Default: the client asks for base64 and decodes the little-endian float32 bytes.
const texts = expected.texts;
const res = await client.embeddings.create({ model: "embed", input: texts });
if (res.object !== "list" || res.data.length !== texts.length) fail(`list of ${texts.length}: ${JSON.stringify(res)}`);
res.data.forEach((d, i) => {
  if (d.index !== i || d.object !== "embedding") fail(`data[${i}]: ${JSON.stringify(d)}`);
  checkVector(`base64 (default) embedding of ${JSON.stringify(texts[i])}`, d.embedding, expected.full[i]);
});
if (!(res.usage.prompt_tokens > 0) || res.usage.total_tokens !== res.usage.prompt_tokens)
  fail(`usage: ${JSON.stringify(res.usage)}`);
// TEI's openai_embed answers its model id (GET /info's model_id), whatever the request named.
if (res.model !== expected.model_id) fail(`model: ${res.model}, /info says ${expected.model_id}`);

// encoding_format float: the same values as JSON numbers.
const floats = await client.embeddings.create({ model: "embed", input: texts[0], encoding_format: "float" });
checkVector("float embedding", floats.data[0].embedding, expected.full[0]);

// dimensions: truncated, then renormalised (roberta embed --dimensions).
const cut = await client.embeddings.create({ model: "embed", input: texts[0], dimensions: expected.dims });
checkVector(`dimensions ${expected.dims}`, cut.data[0].embedding, expected.truncated);

// Token ids in, as the client passes them through.
const ids = await client.embeddings.create({ model: "embed", input: [expected.ids] });
checkVector("token-id input", ids.data[0].embedding, expected.full[0]);

// Errors reach the client as its APIError with the status and OpenAI's error body.
try {
  await client.embeddings.create({ model: "embed", input: [] });
  fail("an empty input list must be refused");
} catch (e) {
  if (!(e instanceof OpenAI.BadRequestError) || e.status !== 400 || e.error?.type !== "invalid_request_error")
    fail(`empty input: expected BadRequestError 400 invalid_request_error, got ${e?.constructor?.name} ${e?.status} ${JSON.stringify(e?.error)}`);
  else console.log(`ok: empty input refused: ${e.message}`);
}
try {
  await client.embeddings.create({ model: "embed", input: texts[0], dimensions: 100000 });
  fail("dimensions past the model's must be refused");
} catch (e) {
  if (!(e instanceof OpenAI.APIError) || e.status !== 413) fail(`dimensions: got ${e?.status} ${e?.message}`);
  else console.log(`ok: dimensions refused: ${e.message}`);
}

if (failures) {
  console.log(`${failures} failure(s)`);
  process.exit(1);
}
console.log("openai client: all ok");
