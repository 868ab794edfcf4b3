"""Smoke test of the benchmark suite (benchmarks/): it runs, writes its JSON, and measures right.

No timing assertions: the figures depend on a shared machine. What is
checked is that ``python -m benchmarks --quick`` runs end to end on mutagrad
(peers are optional measurement tools, never test dependencies), that its
JSON has the keys the README and later runs rely on, and that every
workload's gradient, in every mutagrad mode the suite times, matches the
hand-written numpy gradient, which itself matches central finite differences.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import timing, workloads  # noqa: E402

# Small sizes: the programs are the suite's own, only N shrinks.
SMALL_CASES = [
    workloads.mse_loop_case(7),
    workloads.sum3_case(),
    workloads.mse_vec_case(11),
    workloads.fill_loop_case(9),
    workloads.network_case(),
    workloads.scratch_case(6),
]
MUTAGRAD_ENGINES = ["mutagrad-poison", "mutagrad-strict", "mutagrad-snapshot"]


def _case_engine_pairs(engine_names):
    return [
        pytest.param(case, engine, id=f"{case.id}-{engine}")
        for case in SMALL_CASES
        for engine in engine_names
        if engine in case.engines()
    ]


def _central_differences(case, flat, eps=1e-6):
    """Every partial derivative of the plain-numpy loss, one coordinate at a time."""
    grads = []
    for k, array in enumerate(flat):
        g = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            plus = [a.copy() for a in flat]
            minus = [a.copy() for a in flat]
            plus[k][index] += eps
            minus[k][index] -= eps
            g[index] = (case.loss(plus) - case.loss(minus)) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("case", SMALL_CASES, ids=lambda c: c.id)
def test_hand_written_gradient_matches_finite_differences(case):
    flat = case.inputs()
    hand = case.hand(*case.structure(flat))[1]
    assert timing.directional_error(case, flat, hand) < 1e-6
    if sum(a.size for a in flat) <= 64:
        numeric = _central_differences(case, flat)
        for got, want in zip(hand, numeric):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("case", "engine"), _case_engine_pairs(MUTAGRAD_ENGINES))
def test_mutagrad_gradient_matches_hand_written(case, engine):
    flat = case.inputs()
    hand = case.hand(*case.structure(flat))[1]
    got = workloads.build_runner(case, engine, flat)()
    assert timing.relative_error(got, hand) <= 1e-9
    assert timing.directional_error(case, flat, [np.asarray(g) for g in got]) < 1e-6


def test_scratch_reuse_needs_snapshot_and_copies_exactly_the_overwritten_values():
    case = workloads.scratch_case(6)
    flat = case.inputs()
    hand = case.hand(*case.structure(flat))[1]
    import mutagrad

    reuse = case.probes["mutagrad-poison"]
    with pytest.raises(mutagrad.PoisonedCaptureError):
        workloads.build_runner(case, "mutagrad-poison", flat, reuse)()
    with pytest.raises(mutagrad.MutationError):
        workloads.build_runner(case, "mutagrad-strict", flat, reuse)()
    got = workloads.build_runner(case, "mutagrad-snapshot", flat)()
    assert timing.relative_error(got, hand) <= 1e-9
    iterations = workloads.SCRATCH_ITERATIONS
    assert workloads.bytes_copied(case, flat) == 6 * 8 * (iterations - 1)


PEERS = [p for p in ("torch", "autograd", "mygrad") if importlib.util.find_spec(p) is not None]


@pytest.mark.parametrize(("case", "engine"), _case_engine_pairs(PEERS))
def test_installed_peer_gradient_matches_hand_written(case, engine):
    """Peers are optional; when one is installed its programs must compute the same gradient."""
    flat = case.inputs()
    hand = case.hand(*case.structure(flat))[1]
    got = workloads.build_runner(case, engine, flat)()
    assert timing.relative_error(got, hand) <= 1e-9


def test_quick_run_writes_json_with_expected_keys(tmp_path):
    out = tmp_path / "run.json"
    command = [
        sys.executable,
        "-m",
        "benchmarks",
        "--quick",
        "--only",
        "mse_loop/N=30,sum3,mse_vec/N=30,network,fill_loop",
        "--engines",
        "mutagrad,numpy-hand",
        "--no-plot",
        "--json",
        str(out),
    ]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "target checks" in done.stdout
    run = json.loads(out.read_text())
    assert set(run) >= {"schema", "meta", "cases", "memory", "memory_growth", "targets", "problems"}
    assert run["problems"] == []
    assert run["meta"]["quick"] is True
    assert set(run["meta"]["versions"]) >= {"python", "numpy", "mutagrad", "torch", "jax"}
    ids = [case["id"] for case in run["cases"]]
    assert ids == [
        "mse_loop/N=30",
        "sum3/N=30",
        "mse_vec/N=30",
        "fill_loop/N=1000",
        "network/layers=25",
    ]
    for case in run["cases"]:
        assert set(case) >= {"id", "workload", "title", "engines", "reference_fd_rel_err"}
        assert set(case["engines"]) == {"numpy-hand", "mutagrad-poison", "mutagrad-strict"}
        for entry in case["engines"].values():
            assert entry["status"] == "ok", entry
            assert entry["max_rel_err"] <= 1e-6
            assert entry["median_s"] > 0 and entry["rounds"] >= 1
            assert set(entry) >= {"min_s", "iqr_s", "samples_s", "vs_torch", "vs_mutagrad"}
            assert entry["vs_torch"] is None  # torch was not selected
    workloads_measured = {(m["workload"], m["engine"]) for m in run["memory"]}
    assert ("mse_loop", "mutagrad-poison") in workloads_measured
    assert ("fill_loop", "mutagrad-poison") in workloads_measured
    assert all(m["peak_bytes"] > 0 for m in run["memory"])
    names = [t["name"] for t in run["targets"]]
    assert "workload 4 N=1000: mutagrad/torch" in names  # present, N/A without torch
    assert any(name.startswith("workload 6 poison/strict overhead") for name in names)
    for target in run["targets"]:
        assert target["status"] in ("PASS", "FAIL", "N/A")


def test_the_minimal_tape_of_benchmarks_floor_computes_the_true_gradient():
    # benchmarks/floor.py measures a tape without checks as a lower bound for
    # workload 3; the bound only means something if its gradient is right.
    from benchmarks import floor

    rng = np.random.default_rng(3)
    y, yh = rng.random(30), rng.random(30)
    for got, want in zip(floor.minimal_gradient(y, yh), floor.by_hand(y, yh)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert floor.by_hand(y, yh)[0][0] == pytest.approx(2 * (y[0] - yh[0]) / 30)


def test_the_checked_tape_of_benchmarks_floor_is_right_and_its_checks_fire():
    # The checked tape is the minimal tape plus the cheapest form of each check mutagrad
    # makes; it bounds what the checks cost only if it computes the gradient and checks.
    from benchmarks import floor

    rng = np.random.default_rng(4)
    y, yh = rng.random(30), rng.random(30)
    readonly = rng.random(30)
    readonly.setflags(write=False)
    for got, want in zip(floor.checked_gradient(y, readonly), floor.by_hand(y, readonly)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert y.flags.writeable and not readonly.flags.writeable  # the flags given back

    view = y[:]  # made before the call: still writeable while the call runs
    original = floor._Checked.__sub__

    def writing_sub(self, other):
        view[0] += 1.0
        return original(self, other)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(floor._Checked, "__sub__", writing_sub)
        with pytest.raises(RuntimeError, match="written through a view"):
            floor.checked_gradient(y, yh)
    assert y.flags.writeable

    original_pow = floor._Checked.__pow__

    def pow_then_write(self, p):
        out = original_pow(self, p)
        self.version += 1  # what a write to the saved operand does to its version
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(floor._Checked, "__pow__", pow_then_write)
        with pytest.raises(RuntimeError, match="overwritten"):
            floor.checked_gradient(y, yh)
