"""The IndexedDB store's ``apply`` (web/worker/idb-apply.mjs) in Chromium: a write whose
reads the store can foresee is sent in one wave with them, and still commits only on what
those reads find. Two stores opened on one database stand for two tabs."""

import json

SETUP = """
const open = () => airiHost.idb.open('write-in-one-wave', 'keyval');
const ours = open(), other = open();
await ours.clear('');
await ours.set('s', JSON.stringify({ updatedAt: 1, title: 't' }));
const log = (entry) => ({ prefix: 'j', head: 'j-head', entry, pruneThrough: 0 });
// A chat turn's write: the message, the session's updatedAt, guarded on the one seen.
const turn = (store, key, updatedAt, guard) =>
  store.apply([[key, key]], [], [], [['s', JSON.stringify({ updatedAt })]], [['s', 'updatedAt', guard]], log(key));
const state = async () => ({
  session: JSON.parse(await ours.get('s')),
  head: JSON.parse(await ours.get('j-head')),
  entries: await Promise.all([1, 2, 3, 4, 5].map((n) => ours.get('j:' + String(n).padStart(16, '0')))),
  counts: await ours.writeCounts(),
});
"""


def run(selenium, body: str):
    return json.loads(selenium.run_js(SETUP + body))


def test_a_write_it_can_foresee_goes_in_one_wave(browser_host):
    result = run(
        browser_host,
        """
        const numbers = [await turn(ours, 'm1', 2, 1), await turn(ours, 'm2', 3, 2), await turn(ours, 'm3', 4, 3)];
        return JSON.stringify({ numbers, ...(await state()) });
        """,
    )
    assert result["numbers"] == [1, 2, 3]
    # The first write learns the session record and the journal's head; the next two
    # are sent with their reads.
    assert result["counts"] == {"oneWave": 2, "stale": 0, "readFirst": 1}
    assert result["session"] == {"updatedAt": 4, "title": "t"}
    assert result["head"] == {"last": 3, "pruned": 0}
    assert result["entries"] == ["m1", "m2", "m3", None, None]


def test_another_tabs_write_in_between_is_seen_and_the_write_made_again(browser_host):
    result = run(
        browser_host,
        """
        await turn(ours, 'm1', 2, 1);
        // Another tab renames the session and appends to the journal: what we know is stale.
        await other.apply([['x', 'x']], [], [], [['s', JSON.stringify({ title: 'renamed' })]], [], log('theirs'));
        const number = await turn(ours, 'm2', 3, 2);
        return JSON.stringify({ number, ...(await state()) });
        """,
    )
    assert result["number"] == 3  # after the other tab's entry, not over it
    assert result["counts"] == {"oneWave": 0, "stale": 1, "readFirst": 2}
    # Merged into the other tab's record, not into the one we had seen.
    assert result["session"] == {"updatedAt": 3, "title": "renamed"}
    assert result["head"] == {"last": 3, "pruned": 0}
    assert result["entries"] == ["m1", "theirs", "m2", None, None]


def test_a_guard_that_fails_in_one_wave_stores_nothing(browser_host):
    result = run(
        browser_host,
        """
        await turn(ours, 'm1', 2, 1);
        let refused = null;
        try {
          await turn(ours, 'm2', 3, 99);  // foreseen, but the guard does not hold
        } catch (error) {
          refused = { name: error.name, message: error.message };
        }
        const kept = await ours.get('m2');
        const number = await turn(ours, 'm3', 3, 2);
        return JSON.stringify({ refused, kept: kept ?? null, number, ...(await state()) });
        """,
    )
    assert result["refused"] == {"name": "WriteConflictError", "message": "s"}
    assert result["kept"] is None
    assert result["number"] == 2
    assert result["counts"] == {"oneWave": 1, "stale": 0, "readFirst": 1}
    assert result["session"] == {"updatedAt": 3, "title": "t"}
    assert result["entries"] == ["m1", "m3", None, None, None]


