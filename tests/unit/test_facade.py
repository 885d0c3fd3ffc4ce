"""The generated facade and declarations against the method table, without a browser.

The build's generator (build/facade.py) writes the method map and airi-memory.d.ts into
a temporary folder beside a copy of web/airi-memory.mjs; node opens that facade over a
fake Worker (tests/types/fake-worker.mjs), and the pinned TypeScript compiles an example
app that calls every method (tests/types/example-app.ts) against the declarations.
"""

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from airi_memory.api_methods import BY_NAME, JS_ONLY_MEMBERS

ROOT = Path(__file__).resolve().parents[2]
TYPES = ROOT / "tests" / "types"
TSC = ROOT / "node_modules" / ".bin" / "tsc"
_spec = importlib.util.spec_from_file_location("facade", ROOT / "build" / "facade.py")
facade = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(facade)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """A folder as dist/ has it: the facade, its generated method map and .d.ts."""
    folder = tmp_path_factory.mktemp("facade")
    facade.write_facade_files(folder)
    shutil.copy(ROOT / "web" / "airi-memory.mjs", folder / "airi-memory.mjs")
    shutil.copy(TYPES / "fake-worker.mjs", folder / "fake-worker.mjs")
    return folder


def run_node(folder: Path, body: str) -> object:
    """Run ``body`` as an ES module beside the facade; it prints one JSON value."""
    script = folder / "check.mjs"
    script.write_text(
        'import * as fake from "./fake-worker.mjs";\n'
        'import { openMemorySystem, createMemorySystem } from "./airi-memory.mjs";\n'
        "const tick = () => new Promise((resolve) => setTimeout(resolve, 0));\n" + body
    )
    done = subprocess.run(
        ["node", str(script)], capture_output=True, text=True, timeout=60, cwd=folder
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# Every member of the facade, as "group.member", after boot (testHooks on).
MEMBERS = """
const memory = openMemorySystem({ testHooks: true });
fake.reply("boot", fake.BOOT_INFO);
await memory.whenReady;
await tick();
fake.reply("loaded", fake.BOOT_INFO);
await memory.whenLoaded;
const groups = new Set(%s);
const members = {};
for (const [key, value] of Object.entries(memory)) {
  if (groups.has(key)) {
    for (const [inner, member] of Object.entries(value)) members[`${key}.${inner}`] = typeof member;
  } else members[key] = typeof value;
}
console.log(JSON.stringify(members));
"""


def test_method_map_is_the_table(generated):
    methods = run_node(
        generated,
        'import { METHODS } from "./airi-memory-methods.mjs";\n'
        "console.log(JSON.stringify(METHODS));\n",
    )
    assert list(methods) == list(BY_NAME)
    for name, entry in methods.items():
        params = BY_NAME[name].params
        assert entry["params"] == [param.name for param in params], name
        assert entry["required"] == sum(param.required for param in params), name


def test_facade_members_are_the_table_and_the_js_only_list(generated):
    """A method on the facade that does not dispatch, or a dispatch name the facade lacks,
    or a hand-written member missing from JS_ONLY_MEMBERS, fails here."""
    groups = sorted({name.split(".")[0] for name in [*BY_NAME, *JS_ONLY_MEMBERS] if "." in name})
    members = run_node(generated, MEMBERS % json.dumps(groups))
    assert set(members) == set(BY_NAME) | set(JS_ONLY_MEMBERS)
    for name in BY_NAME:
        assert members[name] == "function", name


def test_generated_forwarders_send_required_and_given_arguments(generated):
    sent = run_node(
        generated,
        """
const memory = openMemorySystem();
fake.reply("boot", fake.BOOT_INFO);
await memory.whenReady;
memory.context.setUserProfile();
memory.context.removeContext("module:x", undefined);
memory.summarizeOldContext("s1");
memory.summarizeOldContext("s1", 7);
memory.storage.setItem("k", undefined);
memory.sessions.addMessage("s1", { role: "user" }, "extra");
const calls = fake.posted.filter((m) => m.kind === "call");
console.log(JSON.stringify(calls.map(({ method, args }) => [method, args])));
""",
    )
    assert sent == [
        ["context.setUserProfile", [None]],
        ["context.removeContext", ["module:x"]],
        ["summarizeOldContext", ["s1"]],
        ["summarizeOldContext", ["s1", 7]],
        ["storage.removeItem", ["k"]],
        ["sessions.addMessage", ["s1", {"role": "user"}, "extra"]],
    ]


def test_calls_before_ready_are_queued_then_sent_in_order(generated):
    seen = run_node(
        generated,
        """
const fractions = [];
const memory = openMemorySystem({ onProgress: ({ fraction }) => fractions.push(fraction) });
const early = [memory.ping(), memory.sessions.getSession("s1")];
const readyBefore = memory.ready;
await tick();
const postedBeforeBoot = fake.posted.map((m) => m.kind);
const networkBeforeBoot = fake.network.map((m) => m.network);
fake.event("boot-progress", { phase: "start", fraction: 0, elapsedMs: 0 });
fake.event("boot-progress", { phase: "python", fraction: 1, elapsedMs: 9 });
fake.reply("boot", fake.BOOT_INFO);
const ready = await memory.whenReady;
await tick();
const postedAfterBoot = fake.posted.map((m) => m.method ?? m.kind);
fake.reply("call", "pong", { method: "ping" });
fake.reply("call", { sessionId: "s1" }, { method: "sessions.getSession" });
const answers = await Promise.all(early);
const loadedBefore = memory.loaded ?? null;
const quarantined = [{ key: "local:chat/records/s1/x", reason: "unreadable" }];
fake.reply("loaded", { ...fake.BOOT_INFO, versions: { ...fake.BOOT_INFO.versions, duckdb: "v1.4.1" }, quarantined,
  bootPhases: { ...fake.BOOT_INFO.bootPhases, loaded: 12 } });
const loaded = await memory.whenLoaded;
console.log(JSON.stringify({
  readyBefore: readyBefore ?? null, postedBeforeBoot, postedAfterBoot, fractions,
  networkBeforeBoot,
  answers, same: ready === memory && loaded === memory, readyMs: typeof memory.ready,
  userId: memory.userId, active: memory.sessions.activeSessionId,
  pyodide: memory.versions.pyodide, loadedBefore, loadedMs: typeof memory.loaded,
  duckdb: memory.versions.duckdb, quarantined: memory.quarantined, loadedPhase: memory.bootPhases.loaded,
}));
""",
    )
    assert seen == {
        "readyBefore": None,
        "postedBeforeBoot": ["boot"],
        "networkBeforeBoot": [{"online": True}],  # the page tells the worker at once
        # The queued calls, then the facade's question for whenLoaded.
        "postedAfterBoot": ["ping", "sessions.getSession", "loaded"],
        "fractions": [0, 1],
        "answers": ["pong", {"sessionId": "s1"}],
        "same": True,
        "readyMs": "number",
        "userId": "alice",
        "active": "s1",
        "pyodide": "314.0.7",
        "loadedBefore": None,
        "loadedMs": "number",
        "duckdb": "v1.4.1",
        "quarantined": [{"key": "local:chat/records/s1/x", "reason": "unreadable"}],
        "loadedPhase": 12,
    }


def test_calls_before_ready_reject_with_the_boot_error(generated):
    seen = run_node(
        generated,
        """
const memory = openMemorySystem();
const early = memory.sessions.listSessions().catch((error) => `${error.name}: ${error.message}`);
fake.reply("boot", null, { ok: false, error: { name: "InvalidValueError", message: "invalid option 'x'" } });
const boot = await memory.whenReady.catch((error) => error.message);
const loaded = await memory.whenLoaded.catch((error) => error.message);
const terminated = fake.worker().terminated;
const created = createMemorySystem().catch((error) => error.message);
fake.reply("boot", null, { ok: false, error: { name: "Error", message: "no wasm" } });
console.log(JSON.stringify({ early: await early, boot, loaded, terminated, created: await created,
  calls: fake.posted.filter((m) => m.kind === "call").length }));
""",
    )
    assert seen == {
        "early": "InvalidValueError: invalid option 'x'",
        "boot": "invalid option 'x'",
        "loaded": "invalid option 'x'",
        "terminated": True,
        "created": "no wasm",
        "calls": 0,
    }


def _typecheck(folder: Path, app: Path) -> subprocess.CompletedProcess:
    shutil.copy(app, folder / app.name)
    config = {
        "compilerOptions": {
            "strict": True,
            "noEmit": True,
            "target": "es2022",
            "module": "esnext",
            "moduleResolution": "bundler",
            "lib": ["es2022", "dom", "dom.iterable"],
            "types": [],
            "paths": {"airi-memory": ["./airi-memory.d.ts"]},
        },
        "files": [app.name],
    }
    (folder / "tsconfig.json").write_text(json.dumps(config))
    return subprocess.run(
        [str(TSC), "--project", str(folder / "tsconfig.json")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
    )


def test_example_app_type_checks_against_the_generated_declarations(generated):
    done = _typecheck(generated, TYPES / "example-app.ts")
    assert done.returncode == 0, done.stdout + done.stderr


def test_tsc_refuses_a_wrongly_typed_call(generated):
    done = _typecheck(generated, TYPES / "wrong-call.ts")
    assert done.returncode != 0
    assert re.search(r"wrong-call\.ts\(7,\d+\): error TS2345: .*'number'.*'string'", done.stdout), (
        done.stdout
    )


def test_example_app_calls_every_method(generated):
    """Every function on the facade (generated or written by hand) is called in the app."""
    groups = sorted({name.split(".")[0] for name in [*BY_NAME, *JS_ONLY_MEMBERS] if "." in name})
    members = run_node(generated, MEMBERS % json.dumps(groups))
    app = (TYPES / "example-app.ts").read_text()
    for name, kind in members.items():
        call = f"memory.{name}(".replace("_test.", "_test?.")
        assert kind != "function" or call in app, f"tests/types/example-app.ts never calls {name}"
