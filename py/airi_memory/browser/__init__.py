"""The browser: every module that touches Pyodide's FFI (``js``, ``pyodide``) lives here.

One implementation per port (IndexedDB storage, DuckDB-WASM, fetch, the local embedding
model, gpt-tokenizer), the helpers that cross the bridge (``ffi``) and the host that wires
them for the worker (``host``). Nothing else in the package imports ``js`` or ``pyodide``:
the import contract in ``make lint`` keeps it so.
"""
