"""The guard every e2e test relies on must itself be able to fail."""


def test_guard_records_outside_requests_from_page_and_worker(web):
    web.open_harness()
    web.evaluate(
        """async () => {
            await fetch('http://outside.invalid/from-page').catch(() => {});
            const source = "fetch('http://outside.invalid/from-worker').catch(() => {}).finally(() => postMessage('done'))";
            const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })));
            await new Promise((resolve) => { worker.onmessage = resolve; });
            worker.terminate();
        }"""
    )
    outside = [url for url in web.requests if "outside.invalid" in url]
    assert outside == ["http://outside.invalid/from-page", "http://outside.invalid/from-worker"]
    web.requests.clear()  # seen and stopped: let the teardown check pass
