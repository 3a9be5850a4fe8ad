"""Every job kind the server starts, run in-process and timed beside its estimate.

Shared by ``benchmarks/fit_costs.py`` (which fits each kind's cost model on these runs)
and ``benchmarks/bench_estimates.py`` (which checks the estimates against fresh runs).
A run uploads a file into services built as a server builds them (the same code the
server runs), asks the service for the estimate a page or the API shows (its terms are
the work counted), starts the job the page or route starts and times it from submission
to its end, as a user waiting for it does.

Job kinds (every ``jobs.submit`` of ``app/``): ``support``, ``heterogeneity``,
``recalibration`` (Recalibrate page and REST), ``lce`` and ``lce_curve`` (Local page and
REST), ``umap_warm_up`` (timed as the ``lce`` model's compile term), ``subgroups``,
``variables``, ``metrics`` (the Overview's bootstrap intervals) and ``external`` (files
registered by reference, read on Dask). ``kernels_warm_up`` is not timed here: its
estimate is the measured range from numba's cache loaded to every kernel compiled
(:data:`app.services.warm_up.KERNELS_ESTIMATE`).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import softmax

from app.config import Settings
from app.jobs import Job, Progress
from app.services import diagnostics, local, local_embedding
from app.services.context import Services, example_path
from app.services.cost import CostEstimate
from app.services.external import ExternalRequest, estimate_external, register_external
from app.services.heterogeneity import (
    HeterogeneityParams,
    estimate_heterogeneity,
    start_heterogeneity,
)
from app.services.methods import MethodSpec
from app.services.roles import RoleOverrides
from app.services.subgroups import SubgroupParams, estimate_subgroups, start_subgroups
from app.services.support import SupportParams, estimate_support, start_support
from app.services.tables import read_table
from app.services.variables import RankingParams, estimate_ranking, request_ranking

#: Every job kind with a cost model (``umap_warm_up`` is the ``lce`` model's compile term).
KINDS = ("support", "heterogeneity", "recalibration", "lce", "lce_curve", "subgroups",
         "variables", "metrics", "external")
#: The cost model each kind's estimate uses.
MODEL_OF = {"lce_curve": "lce"}


def wide_frame(n_rows: int, n_features: int, random_state: int = 0) -> pd.DataFrame:
    """A seeded binary file with many feature columns, a split and P(class 1)."""
    rng = np.random.default_rng(random_state)
    features = rng.normal(size=(n_rows, n_features))
    score = features[:, :5] @ rng.normal(size=5)
    probability = 1 / (1 + np.exp(-score))
    frame = pd.DataFrame(features, columns=[f"x{j}" for j in range(n_features)])
    frame["y_true"] = (rng.random(n_rows) < probability).astype(int)
    frame["y_prob"] = probability.round(6)
    frame["split"] = np.where(rng.random(n_rows) < 0.5, "calibration", "test")
    return frame


def long_frame(n_rows: int, random_state: int = 0) -> pd.DataFrame:
    """A seeded binary file of many rows and a few features (three numeric, one text),
    miscalibrated in one region, with a split."""
    rng = np.random.default_rng(random_state)
    frame = pd.DataFrame({"age": rng.normal(50, 12, n_rows).round(1),
                          "income": rng.lognormal(10, 0.5, n_rows).round(0),
                          "score": rng.normal(size=n_rows).round(4),
                          "region": rng.choice(["north", "south", "east", "west"], n_rows)})
    logit = 0.04 * (frame["age"] - 50) + 0.8 * frame["score"]
    truth = 1 / (1 + np.exp(-(logit + 0.6 * (frame["region"] == "east"))))
    frame["y_true"] = (rng.random(n_rows) < truth).astype(int)
    frame["y_prob"] = (1 / (1 + np.exp(-logit))).round(6)
    frame["split"] = np.where(rng.random(n_rows) < 0.5, "calibration", "test")
    return frame


def weighted_long_frame(n_rows: int, random_state: int = 0) -> pd.DataFrame:
    """:func:`long_frame` with survey-like row weights (a ``weight`` column, 0.2 to 5)."""
    frame = long_frame(n_rows, random_state)
    rng = np.random.default_rng([random_state, 1])
    frame["weight"] = rng.lognormal(0.0, 0.6, n_rows).clip(0.2, 5.0).round(3)
    return frame


def multiclass_frame(n_rows: int, n_classes: int = 10, random_state: int = 0) -> pd.DataFrame:
    """A seeded file of ``n_classes`` classes (a softmax of noisy logits of 4 features,
    overconfident), with a split."""
    rng = np.random.default_rng(random_state)
    features = rng.normal(size=(n_rows, 4))
    logits = features @ rng.normal(size=(4, n_classes)) + rng.normal(size=(n_rows, n_classes))
    cumulative = np.cumsum(softmax(logits, axis=1), axis=1)
    labels = (rng.random(n_rows)[:, None] < cumulative).argmax(axis=1)
    frame = pd.DataFrame(softmax(1.5 * logits, axis=1).round(6),
                         columns=[f"proba_{k}" for k in range(n_classes)])
    frame = frame.div(frame.sum(axis=1), axis=0)
    frame["label"] = labels
    for j in range(4):
        frame[f"x{j}"] = features[:, j]
    frame["split"] = np.where(rng.random(n_rows) < 0.5, "calibration", "test")
    return frame


def default_nb(n_rows: int | None = None) -> pd.DataFrame:
    """The bundled example (7,000 rows, 4 features, a split), or its first ``n_rows``."""
    frame = read_table(example_path(), "default_nb.csv")
    return frame if n_rows is None else frame.head(n_rows)


#: The three files the estimates are checked on: name -> how to make it.
CHECKED_FILES: dict[str, Callable[[], pd.DataFrame]] = {
    "default_nb (7,000 x 4)": default_nb,
    "wide (4,322 x 85)": lambda: wide_frame(4_322, 85),
    "long (300,000 x 4)": lambda: long_frame(300_000),
}
#: Smaller files for ``--quick`` (no check).
QUICK_FILES: dict[str, Callable[[], pd.DataFrame]] = {
    "default_nb (600 x 4)": lambda: default_nb(600),
    "wide (300 x 12)": lambda: wide_frame(300, 12),
}
#: More sizes the models are fitted on, besides the checked files.
FIT_FILES: dict[str, Callable[[], pd.DataFrame]] = {
    "default_nb (2,000 x 4)": lambda: default_nb(2_000),
    "wide (1,500 x 30)": lambda: wide_frame(1_500, 30, random_state=1),
    "long (30,000 x 4)": lambda: long_frame(30_000, random_state=1),
    "long weighted (300,000 x 4)": lambda: weighted_long_frame(300_000, random_state=2),
    "long weighted (12,000 x 4)": lambda: weighted_long_frame(12_000, random_state=3),
    "10 classes (6,000 x 4)": lambda: multiclass_frame(6_000),
    "10 classes (60,000 x 4)": lambda: multiclass_frame(60_000, random_state=1),
    **CHECKED_FILES,
}


@dataclass(frozen=True)
class Case:
    """One job of one kind: its label, what to estimate and what to start."""

    kind: str
    label: str
    estimate: Callable[[Services, str], CostEstimate]
    start: Callable[[Services, str], Job]
    #: Largest file (rows) this case is run on when fitting (t-SNE on 300k rows: hours).
    max_rows: int | None = None
    #: Whether it is what the page or route runs by default (the checked cases).
    default: bool = True


def _recalibration(specs: list[MethodSpec]) -> tuple[Callable[[Services, str], CostEstimate],
                                                     Callable[[Services, str], Job]]:
    def estimate(services: Services, dataset_id: str) -> CostEstimate:
        return services.recalibrations.estimate(dataset_id, specs)

    def start(services: Services, dataset_id: str) -> Job:  # as the Recalibrate page does
        def work(progress: Progress) -> dict[str, Any]:
            return services.recalibrations.fit_many(dataset_id, specs, progress=progress)

        return services.jobs.submit("recalibration", work,
                                    estimate=estimate(services, dataset_id).as_dict())

    return estimate, start


def _landscape(reducer: str) -> tuple[Callable[[Services, str], CostEstimate],
                                      Callable[[Services, str], Job]]:
    params = local.LandscapeParams(
        representation=local.RepresentationParams(reducer=reducer))  # type: ignore[arg-type]
    return (lambda services, dataset_id: local.estimate_landscape(
                services, dataset_id, params.representation),
            lambda services, dataset_id: local.start_landscape(services, dataset_id, params))


def _metrics() -> tuple[Callable[[Services, str], CostEstimate],
                        Callable[[Services, str], Job]]:
    request = diagnostics.MetricsRequest()

    def start(services: Services, dataset_id: str) -> Job:  # as the Overview does
        def work(progress: Progress) -> dict[str, Any]:
            return diagnostics.metrics_for(services, dataset_id, request, progress=progress)

        return services.jobs.submit("metrics", work, estimate=diagnostics.estimate_metrics(
            services, dataset_id, request).as_dict())

    return (lambda services, dataset_id: diagnostics.estimate_metrics(
        services, dataset_id, request)), start


def _ranking_job(services: Services, dataset_id: str) -> Job:
    job = request_ranking(services, dataset_id, RankingParams(), as_job=True).job
    if job is None:
        raise RuntimeError("the ranking was cached: no job to time")
    return job


CASES: tuple[Case, ...] = (
    Case("support", "calibration support", lambda s, d: estimate_support(s, d, SupportParams()),
         lambda s, d: start_support(s, d, SupportParams())),
    Case("heterogeneity", "HH (500 test rows)",
         lambda s, d: estimate_heterogeneity(s, d, HeterogeneityParams()),
         lambda s, d: start_heterogeneity(s, d, HeterogeneityParams())),
    Case("recalibration", "recalibration: temperature",
         *_recalibration([MethodSpec("temperature")])),
    Case("recalibration", "recalibration: SWC", *_recalibration([MethodSpec("swc")]),
         default=False),
    Case("recalibration", "recalibration: Platt, isotonic",
         *_recalibration([MethodSpec("platt"), MethodSpec("isotonic")]), default=False),
    Case("recalibration", "recalibration: LECE", *_recalibration([MethodSpec("lece")]),
         default=False),
    Case("recalibration", "recalibration: TS+LECE", *_recalibration([MethodSpec("composed")]),
         default=False),
    Case("recalibration", "recalibration: LoRe", *_recalibration([MethodSpec("lore")]),
         default=False),
    Case("recalibration", "recalibration: SWC-HH", *_recalibration([MethodSpec("swc_hh")]),
         default=False),
    Case("lce", "local landscape (PCA)", *_landscape("pca")),
    Case("lce", "local landscape (features as they are)", *_landscape("none"),
         max_rows=30_000, default=False),
    Case("lce", "local landscape (t-SNE)", *_landscape("tsne"), max_rows=2_000,
         default=False),
    Case("lce", "local landscape (UMAP)", *_landscape("umap"), max_rows=7_000,
         default=False),
    Case("lce_curve", "MLCE curve (PCA)",
         lambda s, d: local.estimate_curve(s, d, local.CurveParams()),
         lambda s, d: local.start_curve(s, d, local.CurveParams())),
    Case("subgroups", "subgroups (pairs)",
         lambda s, d: estimate_subgroups(s, d, SubgroupParams()),
         lambda s, d: start_subgroups(s, d, SubgroupParams())),
    Case("variables", "variable ranking",
         lambda s, d: estimate_ranking(s.datasets.prediction_set(d), RankingParams()),
         _ranking_job),
    Case("metrics", "measures with bootstrap intervals", *_metrics()),
)


#: Below this load average (2 cores) a run's wall time is taken as it is.
QUIET_LOAD = 1.5


@dataclass(frozen=True)
class Run:
    """One timed job: its estimate (and the work counted), the measured wall seconds, the
    process's CPU seconds over the job and the load average when it started."""

    kind: str
    case: str
    file: str
    estimate: CostEstimate
    seconds: float
    load: float
    cpu_seconds: float
    terms: dict[str, float] = field(default_factory=dict)

    @property
    def quiet_seconds(self) -> float:
        """The wall time on a quiet machine: as measured below :data:`QUIET_LOAD`; above,
        the CPU seconds / sqrt(2), capped by the wall time. On 2 cores a job's quiet wall
        time lies between its CPU time / 2 (both cores busy) and its CPU time (one), so
        this is within sqrt(2) of it whatever the job's parallelism, while the wall time
        of a loaded machine (other processes taking the cores) is not."""
        if self.load < QUIET_LOAD:
            return self.seconds
        return min(self.seconds, self.cpu_seconds / np.sqrt(2.0))

    @property
    def ratio(self) -> float:
        """Estimate / quiet wall seconds."""
        return self.estimate.seconds / max(self.quiet_seconds, 1e-3)


