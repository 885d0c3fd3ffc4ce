// The experimental start-up snapshot (the facade's `startupSnapshot` option): Pyodide's
// memory once it has booted and imported the standard-library modules our package uses,
// made by Pyodide itself under Node and written gzipped beside the runtime. Snapshots are
// private API in Pyodide 314 and cannot hold loaded packages (pyodide#5195), so the
// packages still load and import at every start; the snapshot saves Python's own boot.
import { writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { loadPyodide } from "pyodide";

const runtime = process.argv[2]; // dist/runtime/, with its lock and our wheels
const options = { indexURL: runtime, lockFileURL: `${runtime}/pyodide-lock.json` };

// Which standard-library modules a start imports: asked of a Pyodide that imports us.
const probe = await loadPyodide({ ...options, packages: ["airi-memory"] });
const modules = probe
  .runPython(
    `import json, sys
import airi_memory.browser.host
stdlib = "/lib/python%d%d.zip/" % sys.version_info[:2]
json.dumps(sorted(
    name for name, module in sys.modules.items()
    if (getattr(getattr(module, "__spec__", None), "origin", None) or "").startswith(stdlib)
    and not name.split(".")[0].lstrip("_").startswith("pyodide")
))`,
  )
  .toString();

const pyodide = await loadPyodide({ ...options, _makeSnapshot: true });
pyodide.runPython(`import importlib, json\nfor name in json.loads(${JSON.stringify(modules)}):\n    importlib.import_module(name)`);
const snapshot = pyodide.makeMemorySnapshot();
writeFileSync(`${runtime}/pyodide-snapshot.bin.gz`, gzipSync(snapshot, { level: 6 }));
console.log(`snapshot: ${JSON.parse(modules).length} modules, ${snapshot.length} bytes`);
