"""docker/compose.yaml, the team deployment: the server, a Dask scheduler and Dask workers
from one image, wired through the server's settings.

The static tests always run: they read the file with PyYAML (anchors and ``<<`` merges
resolved as Compose resolves them) and check the wiring a typo would break without any
error until a registration hangs or fails on the cluster. Where the docker CLI has its
compose plugin, ``docker compose config`` must resolve the same stack; where a Docker
daemon answers, the slow test builds the image, starts the stack with two workers and
registers an external dataset through the scheduler.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pytest
import yaml

from app.config import Settings
from tests.conftest import REPO
from tests.test_dockerfile import DOCKERFILE, copied_sources

COMPOSE = REPO / "docker" / "compose.yaml"
DEPLOYING = REPO / "docs" / "deploying.md"
DOCKERIGNORE = REPO / ".dockerignore"
#: What ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?error}`` look like in the file.
VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?:(?P<kind>:[-?])(?P<rest>[^}]*))?\}")
TOKEN = "a-test-token-not-a-secret"


def interpolated(text: str, environment: dict[str, str]) -> str:
    """``text`` with its variables replaced as Compose replaces them (``:-`` default,
    ``:?`` required: KeyError when missing)."""
    def value(match: re.Match[str]) -> str:
        name, kind, rest = match["name"], match["kind"], match["rest"]
        if environment.get(name):
            return environment[name]
        if kind == ":-":
            return rest
        raise KeyError(f"{name}: {rest}")
    return VARIABLE.sub(value, text)


def compose(environment: dict[str, str] | None = None) -> dict[str, Any]:
    """docker/compose.yaml as Compose reads it, variables replaced from ``environment``
    (a token only, by default)."""
    text = COMPOSE.read_text(encoding="utf-8")
    return yaml.safe_load(interpolated(
        text, {"CALIBDASH_API_TOKEN": TOKEN} if environment is None else environment))


def role(services: dict[str, Any], command: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """The one service whose command starts with ``command`` (the server: no command, the
    image's ``calibdash serve``)."""
    found = [(name, service) for name, service in services.items()
             if tuple(service.get("command", ("calibdash", "serve"))[:len(command)]) == command]
    assert len(found) == 1, (command, [name for name, _ in found])
    return found[0]


def option(command: list[str], flag: str) -> str:
    """The value after ``flag`` in an exec-form command."""
    assert flag in command, (flag, command)
    return command[command.index(flag) + 1]


def mounts(service: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(source, target, read-only) of each short-syntax volume of ``service``."""
    found = []
    for volume in service.get("volumes", []):
        assert isinstance(volume, str), f"long-syntax volume {volume}: read it too"
        source, target, *mode = volume.split(":")
        found.append((source, target, "ro" in (mode[0].split(",") if mode else [])))
    return found


def stack() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    services = compose()["services"]
    _, server = role(services, ("calibdash", "serve"))
    _, scheduler = role(services, ("dask", "scheduler"))
    _, worker = role(services, ("dask", "worker"))
    return server, scheduler, worker


def test_every_service_runs_the_one_image_built_from_docker_dockerfile() -> None:
    """dask, distributed, pandas and calibcore must be the same versions on the client (the
    server), the scheduler and the workers: one image, one build, three commands; and
    that image has the dask CLI the commands run."""
    services = compose()["services"]
    assert len(services) == 3
    images = {json.dumps({key: service.get(key) for key in ("image", "build")},
                         sort_keys=True) for service in services.values()}
    assert len(images) == 1, images
    build = next(iter(services.values()))["build"]
    context = (COMPOSE.parent / build["context"]).resolve()  # relative to the file
    assert context == REPO
    assert (context / build["dockerfile"]).resolve() == DOCKERFILE.resolve()
    assert next(iter(services.values()))["image"].startswith("calibdash:")
    # `dask scheduler` and `dask worker` are distributed's, which the package requires
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "dependencies"]
    assert any(re.match(r"dask\[[^\]]*\bdistributed\b", item) for item in dependencies)
    commands = {entry.name for entry in importlib.metadata.entry_points(group="dask_cli")}
    assert {"scheduler", "worker"} <= commands
    assert importlib.metadata.version("distributed") == importlib.metadata.version("dask")


def test_the_server_and_the_workers_name_the_scheduler_service() -> None:
    """CALIBDASH_DASK_SCHEDULER is tcp://<the scheduler service>:<the port it listens on>,
    and every worker joins that same address."""
    services = compose()["services"]
    name, scheduler = role(services, ("dask", "scheduler"))
    _, server = role(services, ("calibdash", "serve"))
    _, worker = role(services, ("dask", "worker"))
    address = server["environment"]["CALIBDASH_DASK_SCHEDULER"]
    parts = urlsplit(address)
    assert parts.scheme == "tcp" and parts.hostname == name
    assert parts.port == int(option(scheduler["command"], "--port"))
    assert worker["command"][2] == address
    assert Settings(dask_scheduler=address).dask_scheduler == address


def test_the_data_lake_is_one_read_only_path_in_the_server_and_every_worker() -> None:
    """The server names the files (under CALIBDASH_EXTERNAL_ROOTS) and builds the graph;
    the workers open them: the same host folder at the same path, read-only, in both.
    The store is a named volume at CALIBDASH_DATA_DIR, on the server only."""
    server, scheduler, worker = stack()
    roots = server["environment"]["CALIBDASH_EXTERNAL_ROOTS"].split(",")
    lakes = [(source, target, ro) for source, target, ro in mounts(server) if target in roots]
    assert len(lakes) == len(roots) == 1, (roots, mounts(server))
    assert lakes[0][2], "the data lake is mounted read-only"
    assert lakes == [mount for mount in mounts(worker) if mount[1] in roots]
    assert PurePosixPath(roots[0]).is_absolute()  # allowed_uri needs absolute folders
    assert not mounts(scheduler)  # the scheduler never reads a row
    store = [(source, target) for source, target, _ in mounts(server)
             if target == server["environment"]["CALIBDASH_DATA_DIR"]]
    assert len(store) == 1 and store[0][0] in compose()["volumes"]
    assert not any(source == store[0][0] for source, _, _ in mounts(worker))
    # a different lake on the host moves both mounts
    moved = compose({"CALIBDASH_API_TOKEN": TOKEN, "DATA_LAKE": "/mnt/predictions"})
    assert {mount[0] for service in moved["services"].values()
            for mount in mounts(service) if mount[1] == roots[0]} == {"/mnt/predictions"}


def test_the_token_comes_from_the_environment_and_is_required() -> None:
    """No literal secret in the file: the token is a required variable, and the stack
    refuses to start (Compose stops at interpolation) without it."""
    text = COMPOSE.read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    server = next(service for service in raw["services"].values()
                  if "CALIBDASH_API_TOKEN" in service.get("environment", {}))
    assert re.fullmatch(r"\$\{CALIBDASH_API_TOKEN:\?[^}]+\}",
                        server["environment"]["CALIBDASH_API_TOKEN"])
    with pytest.raises(KeyError, match="CALIBDASH_API_TOKEN"):
        compose({})
    assert compose({"CALIBDASH_API_TOKEN": TOKEN})["services"]
    assert sum("CALIBDASH_API_TOKEN" in service.get("environment", {})
               for service in raw["services"].values()) == 1
    # the file the token lives in stays out of git and out of the image's build context
    assert "/docker/.env" in (REPO / ".gitignore").read_text().splitlines()
    assert "docker/.env" in DOCKERIGNORE.read_text().splitlines()


def test_health_checks_start_order_and_restarts() -> None:
    """Each service states its own health check (the image's asks for the server's
    /api/v1/health, which the scheduler and the workers do not serve), on the port
    that service listens on; the server and the workers wait for a healthy scheduler;
    everything restarts unless stopped."""
    server, scheduler, worker = stack()
    for service in (server, scheduler, worker):
        assert service["restart"] == "unless-stopped"
        assert service["healthcheck"]["test"][0] == "CMD"
    urls = {id(service): re.search(r"http://[^'\"]+", " ".join(service["healthcheck"]["test"]))
            for service in (server, scheduler, worker)}
    health = urlsplit(urls[id(server)][0])
    published = [port.split(":")[-1] for port in server["ports"]]
    assert health.path == "/api/v1/health" and str(health.port) in published
    assert health.port == Settings.model_fields["port"].default  # the image's CALIBDASH_PORT
    assert "CALIBDASH_PORT=8050" in DOCKERFILE.read_text()
    assert "'Host': 'localhost'" in server["healthcheck"]["test"][-1]
    assert "localhost" in server["environment"]["CALIBDASH_ALLOWED_HOSTS"].split(",")
    for service in (scheduler, worker):
        url = urlsplit(urls[id(service)][0])
        assert url.path == "/health"
        assert f":{url.port}" == option(service["command"], "--dashboard-address")
    for service in (server, worker):
        assert service["depends_on"]["scheduler"]["condition"] == "service_healthy"


def test_every_calibdash_variable_is_a_setting_and_documented() -> None:
    """A misspelt CALIBDASH_* variable is silently ignored by pydantic-settings: each one
    the compose file and the Dockerfile set is a field of Settings and has a row in the
    settings table of docs/deploying.md."""
    used = set()
    for path in (COMPOSE, DOCKERFILE):
        used |= set(re.findall(r"\bCALIBDASH_[A-Z0-9_]+", path.read_text(encoding="utf-8")))
    assert {"CALIBDASH_DASK_SCHEDULER", "CALIBDASH_EXTERNAL_ROOTS", "CALIBDASH_API_TOKEN",
            "CALIBDASH_DATA_DIR"} <= used
    prefix = Settings.model_config["env_prefix"]
    unknown = {name for name in used
               if name.removeprefix(prefix).lower() not in Settings.model_fields}
    assert not unknown, f"not settings of app/config.py: {sorted(unknown)}"
    table = {match for line in DEPLOYING.read_text(encoding="utf-8").splitlines()
             if line.startswith("| `CALIBDASH_")
             for match in re.findall(r"`(CALIBDASH_[A-Z0-9_]+)", line.split("|")[1])}
    assert not used - table, f"missing from docs/deploying.md: {sorted(used - table)}"


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether ``path`` (relative, POSIX) or a folder above it matches one of the plain
    .dockerignore ``patterns`` (no ``!`` exceptions; ``**/name`` matches at any depth)."""
    parts = PurePosixPath(path).parts
    above = ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
    for pattern in (pattern.rstrip("/") for pattern in patterns):
        if pattern.startswith("**/"):
            if any(fnmatch.fnmatch(part, pattern[3:]) for part in parts):
                return True
        elif any(fnmatch.fnmatch(folder, pattern) for folder in above):
            return True
    return False


def test_the_image_gets_every_package_and_its_data_and_not_the_lake() -> None:
    """The wheel the Dockerfile installs needs app/examples and app/ui/assets beside the
    code: each package-data file lies under a COPY source and is not left out of the
    build context, while the virtual environment, the store and docker/lake are."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = [line.strip() for line in DOCKERIGNORE.read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert not any(pattern.startswith("!") for pattern in patterns)  # ignored() is plain
    sources = copied_sources()
    data_files = []
    for package, globs in config["tool"]["setuptools"]["package-data"].items():
        assert package in sources
        for pattern in globs:
            found = sorted((REPO / package).glob(pattern))
            assert found, f"{package}/{pattern} matches nothing"
            data_files += [file.relative_to(REPO).as_posix() for file in found]
    assert {"app/examples/default_nb.csv", "app/ui/assets/style.css"} <= set(data_files)
    for path in data_files:
        assert any(path == source or path.startswith(f"{source}/") for source in sources)
        assert not ignored(path, patterns), path
    for source in sources:
        assert not ignored(source, patterns), source
        code = [file.relative_to(REPO).as_posix() for file in (REPO / source).rglob("*.py")
                if "__pycache__" not in file.parts]
        assert not [file for file in code if ignored(file, patterns)], source
    for heavy in (".venv/bin/python", "docker/lake/logs/part-0.parquet", ".git/HEAD",
                  ".calibdash/calibdash.sqlite3", "app/__pycache__/cli.cpython-311.pyc"):
        assert ignored(heavy, patterns), heavy


def compose_cli() -> list[str] | None:
    """``docker compose`` or ``docker-compose`` (v2), when one answers here."""
    for command in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(command[0]) is None:
            continue
        done = subprocess.run([*command, "version", "--short"], capture_output=True,
                              text=True, timeout=30)
        if done.returncode == 0 and done.stdout.strip().lstrip("v").startswith("2"):
            return command
    return None


#: Variables of the compose file a developer's shell may hold; the tests set their own.
COMPOSE_VARIABLES = ("CALIBDASH_API_TOKEN", "DATA_LAKE", "PUBLISHED_PORT", "IMAGE_TAG",
                     "SERVER_NAMES", "WORKER_MEMORY_LIMIT")


def test_docker_compose_config_resolves_the_same_stack(tmp_path) -> None:
    """Compose itself (it needs no daemon to read a file) refuses the file without the
    token and, with one, resolves what the static tests read."""
    command = compose_cli()
    if command is None:
        pytest.skip("no Compose v2 here (neither `docker compose` nor `docker-compose` "
                    "answers `version`); the static tests above read the file instead")
    environment = {key: value for key, value in os.environ.items()
                   if key not in COMPOSE_VARIABLES}
    empty = tmp_path / "empty.env"  # not a developer's docker/.env
    empty.write_text("")
    command = [*command, "-f", str(COMPOSE), "--env-file", str(empty), "config"]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60,
                             env=environment)
    assert refused.returncode != 0 and "CALIBDASH_API_TOKEN" in refused.stderr
    done = subprocess.run([*command, "--format", "json"], capture_output=True, text=True,
                          timeout=60, env={**environment, "CALIBDASH_API_TOKEN": TOKEN})
    assert done.returncode == 0, done.stderr
    resolved = json.loads(done.stdout)
    assert resolved["name"] == "calibdash"
    services = resolved["services"]
    assert services["calibdash"]["environment"]["CALIBDASH_API_TOKEN"] == TOKEN
    assert services["calibdash"]["environment"]["CALIBDASH_DASK_SCHEDULER"] == \
        compose()["services"]["calibdash"]["environment"]["CALIBDASH_DASK_SCHEDULER"]
    lake = str((COMPOSE.parent / "lake").resolve())
    for name in ("calibdash", "worker"):
        binds = [volume for volume in services[name]["volumes"] if volume["type"] == "bind"]
        assert [(v["source"], v["target"], v.get("read_only")) for v in binds] == \
            [(lake, "/lake", True)]
    assert {service["image"] for service in services.values()} == {"calibdash:local"}


def docker_daemon() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
def test_the_stack_registers_an_external_dataset_through_the_scheduler(tmp_path) -> None:
    """Build the image, start the server, the scheduler and two workers on a lake made
    here, register its files by reference with the token, and find the exact row count
    computed on the scheduler the server names, with both workers joined."""
    cli = compose_cli()
    if cli is None or not docker_daemon():
        pytest.skip("no Docker daemon (or no Compose v2) on this machine: `docker info` "
                    "fails; the static tests above check the file")
    command = [*cli, "-f", str(COMPOSE), "-p", f"calibdash-test-{os.getpid()}"]
    rng = np.random.default_rng(8)
    n_rows = 6_000
    probabilities = rng.uniform(0.02, 0.98, n_rows)
    frame = pd.DataFrame({"label": (rng.random(n_rows) < probabilities).astype(int),
                          "p_1": probabilities, "x": rng.normal(size=n_rows)})
    lake = tmp_path / "lake" / "scores"
    lake.mkdir(parents=True)
    for number, rows in enumerate(np.array_split(np.arange(n_rows), 3)):
        frame.iloc[rows].to_parquet(lake / f"part-{number}.parquet", index=False)
    lake.parent.chmod(0o755)
    port = free_port()
    environment = {**{key: value for key, value in os.environ.items()
                      if key not in COMPOSE_VARIABLES},
                   "CALIBDASH_API_TOKEN": TOKEN, "DATA_LAKE": str(lake.parent),
                   "PUBLISHED_PORT": str(port)}

    def run(*arguments: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*command, *arguments], env=environment, capture_output=True,
                              text=True, timeout=timeout)
    try:
        started = run("up", "--build", "--detach", "--wait", "--scale", "worker=2")
        assert started.returncode == 0, started.stderr[-4000:]
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
                   "Host": "localhost"}

        def call(method: str, path: str, body: dict[str, Any] | None = None) -> Any:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}{path}", method=method, headers=headers,
                data=None if body is None else json.dumps(body).encode())
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())

        job_id = call("POST", "/api/v1/datasets/external", {
            "uri": "/lake/scores/*.parquet", "label": "label", "probabilities": ["p_1"],
            "name": "compose"})["job_id"]
        deadline = time.monotonic() + 600
        while (job := call("GET", f"/api/v1/jobs/{job_id}"))["status"] in (
                "queued", "running"):
            assert time.monotonic() < deadline, job
            time.sleep(1)
        assert job["status"] == "succeeded", job
        external = job["result"]["external"]
        assert external["n_rows"] == n_rows and external["n_partitions"] >= 1
        assert external["scheduler"] == "tcp://scheduler:8786"
        workers = run("exec", "-T", "calibdash", "python", "-c",
                      "from dask.distributed import Client; "
                      "print(len(Client('tcp://scheduler:8786').scheduler_info()['workers']))",
                      timeout=120)
        assert workers.stdout.strip() == "2", workers.stderr
    finally:
        run("down", "--volumes", "--remove-orphans", timeout=300)


@pytest.mark.slow
def test_the_stack_s_commands_and_health_checks_work_as_local_processes(tmp_path) -> None:
    """Without Docker: the three services' own commands and environments, run here as
    processes on free loopback ports (the service name ``scheduler`` read as 127.0.0.1,
    ``/lake`` as a folder made here), each healthy by its own health check command, and
    an external registration with the token computed on the scheduler the server names,
    by the worker that joined it. SERVER_NAMES is set, so the server's health check must
    get through the host check by its ``localhost``."""
    services = compose({"CALIBDASH_API_TOKEN": TOKEN, "SERVER_NAMES": "calib.example.org"})[
        "services"]
    _, server = role(services, ("calibdash", "serve"))
    scheduler_name, scheduler = role(services, ("dask", "scheduler"))
    _, worker = role(services, ("dask", "worker"))
    address = server["environment"]["CALIBDASH_DASK_SCHEDULER"]
    lake_path = server["environment"]["CALIBDASH_EXTERNAL_ROOTS"]
    ports = {int(urlsplit(address).port or 0): free_port(),
             int(option(scheduler["command"], "--dashboard-address")[1:]): free_port(),
             int(option(worker["command"], "--dashboard-address")[1:]): free_port(),
             Settings.model_fields["port"].default: free_port()}
    lake = tmp_path / "lake"

    def here(text: str) -> str:
        """``text`` with the container's names, ports and mounts replaced by local ones."""
        text = text.replace(f"tcp://{scheduler_name}:", "tcp://127.0.0.1:")
        text = re.sub(r"(?<=[:\s'\"])(\d{4,5})\b",
                      lambda match: str(ports.get(int(match[1]), match[1])), f" {text}")[1:]
        return str(lake) if text == lake_path else text

    rng = np.random.default_rng(21)
    n_rows = 4_000
    probabilities = rng.uniform(0.02, 0.98, n_rows)
    (lake / "scores").mkdir(parents=True)
    for number, rows in enumerate(np.array_split(np.arange(n_rows), 2)):
        pd.DataFrame({"label": (rng.random(n_rows) < probabilities).astype(int)[rows],
                      "p_1": probabilities[rows]}).to_parquet(
            lake / "scores" / f"part-{number}.parquet", index=False)
    binaries = Path(sys.executable).parent
    base = {**{key: value for key, value in os.environ.items()
               if not key.startswith("CALIBDASH_")},
            "PYTHONPATH": str(REPO), "PYTHONWARNINGS": "ignore"}
    server_env = {key: here(str(value)) for key, value in server["environment"].items()}
    server_env.update(CALIBDASH_DATA_DIR=str(tmp_path / "store"), CALIBDASH_HOST="127.0.0.1",
                      CALIBDASH_PORT=here("8050"), CALIBDASH_WARM_UP="false",
                      CALIBDASH_LOAD_EXAMPLE="false", CALIBDASH_N_BOOTSTRAP="20")
    assert server_env["CALIBDASH_EXTERNAL_ROOTS"] == str(lake)
    processes: list[subprocess.Popen[bytes]] = []
    logs: list[Any] = []

    def start(name: str, command: list[str], environment: dict[str, str]) -> None:
        executable = binaries / command[0]
        log = (tmp_path / f"{name}.log").open("wb")
        logs.append(log)
        processes.append(subprocess.Popen(
            [str(executable), *(here(part) for part in command[1:])], cwd=tmp_path,
            stdout=log, stderr=subprocess.STDOUT, env={**base, **environment}))

    def healthy(name: str, service: dict[str, Any], seconds: float = 120) -> None:
        kind, program, *arguments = service["healthcheck"]["test"]
        assert kind == "CMD" and program == "python"
        deadline = time.monotonic() + seconds
        while subprocess.run([sys.executable, *(here(part) for part in arguments)],
                             capture_output=True, timeout=30).returncode != 0:
            assert all(process.poll() is None for process in processes), \
                (tmp_path / f"{name}.log").read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, f"{name} never healthy"
            time.sleep(0.5)

    try:
        start("scheduler", scheduler["command"], {})
        healthy("scheduler", scheduler)
        start("worker", worker["command"], {})
        healthy("worker", worker)
        start("calibdash", ["calibdash", "serve"], server_env)
        healthy("calibdash", server)
        url = f"http://127.0.0.1:{here('8050')}"
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
                   "Host": "calib.example.org"}

        def call(path: str, body: dict[str, Any] | None = None) -> Any:
            request = urllib.request.Request(
                url + path, headers=headers,
                data=None if body is None else json.dumps(body).encode())
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())

        job_id = call("/api/v1/datasets/external", {
            "uri": f"{lake}/scores/*.parquet", "label": "label",
            "probabilities": ["p_1"]})["job_id"]
        deadline = time.monotonic() + 300
        while (job := call(f"/api/v1/jobs/{job_id}"))["status"] in (
                "queued", "running"):
            assert time.monotonic() < deadline, job
            time.sleep(0.5)
        assert job["status"] == "succeeded", job
        external = job["result"]["external"]
        assert external["n_rows"] == n_rows and external["scheduler"] == here(address)
        from dask.distributed import Client

        with Client(here(address), timeout=30) as client:
            ran = client.run_on_scheduler(
                lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
            assert len(client.scheduler_info()["workers"]) == 1
        assert {"read_parquet", "partition_summaries"} <= set(ran), ran
        # without the token: refused; the health check needs none
        headers.pop("Authorization")
        with pytest.raises(urllib.error.HTTPError) as refused:
            call("/api/v1/datasets")
        assert refused.value.code == 401
        refused.value.close()
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log in logs:
            log.close()