def wait(services: Services, job: Job, timeout: float = 1800.0) -> float:
    """Seconds from now until ``job`` ends (raises when it did not succeed)."""
    began = time.perf_counter()
    while job.status in ("queued", "running"):
        if time.perf_counter() - began > timeout:
            services.jobs.cancel(job.id)
            raise TimeoutError(f"{job.kind} still running after {timeout:g} s")
        time.sleep(0.02)
    seconds = time.perf_counter() - began
    if job.status != "succeeded":
        raise RuntimeError(f"{job.kind} ended {job.status}: {job.snapshot()['error']}")
    return seconds


@contextmanager
def server_services(folder: Path, **settings: Any) -> Iterator[Services]:
    """Services as a server builds them, jobs running, over ``folder``."""
    services = Services.build(Settings(data_dir=folder, load_example=False, warm_up=False,
                                       **settings))
    services.jobs.start()
    try:
        yield services
    finally:
        services.jobs.shutdown()


def upload(services: Services, folder: Path, frame: pd.DataFrame, name: str) -> str:
    """Store ``frame`` as a dataset, as an upload of its CSV does; its id."""
    path = folder / "upload.csv"
    frame.to_csv(path, index=False)
    return str(services.datasets.create_from_file(path, "upload.csv", RoleOverrides(),
                                                  name)["id"])


