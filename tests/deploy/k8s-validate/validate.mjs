// Validates deploy/k8s/*.yaml offline: every object against the Kubernetes JSON schemas bundled
// in the npm package kubernetes-models (types, required fields, enums, formats), then the
// properties this project's deployment depends on, which a schema cannot express (probes on
// /ping, preStop + grace period, resources, selectors that actually select the pods, the HPA
// and PDB pointing at the Deployment, every $(VAR) in args defined by the ConfigMap).
// Usage: node validate.mjs FILE.yaml...   Exit 1 with one line per problem.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const models = {
  "v1/ConfigMap": "kubernetes-models/v1/ConfigMap",
  "v1/Service": "kubernetes-models/v1/Service",
  "apps/v1/Deployment": "kubernetes-models/apps/v1/Deployment",
  "autoscaling/v2/HorizontalPodAutoscaler": "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler",
  "policy/v1/PodDisruptionBudget": "kubernetes-models/policy/v1/PodDisruptionBudget",
};
const problems = [];
const objects = [];
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length) { problems.push(`${file}: YAML: ${doc.errors[0].message}`); continue; }
    const obj = doc.toJS();
    if (!obj) continue;
    const key = `${obj.apiVersion}/${obj.kind}`;
    if (obj.apiVersion?.startsWith("kustomize.config.k8s.io/")) continue;
    if (!models[key]) { problems.push(`${file}: ${key}: no schema known here`); continue; }
    const mod = await import(models[key]);
    try {
      new mod[obj.kind](obj).validate();
    } catch (e) {
      problems.push(`${file}: ${key} ${obj.metadata?.name}: ${e.message}`);
    }
    objects.push({ file, obj });
  }
}
const find = (kind) => objects.filter((o) => o.obj.kind === kind).map((o) => o.obj);
const check = (cond, msg) => { if (!cond) problems.push(msg); };
const selects = (selector, labels) => Object.entries(selector || {}).every(([k, v]) => labels?.[k] === v);

const [dep] = find("Deployment");
check(dep, "no Deployment");
if (dep) {
  const pod = dep.spec.template;
  const c = pod.spec.containers[0];
  check(selects(dep.spec.selector.matchLabels, pod.metadata.labels), "Deployment selector does not match its pod labels");
  check(c.readinessProbe?.httpGet?.path === "/ping", "readiness probe is not GET /ping");
  check(c.livenessProbe?.httpGet?.path === "/ping", "liveness probe is not GET /ping");
  check(c.lifecycle?.preStop, "no preStop hook");
  check((pod.spec.terminationGracePeriodSeconds ?? 30) >= 30, "terminationGracePeriodSeconds < 30");
  check(c.resources?.requests?.cpu && c.resources?.requests?.memory && c.resources?.limits?.memory, "container resources incomplete");
  check(c.args?.[0] === "serve", "container args do not start with `serve` (the image's ENTRYPOINT is roberta)");
  const cm = find("ConfigMap")[0];
  for (const a of c.args || []) for (const [, v] of String(a).matchAll(/\$\(([A-Z0-9_]+)\)/g))
    check(cm?.data?.[v] !== undefined, `args use $(${v}) but the ConfigMap does not define it`);
  for (const svc of find("Service")) check(selects(svc.spec.selector, pod.metadata.labels), `Service ${svc.metadata.name} selects no pod`);
  for (const pdb of find("PodDisruptionBudget"))
    check(selects(pdb.spec.selector.matchLabels, pod.metadata.labels), `PDB ${pdb.metadata.name} selects no pod`);
  for (const hpa of find("HorizontalPodAutoscaler")) {
    check(hpa.spec.scaleTargetRef.kind === "Deployment" && hpa.spec.scaleTargetRef.name === dep.metadata.name, "HPA does not target the Deployment");
    check(hpa.spec.minReplicas <= hpa.spec.maxReplicas, "HPA minReplicas > maxReplicas");
  }
}
for (const p of problems) console.error(`k8s: ${p}`);
console.log(`k8s: ${objects.length} objects checked, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
