// npm runs this before every `npm pack` / `npm publish` (the "prepack" script): it refuses
// to pack a package that would install broken. Every path package.json promises (`files`,
// `types`, each `exports` target) must exist, since npm packs a missing one silently; and
// the package may depend on nothing, since an app installs it offline from the tarball.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

/** Every file path an `exports` entry maps to, however deeply its conditions nest. */
function exportTargets(entry) {
  if (typeof entry === "string") return [entry];
  return Object.values(entry ?? {}).flatMap(exportTargets);
}

const promised = [...manifest.files, manifest.types, ...exportTargets(manifest.exports)];
const paths = new Set(promised.map((path) => normalize(path)));
const missing = [...paths].filter((path) => !existsSync(join(root, path)));
const dependencyFields = ["dependencies", "peerDependencies", "optionalDependencies"];
const dependencies = dependencyFields.filter((field) => Object.keys(manifest[field] ?? {}).length);

if (missing.length) {
  console.error(`airi-memory: cannot pack, package.json promises files that do not exist:`);
  for (const path of missing) console.error(`  ${path}`);
  console.error("Build them first: `make dist` (or `make package`, which builds and packs).");
}
if (dependencies.length) {
  console.error(`airi-memory: cannot pack, the package must install offline with nothing to fetch,`);
  console.error(`but package.json has ${dependencies.join(", ")}: bundle them into dist/ instead.`);
}
if (missing.length || dependencies.length) process.exit(1);