def time_case(services: Services, case: Case, dataset_id: str, file: str) -> Run:
    """The estimate shown before starting, then the job timed from its submission."""
    estimate = case.estimate(services, dataset_id)
    load, cpu = os.getloadavg()[0], time.process_time()
    began = time.perf_counter()
    wait(services, case.start(services, dataset_id))
    seconds = time.perf_counter() - began
    return Run(case.kind, case.label, file, estimate, seconds, load,
               time.process_time() - cpu, dict(estimate.terms or {}))


def time_warm_up(services: Services) -> Run | None:
    """UMAP's first compile in this process, as an ``lce`` run of the compile term."""
    estimate_model = local_embedding.cost_model("lce")
    job = local_embedding.start_warm_up(services)
    if job is None:
        return None
    load, cpu = os.getloadavg()[0], time.process_time()
    seconds = wait(services, job)
    cpu = time.process_time() - cpu
    estimate = CostEstimate(estimate_model.seconds({"umap_compile": 1.0}), "UMAP compile",
                            spread=estimate_model.spread, terms={"fixed": 1.0,
                                                                 "umap_compile": 1.0})
    return Run("lce", "UMAP compile (warm-up)", "synthetic", estimate, seconds, load, cpu,
               dict(estimate.terms or {}))


def time_external(services: Services, folder: Path, frame: pd.DataFrame, file: str,
                  n_files: int = 4) -> Run:
    """Register ``frame`` written as ``n_files`` Parquet files by reference, timed."""
    lake = folder / f"lake-{len(frame)}"
    lake.mkdir(exist_ok=True)
    bounds = np.linspace(0, len(frame), n_files + 1).astype(int)
    for number in range(n_files):
        frame.iloc[bounds[number]:bounds[number + 1]].to_parquet(
            lake / f"part-{number}.parquet", index=False)
    uri = str(lake)
    estimate = estimate_external(uri)
    request = ExternalRequest(uri, RoleOverrides(), f"lake {file}")
    settings = services.settings

    def work(progress: Progress) -> dict[str, Any]:
        return register_external(services.datasets, request, scheduler=None,
                                 sample_rows=settings.external_sample_rows,
                                 random_state=settings.random_state,
                                 n_bootstrap=settings.n_bootstrap, progress=progress)

    load, cpu = os.getloadavg()[0], time.process_time()
    began = time.perf_counter()
    wait(services, services.jobs.submit("external", work, estimate=estimate.as_dict()))
    seconds = time.perf_counter() - began
    return Run("external", "external registration (Dask, Parquet)", file, estimate, seconds,
               load, time.process_time() - cpu, dict(estimate.terms or {}))


