"""The ``calibdash`` command: serve, report, recalibrate, apply."""

from __future__ import annotations

import argparse
import faulthandler
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from calibcore.exceptions import CalibrationInputError

if TYPE_CHECKING:
    from app.config import Settings
    from app.services.methods import MethodSpec


class SettingsError(ValueError):
    """A setting from the environment (``CALIBDASH_*``) or the command line failed its check."""


def _settings(**overrides: Any) -> Settings:
    """The settings, from the environment and ``overrides`` (the command line's); a value
    that fails its check is a :class:`SettingsError` naming its variable, not a traceback."""
    from pydantic import ValidationError

    from app.config import Settings

    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"])
            problems.append(f"CALIBDASH_{field.upper()}: {error['msg']} "
                            f"(got {error.get('input')!r})")
        raise SettingsError("invalid setting: " + "; ".join(problems)) from None


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.main import create_app
    from app.services.tables import ordinary_pages_for_arrays, share_one_heap

    # one heap for every thread: a freed million-row array is reused by the next request
    # whatever its thread, not kept in a heap of its own thread's (nor unmapped and
    # faulted in again, page by page, as every array of 4 MiB and more was)
    share_one_heap()
    # and on ordinary pages: a fresh huge page costs the most on a virtual machine whose
    # host takes back free memory (app.services.tables.ordinary_pages_for_arrays)
    ordinary_pages_for_arrays()

    overrides = {key: value for key, value in (("host", args.host), ("port", args.port),
                                               ("data_dir", args.data_dir)) if value is not None}
    if args.no_example:
        overrides["load_example"] = False
    settings = _settings(**overrides)
    print(f"calibdash: serving on http://{settings.host}:{settings.port}/ "
          f"(data in {settings.data_dir.resolve()})", flush=True)
    # a graceful stop waits at most 5 s for requests in flight (or queued for a compute slot)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="info",
                timeout_graceful_shutdown=5)
    return 0


def _report(args: argparse.Namespace) -> int:
    from app.services.report import build_partitioned_report, build_report

    if args.engine == "dask":
        from app.services.roles import RoleOverrides

        if args.drop_missing:
            raise CalibrationInputError("--drop-missing goes with --engine memory (the "
                                        "default).")
        if args.view == "classwise":
            raise CalibrationInputError("--view classwise is not available with --engine "
                                        "dask: choose positive (two classes) or top_label "
                                        "(classwise ECE and each class's diagram are in "
                                        "every report).")
        overrides = RoleOverrides(label=args.label,
                                  probabilities=_column_list(args.probabilities),
                                  features=_column_list(args.features), split=args.split,
                                  weight=args.weight)
        report = build_partitioned_report(args.file, overrides, view=args.view,
                                          scheduler=_scheduler(args), n_bins=args.n_bins,
                                          n_bootstrap=args.n_bootstrap,
                                          interval=args.interval,
                                          negative_rate=args.negative_rate)
    else:
        if args.label or args.probabilities or args.features or args.split or args.scheduler:
            raise CalibrationInputError("--label, --probabilities, --features, --split and "
                                        "--scheduler go with --engine dask; a file's roles "
                                        "are inferred.")
        report = build_report(Path(args.file), view=args.view, n_bins=args.n_bins,
                              n_bootstrap=args.n_bootstrap, drop_missing=args.drop_missing,
                              weight=args.weight, negative_rate=args.negative_rate,
                              interval=args.interval)
    text = json.dumps(report, indent=2, allow_nan=False)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    if args.html:
        from app.ui.report import render_html

        Path(args.html).write_text(render_html(report), encoding="utf-8")
        print(f"wrote {args.html}")
    print(f"{report['metrics']['view'].replace('_', '-')} view: "
          f"{_VIEW_MEANINGS[report['metrics']['view']]}")
    for item in report["metrics"]["measures"].values():
        if item["value"] is None:
            continue
        interval = ("" if item["low"] is None
                    else f"  [{item['low']:.6f}, {item['high']:.6f}]"
                    + (f"  plug-in {item['plug_in']:.6f}"
                       if item["plug_in"] != item["value"] else ""))
        print(f"{item['name']:>20}: {item['value']:.6f}{interval}")
    if report["metrics"].get("calibration_test"):
        test = report["metrics"]["calibration_test"]
        print(test["summary"])
        for other in test["other_views"]:
            print(f"Checked in the {other['view'].replace('_', '-')} view: "
                  f"p = {other['p_value']:.3f} — {other['verdict']}")
        if test.get("other_views_note"):
            print(test["other_views_note"])
        if test.get("cumulative_summary"):
            print(test["cumulative_summary"])
    elif report["metrics"].get("calibration_test_note"):
        print(report["metrics"]["calibration_test_note"])
    if report.get("weighted"):
        print(f"rows {report['weights_note']}")
    if report.get("n_left_out"):
        from app.services.datasets import rows_caption

        print(f"measured on {rows_caption(report)}")
    return 0


