// Every wheel named on the command line, rewritten in place with bytecode instead of
// Python sources (build/bytecode.py), compiled by Pyodide itself under Node: the same
// Python as the browser's, so the bytecode is exactly what it would have made at start-up.
import { readFileSync, writeFileSync } from "node:fs";
import { loadPyodide } from "pyodide";

const pyodide = await loadPyodide();
pyodide.runPython(readFileSync(new URL("./bytecode.py", import.meta.url), "utf8"));
const compileWheel = pyodide.globals.get("compile_wheel");
for (const path of process.argv.slice(2)) {
  pyodide.FS.writeFile("/tmp/source.whl", readFileSync(path));
  const modules = compileWheel("/tmp/source.whl", "/tmp/target.whl");
  writeFileSync(path, pyodide.FS.readFile("/tmp/target.whl"));
  console.log(`compiled ${modules} modules: ${path}`);
}
