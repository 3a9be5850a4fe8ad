"""Above the row bootstrap's size, global_measures computes the plug-in values on a second
thread while the resamples run: the same numbers to the last digit, and a bootstrap
stopped by its progress callback does not wait for them."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from calibcore.metrics import global_measures, uncertainty
from calibcore.metrics._resampling import ROW_BOOTSTRAP_MAX_ROWS


def _rows(n_rows: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    proba = np.round(rng.dirichlet(np.ones(n_classes), size=n_rows), 4)
    proba /= proba.sum(axis=1, keepdims=True)
    labels = (rng.uniform(size=(n_rows, 1)) > np.cumsum(proba, axis=1)).sum(axis=1)
    return np.minimum(labels, n_classes - 1), proba


def _table(*args, **kwargs) -> list[tuple]:
    result = global_measures(*args, **kwargs)
    return [result.resampling] + [(m.key, m.value, m.low, m.high, m.plug_in, m.note)
                                  for m in result.measures]


@pytest.mark.slow
@pytest.mark.parametrize(("n_classes", "view", "weighted"),
                         [(2, "top_label", False), (3, "classwise", True)])
def test_plug_in_beside_the_bootstrap_gives_the_same_table(
        monkeypatch: pytest.MonkeyPatch, n_classes: int, view: str, weighted: bool) -> None:
    n_rows = ROW_BOOTSTRAP_MAX_ROWS + 5_000  # resampled through cells
    labels, proba = _rows(n_rows, n_classes, seed=n_classes)
    weights = np.random.default_rng(1).integers(1, 4, n_rows).astype(float) if weighted \
        else None
    kwargs = dict(view=view, n_bootstrap=40, interval="hybrid", sample_weight=weights,
                  measures=["ece", "brier", "laplace_kernel_calibration_error",
                            "interval_calibration_error", "smooth_ece", "classwise_ece"])
    beside = _table(labels, proba, **kwargs)
    assert "cells" in beside[0] or "m-out-of-n" in beside[0]  # not the row bootstrap
    monkeypatch.setattr(uncertainty, "ROW_BOOTSTRAP_MAX_ROWS", 10**9)  # one thread
    inline = _table(labels, proba, **kwargs)
    assert beside == inline
    assert all(low is not None and low <= value <= high
               for _, value, low, high, _, _ in beside[1:])


def test_a_stopped_bootstrap_does_not_wait_for_the_plug_in_values() -> None:
    labels, proba = _rows(ROW_BOOTSTRAP_MAX_ROWS + 5_000, 2, seed=9)
    calls = []

    def stop(fraction: float) -> None:
        calls.append(fraction)
        raise KeyboardInterrupt("cancelled")

    began = time.perf_counter()
    with pytest.raises(KeyboardInterrupt, match="cancelled"):
        global_measures(labels, proba, n_bootstrap=200, progress=stop)
    assert calls and calls[0] < 1.0  # stopped after the first block of resamples
    assert time.perf_counter() - began < 30.0
    # the thread drawing the cells' resamples ahead ended with the bootstrap
    assert not [thread for thread in threading.enumerate()
                if thread.name.startswith("draws") and thread.is_alive()]
