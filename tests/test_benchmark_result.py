"""The benchmark verdict from measured figures (no GPU needed: the figures are given) and the worker's tamper check."""

import pytest

from ktui.core.ladder import benchmark_result
from ktui.core.results import Status

DESCRIBE = {"benchmarks": [{"n": 1 << 24}], "benchmark_labels": ["(16777216,)"]}
ROOF = {"bandwidth_gbps": 4000.0, "peak_tflops": {}}


def cand(median_us: float) -> list[dict]:
    return [
        {
            "spec_index": 0,
            "median_us": median_us,
            "p25_us": median_us * 0.99,
            "p75_us": median_us * 1.01,
            "iqr_us": median_us * 0.02,
            "min_us": median_us * 0.98,
            "max_us": median_us * 1.2,
            "reps": 100,
        }
    ]


BYTES = 3 * 4 * (1 << 24)  # two fp32 inputs and one output: 201 MB, 50 us at 4 TB/s


def verdict(median_us: float, host_us: float, enqueue_us: float = 5.0, nbytes: int = BYTES, **kw):
    host = {0: {"us_per_call": host_us, "enqueue_us_per_call": enqueue_us}}
    ref = [{"spec_index": 0, "median_us": 200.0, "bytes": nbytes, "dtype": "float32"}]
    return benchmark_result(cand(median_us), ref, ROOF, DESCRIBE, host=host, **kw)


def test_honest_figures_pass_with_speedup_bandwidth_and_roofline():
    r = verdict(100.0, 95.0)
    assert r.status is Status.OK and not r.warnings
    spec = r.figures["specs"][0]
    assert spec["speedup"] == pytest.approx(2.0)
    assert spec["gbps"] == pytest.approx(BYTES / 100e-6 / 1e9)
    assert spec["sol_pct"] == pytest.approx(100 * (BYTES / 4000e9 * 1e6) / 100.0)
    assert "2.00x" in r.summary


@pytest.mark.parametrize("host_us", [160.0, 300.0, 1000.0])
def test_a_host_loop_well_above_the_events_fails(host_us):
    r = verdict(100.0, host_us)
    assert r.status is Status.FAILED and r.error.type == "TimingIntegrityError"
    assert "timing escapes the events" in r.summary and "(16777216,)" in r.summary


def test_a_mild_gap_warns_and_a_small_absolute_gap_is_noise():
    mild = verdict(100.0, 130.0)
    assert mild.status is Status.OK and any("events may not see" in w for w in mild.warnings)
    tiny = verdict(5.0, 20.0, nbytes=4096)  # 4x, but 15 us: launch overhead of a tiny kernel, not hidden work
    assert tiny.status is Status.OK


def test_host_bound_calls_are_explained_by_the_enqueue_time_and_warned_not_failed():
    r = verdict(10.0, 130.0, enqueue_us=125.0, nbytes=4096)
    assert r.status is Status.OK
    assert any("host-bound" in w for w in r.warnings)
    hidden = verdict(10.0, 400.0, enqueue_us=125.0, nbytes=4096)  # the host explains 125 us of the 400
    assert hidden.status is Status.FAILED


def test_faster_than_light_fails():
    r = verdict(10.0, 10.0)  # 201 MB in 10 us is 20 TB/s on a 4 TB/s part
    assert r.status is Status.FAILED and "faster than the speed of light" in r.summary


def test_a_wrong_recheck_and_a_tampered_worker_fail():
    bad = verdict(100.0, 100.0, recheck=[{"label": "(16777216,)", "ok": False, "reason": "max_abs_err=1"}])
    assert bad.status is Status.FAILED and "last timed call is wrong" in bad.summary
    t = verdict(100.0, 100.0, tampered=["ktui.worker.timing.bench"])
    assert t.status is Status.FAILED and "timings untrustworthy" in t.summary
    assert "ktui.worker.timing.bench" in t.summary


def test_patching_ktui_worker_code_is_seen(monkeypatch):
    import ktui.worker.candidate as candidate
    import ktui.worker.timing as timing
    from ktui.worker import capture

    base = capture.fingerprint()
    assert capture.tampered(base) == []
    monkeypatch.setattr(timing, "bench", lambda *a, **k: None)
    monkeypatch.setattr(candidate.Candidate, "do_host_loop", lambda *a, **k: None)
    monkeypatch.setattr(candidate.Candidate, "do_added", lambda *a, **k: None, raising=False)
    got = capture.tampered(base)
    assert "ktui.worker.timing.bench" in got
    assert "ktui.worker.candidate.Candidate.do_host_loop" in got
    assert "ktui.worker.candidate.Candidate.do_added" in got