def test_a_commit_the_browser_fails_in_one_wave_stores_nothing(browser_host):
    result = run(
        browser_host,
        """
        await turn(ours, 'm1', 2, 1);
        await airiHost.idb.failNextCommits('AbortError');
        let failed = null;
        try {
          await turn(ours, 'm2', 3, 2);
        } catch (error) {
          failed = error.name;
        }
        const kept = await ours.get('m2');
        const number = await turn(ours, 'm3', 3, 2);
        return JSON.stringify({ failed, kept: kept ?? null, number, ...(await state()) });
        """,
    )
    assert result["failed"] == "AbortError"
    assert result["kept"] is None
    assert result["number"] == 2
    # The failed try told us nothing new: the next write still goes in one wave.
    assert result["counts"] == {"oneWave": 1, "stale": 0, "readFirst": 1}
    assert result["session"] == {"updatedAt": 3, "title": "t"}
    assert result["entries"] == ["m1", "m3", None, None, None]


def test_a_prune_and_a_cleared_store_are_followed(browser_host):
    result = run(
        browser_host,
        """
        await turn(ours, 'm1', 2, 1);
        await turn(ours, 'm2', 3, 2);
        // A snapshot's write: no entry, the entries through 2 pruned.
        await ours.apply([], [], [], [], [], { prefix: 'j', head: 'j-head', entry: null, pruneThrough: 2 });
        const afterPrune = await turn(ours, 'm3', 4, 3);
        await other.clear('');  // another tab wipes the store: the session record is gone
        await other.set('s', JSON.stringify({ updatedAt: 10 }));
        const afterClear = await turn(ours, 'm4', 11, 10);
        return JSON.stringify({ afterPrune, afterClear, ...(await state()) });
        """,
    )
    assert result["afterPrune"] == 3
    assert result["afterClear"] == 1  # a new journal: nothing of the old one is left
    assert result["session"] == {"updatedAt": 11}
    assert result["head"] == {"last": 1, "pruned": 0}
    # Redone once, after the other tab's clear; the prune was followed in one wave.
    assert result["counts"] == {"oneWave": 3, "stale": 1, "readFirst": 2}


def test_a_value_that_cannot_be_stored_in_one_wave_stores_nothing(browser_host):
    result = run(
        browser_host,
        """
        await turn(ours, 'm1', 2, 1);
        let failed = null;
        try {
          // Foreseen, so its writes go out with its reads; the second value cannot be cloned.
          await ours.apply([['m2', 'ok'], ['m3', () => 1]], [], [], [['s', JSON.stringify({ updatedAt: 3 })]],
                           [['s', 'updatedAt', 2]], log('m2'));
        } catch (error) {
          failed = error.name;
        }
        const kept = [(await ours.get('m2')) ?? null, (await ours.get('m3')) ?? null];
        const number = await turn(ours, 'm4', 3, 2);
        return JSON.stringify({ failed, kept, number, ...(await state()) });
        """,
    )
    assert result["failed"] == "DataCloneError"
    assert result["kept"] == [None, None]  # not the first half of the write
    assert result["number"] == 2
    assert result["session"] == {"updatedAt": 3, "title": "t"}
    assert result["entries"] == ["m1", "m4", None, None, None]
    assert result["counts"] == {"oneWave": 1, "stale": 0, "readFirst": 1}


def test_a_fault_meant_for_a_stale_try_fails_the_write_made_again(browser_host):
    result = run(
        browser_host,
        """
        await turn(ours, 'm1', 2, 1);
        await other.apply([['x', 'x']], [], [], [['s', JSON.stringify({ title: 'renamed' })]], [], log('theirs'));
        await airiHost.idb.failNextCommits('AbortError');  // the next commit, whichever try makes it
        let failed = null;
        try {
          await turn(ours, 'm2', 3, 2);
        } catch (error) {
          failed = error.name;
        }
        return JSON.stringify({ failed, kept: (await ours.get('m2')) ?? null, ...(await state()) });
        """,
    )
    assert result["failed"] == "AbortError"
    assert result["kept"] is None
    assert result["counts"] == {"oneWave": 0, "stale": 1, "readFirst": 2}
    assert result["session"] == {"updatedAt": 2, "title": "renamed"}
    assert result["head"] == {"last": 2, "pruned": 0}
