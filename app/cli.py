"""The ``calibdash`` command: serve, report, recalibrate, apply."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from calibcore.exceptions import CalibrationInputError


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.config import Settings
    from app.main import create_app

    overrides = {key: value for key, value in (("host", args.host), ("port", args.port),
                                               ("data_dir", args.data_dir)) if value is not None}
    if args.no_example:
        overrides["load_example"] = False
    settings = Settings(**overrides)
    print(f"calibdash: serving on http://{settings.host}:{settings.port}/ "
          f"(data in {settings.data_dir.resolve()})", flush=True)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="info")
    return 0


def _report(args: argparse.Namespace) -> int:
    from app.services.report import build_report

    report = build_report(Path(args.file), view=args.view, n_bins=args.n_bins)
    text = json.dumps(report, indent=2, allow_nan=False)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    measures = report["metrics"]["metrics"]
    for key, value in measures.items():
        print(f"{key:>16}: {value:.6f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="calibdash", description="Calibration diagnostics.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="start the web app (REST API + dashboard)")
    serve.add_argument("--host", help="interface (default 127.0.0.1; CALIBDASH_HOST)")
    serve.add_argument("--port", type=int, help="port (default 8050; CALIBDASH_PORT)")
    serve.add_argument("--data-dir", type=Path, help="store (default .calibdash; "
                       "CALIBDASH_DATA_DIR)")
    serve.add_argument("--no-example", action="store_true",
                       help="do not load the example dataset into an empty store")
    serve.set_defaults(handler=_serve)
    report = commands.add_parser("report", help="global measures of a prediction file as JSON")
    report.add_argument("file", help="CSV or Parquet prediction file")
    report.add_argument("--out", help="write the JSON report here")
    report.add_argument("--view", default="top_label",
                        choices=("top_label", "positive", "classwise"))
    report.add_argument("--n-bins", type=int, default=15)
    report.set_defaults(handler=_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except (CalibrationInputError, FileNotFoundError) as exc:
        print(f"calibdash: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