def _warm_up(services: Services, folder: Path, kinds: tuple[str, ...]) -> None:
    """Run each default case once on a tiny file, untimed: a process's first job of a
    kind also loads its compiled code and imports (a second or so, once per server), which
    no estimate counts."""
    frame = default_nb(600)
    for case in CASES:
        if case.kind in kinds and case.default:
            dataset_id = upload(services, folder, frame, "warm-up")
            try:
                wait(services, case.start(services, dataset_id))
            except RuntimeError:
                pass
            finally:
                services.datasets.delete(dataset_id)
    if "external" in kinds:
        time_external(services, folder, frame, "warm-up")


def run_files(files: dict[str, Callable[[], pd.DataFrame]], kinds: tuple[str, ...],
              *, defaults_only: bool, report: Callable[[Run], None] = lambda run: None
              ) -> list[Run]:
    """Time every case of ``kinds`` on every file (a fresh dataset per file, so nothing
    is cached); ``defaults_only`` keeps the cases pages and routes run by default."""
    runs: list[Run] = []
    runs_external = False  # quick: one registration (a Dask cluster starts each time)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        with server_services(folder, external_roots=str(folder)) as services:
            if "lce" in kinds and not defaults_only:
                warm = time_warm_up(services)
                if warm is not None:
                    runs.append(warm)
                    report(warm)
            _warm_up(services, folder, kinds)
            for file, make in files.items():
                frame = make()
                for case in CASES:
                    if case.kind not in kinds or (defaults_only and not case.default):
                        continue
                    if case.max_rows is not None and len(frame) > case.max_rows:
                        continue
                    dataset_id = upload(services, folder, frame, file)  # nothing cached
                    try:
                        run = time_case(services, case, dataset_id, file)
                    except RuntimeError as exc:  # e.g. too few rows for this job: say so
                        print(f"skipped {case.label} on {file}: {exc}", flush=True)
                        continue
                    finally:
                        services.datasets.delete(dataset_id)
                    runs.append(run)
                    report(run)
                if "external" in kinds and (files is not QUICK_FILES or not runs_external):
                    run = time_external(services, folder, frame, file)
                    runs_external = True
                    runs.append(run)
                    report(run)
    return runs