#: What each view's measures compare, as the report's first line says it.
_VIEW_MEANINGS = {"positive": "P(class 1) against the frequency of class 1",
                  "top_label": "the top class's probability against how often it is right",
                  "classwise": "each class's probability against that class's frequency, "
                               "averaged over classes"}


def _scheduler(args: argparse.Namespace) -> str | None:
    """``--scheduler``, else the server's ``CALIBDASH_DASK_SCHEDULER`` (so that, inside the
    server's container, the command uses the cluster the server uses), else None: a
    local in-process cluster."""
    return args.scheduler or _settings().dask_scheduler


def _port(value: str) -> int:
    """``--port``: a TCP port, 1 to 65535 (argparse reports anything else)."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {value!r}") from None
    if not 1 <= port <= 65_535:
        raise argparse.ArgumentTypeError(f"{port} is not a TCP port (1 to 65535)")
    return port


def _column_list(value: str | None) -> tuple[str, ...] | None:
    """Comma-separated column names, or None when not given."""
    if not value:
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip()) or None


def _export_format(out: str, given: str | None) -> Literal["csv", "parquet"]:
    if given == "parquet" or (given is None and Path(out).suffix.lower() in (".parquet", ".pq")):
        return "parquet"
    return "csv"


def _recalibrate(args: argparse.Namespace) -> int:
    from app.services.methods import MethodSpec
    from app.services.recalibration import recalibrate_table
    from app.services.tables import export_bytes, read_table

    try:
        params = json.loads(args.params) if args.params else {}
    except json.JSONDecodeError as exc:
        raise CalibrationInputError(f"--params is not valid JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise CalibrationInputError('--params must be a JSON object, e.g. \'{"n_bins": 10}\'.')
    features = list(_column_list(args.features) or ()) or None
    if args.engine == "dask":
        return _recalibrate_partitioned(args, MethodSpec(args.method, params, features))
    if not args.out or args.scheduler:
        raise CalibrationInputError("--out is required (and --scheduler goes with --engine "
                                    "dask).")
    path = Path(args.file)
    result = recalibrate_table(read_table(path, path.name),
                               MethodSpec(args.method, params, features),
                               renormalize=args.renormalize)
    export_format = _export_format(args.out, args.format)
    Path(args.out).write_bytes(export_bytes(result.frame, export_format))
    print(f"fitted {args.method} on {result.n_fitted:,} rows; wrote {args.out} "
          f"({export_format}, {len(result.frame):,} rows)")
    _fit_outputs(args.model_out, result.document, result.test_before, result.test_after,
                 "held-out test rows")
    return 0


def _recalibrate_partitioned(args: argparse.Namespace, spec: MethodSpec) -> int:
    from app.services.partitioned_files import recalibrate_partitioned

    if args.renormalize or args.format == "csv":
        raise CalibrationInputError("--renormalize and --format csv are not available with "
                                    "--engine dask (it writes partitioned Parquet).")
    result = recalibrate_partitioned(args.file, spec, out=args.out, scheduler=_scheduler(args),
                                     max_fit_rows=args.max_fit_rows)
    print(f"{spec.method}: {result.note}; wrote {result.n_rows:,} corrected rows in "
          f"{result.n_partitions} partitions to {result.out}/")
    _fit_outputs(args.model_out, result.document, result.test_before, result.test_after,
                 "held-out test rows of the fit sample")
    return 0


def _fit_outputs(model_out: str | None, document: dict[str, Any],
                 before: dict[str, float] | None, after: dict[str, float] | None,
                 held_out: str) -> None:
    """Write the model document if asked, and print the held-out measures if any."""
    if model_out:
        Path(model_out).write_text(json.dumps(document, allow_nan=False))
        print(f"wrote the fitted recalibrator to {model_out}")
    if before is not None and after is not None:
        print(f"{held_out}:     before     after")
        for key in ("nll", "brier", "ece", "accuracy"):
            print(f"{key:>18}: {before[key]:9.5f} {after[key]:9.5f}")


def _apply(args: argparse.Namespace) -> int:
    from app.services.saved_models import apply_model_to_file, load_model
    from app.services.tables import export_bytes

    try:
        document = json.loads(Path(args.model).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CalibrationInputError(f"{args.model} is not a JSON model document: {exc}") from exc
    path = Path(args.file)
    frame = apply_model_to_file(load_model(document), path, path.name)
    export_format = _export_format(args.out, args.format)
    Path(args.out).write_bytes(export_bytes(frame, export_format))
    print(f"applied {document.get('method')} to {len(frame):,} rows; wrote {args.out} "
          f"({export_format})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="calibdash", description="Calibration diagnostics.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="start the web app (REST API + dashboard)")
    serve.add_argument("--host", help="interface (default 127.0.0.1; CALIBDASH_HOST)")
    serve.add_argument("--port", type=_port, help="port (default 8050; CALIBDASH_PORT)")
    serve.add_argument("--data-dir", type=Path, help="store (default .calibdash; "
                       "CALIBDASH_DATA_DIR)")
    serve.add_argument("--no-example", action="store_true",
                       help="do not load the example dataset into an empty store")
    serve.set_defaults(handler=_serve)
    report = commands.add_parser("report", help="global measures of a prediction file as JSON")
    report.add_argument("file", help="CSV or Parquet prediction file (with --engine dask: "
                        "a path, glob, URL or folder of many)")
    report.add_argument("--out", help="write the JSON report here")
    report.add_argument("--html", help="also write a self-contained HTML report here")
    report.add_argument("--view", default=None,
                        choices=("top_label", "positive", "classwise"),
                        help="default: positive for two classes (P(class 1) against the "
                        "frequency of class 1), top_label for more")
    report.add_argument("--n-bins", type=int, default=15)
    report.add_argument("--interval", choices=("wilson", "clopper_pearson"), default="wilson",
                        help="per-bin interval of the binned reliability diagram: Wilson's "
                        "score interval or Clopper-Pearson's exact one (at least 95%% "
                        "coverage in every bin, wider)")
    report.add_argument("--n-bootstrap", type=int, default=200,
                        help="bootstrap resamples of the 95%% intervals (0: none)")
    report.add_argument("--engine", choices=("memory", "dask"), default="memory",
                        help="dask: files of any size (paths, globs, fsspec URLs or folders "
                        "of Parquet or CSV, hive-partitioned ones too), exact binned measures "
                        "merged from per-partition summaries")
    report.add_argument("--scheduler", help="with --engine dask: a Dask scheduler address "
                        "(default: CALIBDASH_DASK_SCHEDULER, else a local in-process "
                        "cluster)")
    report.add_argument("--label", help="with --engine dask: the label column")
    report.add_argument("--probabilities",
                        help="with --engine dask: probability columns, comma-separated")
    report.add_argument("--features",
                        help="with --engine dask: feature columns, comma-separated (default: "
                        "every column without another role)")
    report.add_argument("--split", help="with --engine dask: the split column (calibration/"
                        "test); the report adds the measures of the test rows")
    report.add_argument("--drop-missing", action="store_true",
                        help="leave out the rows with a missing label or probability (the "
                        "report counts them) instead of refusing the file")
    report.add_argument("--weight", help="the row-weight column (non-negative; default: a "
                        "column named weight, weights, sample_weight or sample_weights)")
    report.add_argument("--negative-rate", type=float, default=None,
                        help="the fraction of negatives a sampled log kept (binary labels): "
                        "negatives weigh 1 / rate")
    report.set_defaults(handler=_report)
    recalibrate = commands.add_parser(
        "recalibrate", help="fit a recalibrator on a prediction file (its calibration rows, or "
        "all rows without a split) and write the corrected file")
    recalibrate.add_argument("file", help="CSV or Parquet prediction file")
    recalibrate.add_argument("--method", required=True,
                             help="registry name: platt, temperature, isotonic, lece, ...")
    recalibrate.add_argument("--out", help="corrected file (.csv or .parquet); with --engine "
                             "dask a directory (default: calibrated-<method> beside the input)")
    recalibrate.add_argument("--engine", choices=("memory", "dask"), default="memory",
                             help="dask: files of any size (paths, globs, fsspec URLs, "
                             "folders); fitted on a sample above --max-fit-rows, every "
                             "partition corrected where it lies, written as partitioned "
                             "Parquet")
    recalibrate.add_argument("--scheduler", help="with --engine dask: a Dask scheduler address "
                             "(default: CALIBDASH_DASK_SCHEDULER, else a local in-process "
                             "cluster)")
    recalibrate.add_argument("--max-fit-rows", type=int, default=1_000_000,
                             help="with --engine dask: fit on a seeded sample above this")
    recalibrate.add_argument("--model-out", help="write the fitted recalibrator (JSON) here")
    recalibrate.add_argument("--params", help='method parameters as JSON, e.g. \'{"n_bins": 10}\'')
    recalibrate.add_argument("--features", help="feature columns, comma-separated (the "
                             "variable tree: one numeric column)")
    recalibrate.add_argument("--format", choices=("csv", "parquet"),
                             help="output format (default: from the --out suffix)")
    recalibrate.add_argument("--renormalize", action="store_true",
                             help="rescale probability rows that do not sum to 1")
    recalibrate.set_defaults(handler=_recalibrate)
    apply = commands.add_parser("apply", help="apply a saved recalibrator (JSON) to a file; "
                                "labels are not needed")
    apply.add_argument("model", help="model JSON from 'recalibrate --model-out' or the app")
    apply.add_argument("file", help="CSV or Parquet with the probability (and feature) columns")
    apply.add_argument("--out", required=True, help="corrected file (.csv or .parquet)")
    apply.add_argument("--format", choices=("csv", "parquet"),
                       help="output format (default: from the --out suffix)")
    apply.set_defaults(handler=_apply)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not faulthandler.is_enabled():
        # a native crash (a worker thread of the Dask engine, pyarrow, numba) prints every
        # thread's Python stack to stderr before the process dies, not a bare exit 139
        faulthandler.enable()
    try:
        return int(args.handler(args))
    except (CalibrationInputError, FileNotFoundError, SettingsError) as exc:
        print(f"calibdash: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
