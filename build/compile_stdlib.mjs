// Pyodide's standard library zip in a built runtime, with bytecode beside every module a
// start imports (build/bytecode.py), compiled by Pyodide itself under Node. Which modules:
// asked of a Pyodide that imports us, as build/make_snapshot.mjs asks. Run before that
// snapshot is made, which reads the same zip.
import { readFileSync, writeFileSync } from "node:fs";
import { loadPyodide } from "pyodide";

const runtime = process.argv[2]; // dist/runtime/, with its lock and our wheels
const zipPath = `${runtime}/python_stdlib.zip`;
const pyodide = await loadPyodide({
  indexURL: runtime,
  lockFileURL: `${runtime}/pyodide-lock.json`,
  packages: ["airi-memory"],
});
const stdlib = pyodide.runPython(`import sys\n"/lib/python%d%d.zip/" % sys.version_info[:2]`);
const modules = pyodide
  .runPython(
    `import json, sys
import airi_memory.browser.host
origins = (getattr(getattr(m, "__spec__", None), "origin", None) or "" for m in list(sys.modules.values()))
json.dumps(sorted({o[len("${stdlib}"):] for o in origins if o.startswith("${stdlib}") and o.endswith(".py")}))`,
  )
  .toString();
pyodide.runPython(readFileSync(new URL("./bytecode.py", import.meta.url), "utf8"));
pyodide.FS.writeFile("/tmp/stdlib.zip", readFileSync(zipPath));
const compiled = pyodide.globals.get("add_stdlib_bytecode")(
  "/tmp/stdlib.zip",
  "/tmp/compiled.zip",
  JSON.parse(modules),
  stdlib,
);
writeFileSync(zipPath, pyodide.FS.readFile("/tmp/compiled.zip"));
console.log(`compiled ${compiled} standard library modules: ${zipPath}`);
