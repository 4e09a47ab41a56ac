"""A team's ZenML stack on one machine: MariaDB, a ZenML server backed by it, and an S3 API (moto).

Everything listens on 127.0.0.1 and keeps its data under one directory (`.ragwatch/team_stack/`,
git-ignored; `RAGWATCH_TEAM_STACK_DIR` moves it). `scripts/team_stack.sh` is the entry point:

    scripts/team_stack.sh install     # mariadb-server from Debian (root); moto gets its own venv on `up`
    scripts/team_stack.sh up          # start the three servers, register secret, S3 store, stacks, CI key
    eval "$(scripts/team_stack.sh env)"          # this shell is now a client of the team server
    eval "$(scripts/team_stack.sh env --ci)"     # ... as the CI service account (API key)
    scripts/team_stack.sh status
    scripts/team_stack.sh down [--purge]         # stop what `up` started, by PID (--purge: delete the data)

The S3 API is moto's server: it keeps objects in memory, so `down` loses the artifacts while MariaDB
keeps the metadata; `down --purge` starts the next `up` from nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE_DIR = Path(os.environ.get("RAGWATCH_TEAM_STACK_DIR", ROOT / ".ragwatch" / "team_stack")).resolve()
MOTO_VERSION = "5.2.5"
# Shared by every state directory (tests make their own), like scripts/setup_env.sh's wheel cache.
MOTO_VENV = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ragwatch" / f"moto-{MOTO_VERSION}"
BUCKET = "ragwatch"
S3_SECRET = "ragwatch-s3"
ARTIFACT_STORE = "team-s3"
STACK = "team"
DOCKER_STACK = "team-docker"
SERVICE_ACCOUNT = "ragwatch-ci"
ADMIN_USER = "default"
APT_COMMAND = "apt-get install -y --no-install-recommends mariadb-server"


class StackError(RuntimeError):
    """Something the user must fix; the message says what."""


@dataclass
class State:
    """What `up` started and registered; saved as state.json (0600: it holds passwords)."""

    db_port: int = 3307
    server_port: int = 8238
    s3_port: int = 5055
    db_password: str = field(default_factory=lambda: secrets.token_hex(12))
    admin_password: str = field(default_factory=lambda: secrets.token_hex(12))
    jwt_secret: str = field(default_factory=lambda: secrets.token_hex(32))
    secrets_key: str = field(default_factory=lambda: secrets.token_hex(32))
    pids: dict[str, int] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)  # project, stack, docker_stack
    ci_api_key: str = ""

    @classmethod
    def load(cls) -> State | None:
        path = STATE_DIR / "state.json"
        return cls(**json.loads(path.read_text())) if path.is_file() else None

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        path = STATE_DIR / "state.json"
        path.write_text(json.dumps(asdict(self), indent=2))
        path.chmod(0o600)

    @property
    def server_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    @property
    def s3_url(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    @property
    def store_url(self) -> str:
        return f"mysql://zenml:{self.db_password}@127.0.0.1:{self.db_port}/zenml"


# ---------------------------------------------------------------- processes


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _start(name: str, command: list[str], env: dict[str, str] | None = None) -> int:
    """Start a server detached from this process (own session), output to logs/<name>.log.

    The working directory is `/`: a ZenML server started inside a ZenML repository (this checkout)
    reads and rewrites its `.zen/config.yaml`, and then fails every API-key login.
    """
    logs = STATE_DIR / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with (logs / f"{name}.log").open("ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True, cwd="/")
    return process.pid


def _wait(name: str, pid: int, ready, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return
        if not _alive(pid):
            tail = (STATE_DIR / "logs" / f"{name}.log").read_text(errors="replace")[-2000:]
            raise StackError(f"{name} exited while starting; the end of logs/{name}.log:\n{tail}")
        time.sleep(0.5)
    raise StackError(f"{name} did not become ready in {timeout_s:.0f} s; see {STATE_DIR}/logs/{name}.log")


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _stop(pid: int, timeout_s: float = 30) -> None:
    if not _alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.3)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------- MariaDB


def _mariadb_binaries() -> tuple[str, str]:
    found = []
    for name in ("mariadbd", "mariadb-install-db"):
        path = shutil.which(name) or next((str(p) for p in (Path("/usr/sbin") / name, Path("/usr/bin") / name)
                                           if p.exists()), None)
        if path is None:
            raise StackError(f"MariaDB is not installed ({name} not found): `scripts/team_stack.sh install` "
                             f"or `{APT_COMMAND}` as root")
        found.append(path)
    return found[0], found[1]


def start_mariadb(state: State) -> int:
    mariadbd, install_db = _mariadb_binaries()
    data = STATE_DIR / "mariadb" / "data"
    user = ["--user=root"] if os.geteuid() == 0 else []  # mariadbd refuses to run as root without it
    if not (data / "mysql").is_dir():
        data.mkdir(parents=True, exist_ok=True)
        subprocess.run([install_db, f"--datadir={data}", "--auth-root-authentication-method=normal",
                        "--skip-test-db", *user], check=True, capture_output=True)
    socket_path = STATE_DIR / "mariadb" / "mariadb.sock"
    pid = _start("mariadb", [mariadbd, "--no-defaults", f"--datadir={data}", "--bind-address=127.0.0.1",
                             f"--port={state.db_port}", f"--socket={socket_path}", "--skip-name-resolve",
                             f"--pid-file={STATE_DIR / 'mariadb' / 'mariadb.pid'}", *user])
    _wait("mariadb", pid, lambda: _port_open(state.db_port), 60)
    import pymysql

    connection = pymysql.connect(unix_socket=str(socket_path), user="root")
    try:
        with connection.cursor() as cursor:
            cursor.execute("CREATE DATABASE IF NOT EXISTS zenml")
            cursor.execute("CREATE USER IF NOT EXISTS 'zenml'@'127.0.0.1' IDENTIFIED BY %s", (state.db_password,))
            cursor.execute("GRANT ALL PRIVILEGES ON zenml.* TO 'zenml'@'127.0.0.1'")
        connection.commit()
    finally:
        connection.close()
    return pid


# ---------------------------------------------------------------- S3 (moto)


def moto_server() -> Path:
    """moto's server in a venv of its own: a stand-in for S3, not a dependency of ragwatch."""
    requirement = f"moto[server]=={MOTO_VERSION}"
    executable = MOTO_VENV / "bin" / "moto_server"
    if not executable.exists():
        print(f"team_stack: installing {requirement} into {MOTO_VENV}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(MOTO_VENV)], check=True)
        result = subprocess.run([str(MOTO_VENV / "bin" / "pip"), "install", "-q", requirement],
                                capture_output=True, text=True)
        if result.returncode != 0 or not executable.exists():
            shutil.rmtree(MOTO_VENV, ignore_errors=True)
            raise StackError(f"could not install {requirement}:\n{result.stderr[-2000:]}")
    return executable


def start_s3(state: State) -> int:
    pid = _start("s3", [str(moto_server()), "-H", "127.0.0.1", "-p", str(state.s3_port)])
    _wait("s3", pid, lambda: _http_ok(f"{state.s3_url}/moto-api/"), 60)
    import boto3

    s3 = boto3.client("s3", endpoint_url=state.s3_url, aws_access_key_id="team-stack",
                      aws_secret_access_key="team-stack", region_name="us-east-1")
    if BUCKET not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        s3.create_bucket(Bucket=BUCKET)
    return pid


# ---------------------------------------------------------------- ZenML server


def start_server(state: State) -> int:
    env = {
        **os.environ,
        "ZENML_CONFIG_PATH": str(STATE_DIR / "server_home"),
        "ZENML_STORE_URL": state.store_url,
        "ZENML_SERVER_AUTO_ACTIVATE": "true",
        "ZENML_DEFAULT_USER_NAME": ADMIN_USER,
        "ZENML_DEFAULT_USER_PASSWORD": state.admin_password,
        "ZENML_SERVER_JWT_SECRET_KEY": state.jwt_secret,
        "ZENML_SERVER_DEPLOYMENT_TYPE": "other",
        "ZENML_SECRETS_STORE_TYPE": "sql",
        "ZENML_SECRETS_STORE_ENCRYPTION_KEY": state.secrets_key,
        "ZENML_ANALYTICS_OPT_IN": "false",
        "ZENML_LOGGING_VERBOSITY": "WARN",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    for key in ("ZENML_STORE_API_KEY", "ZENML_STORE_USERNAME", "ZENML_STORE_PASSWORD",
                "ZENML_ACTIVE_STACK_ID", "ZENML_ACTIVE_PROJECT_ID"):
        env.pop(key, None)
    command = [sys.executable, "-m", "uvicorn", "zenml.zen_server.zen_server_api:app", "--host", "127.0.0.1",
               "--port", str(state.server_port), "--log-level", "warning"]
    pid = _start("zenml-server", command, env)
    # the first start creates ZenML's tables on MariaDB (about a minute on a busy machine)
    _wait("zenml-server", pid, lambda: _http_ok(f"{state.server_url}/health"), 240)
    return pid


def client_env(state: State, *, ci: bool = False) -> dict[str, str]:
    """The environment of a client process of the team server (admin user, or the CI service account)."""
    env = {
        "ZENML_STORE_URL": state.server_url,
        "ZENML_CONFIG_PATH": str(STATE_DIR / ("client_ci" if ci else "client")),
    }
    if ci:
        env["ZENML_STORE_API_KEY"] = state.ci_api_key
    else:
        env["ZENML_STORE_USERNAME"] = ADMIN_USER
        env["ZENML_STORE_PASSWORD"] = state.admin_password
    if "project" in state.ids:
        env["ZENML_ACTIVE_PROJECT_ID"] = state.ids["project"]
    if "stack" in state.ids:
        env["ZENML_ACTIVE_STACK_ID"] = state.ids["stack"]
    return env


def register(state: State) -> None:
    """Register secret, S3 artifact store, stacks and the CI service account, in a client process."""
    env = {**os.environ, **client_env(state), "ZENML_ANALYTICS_OPT_IN": "false", "ZENML_LOGGING_VERBOSITY": "WARN"}
    for key in ("ZENML_STORE_API_KEY", "ZENML_ACTIVE_STACK_ID", "ZENML_ACTIVE_PROJECT_ID"):
        env.pop(key, None)
    env["RAGWATCH_TEAM_STACK_S3"] = state.s3_url
    result = subprocess.run([sys.executable, __file__, "_register"], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise StackError(f"registering the stack failed:\n{result.stdout[-1000:]}\n{result.stderr[-3000:]}")
    registered = json.loads(result.stdout.strip().splitlines()[-1])
    state.ids.update(registered["ids"])
    state.ci_api_key = registered["ci_api_key"] or state.ci_api_key


def _register_in_client() -> None:
    """Runs inside a client process (see `register`); prints the ids as one JSON line."""
    from zenml.client import Client
    from zenml.enums import StackComponentType
    from zenml.exceptions import EntityExistsError

    client = Client()
    s3_url = os.environ["RAGWATCH_TEAM_STACK_S3"]
    try:
        client.get_secret(S3_SECRET)
    except KeyError:
        # moto accepts any key pair; a real bucket takes its keys here (or a service connector)
        client.create_secret(S3_SECRET, values={"aws_access_key_id": "team-stack",
                                                "aws_secret_access_key": "team-stack"})

    def component(name: str, kind: StackComponentType, flavor: str, configuration: dict) -> None:
        try:
            client.get_stack_component(kind, name)
        except KeyError:
            client.create_stack_component(name, flavor, kind, configuration)

    component(ARTIFACT_STORE, StackComponentType.ARTIFACT_STORE, "s3", {
        "path": f"s3://{BUCKET}/artifacts", "authentication_secret": S3_SECRET,
        "client_kwargs": {"endpoint_url": s3_url, "region_name": "us-east-1"},
    })
    component("team-local", StackComponentType.ORCHESTRATOR, "local", {})
    component("team-docker", StackComponentType.ORCHESTRATOR, "local_docker", {})
    component("team-image-builder", StackComponentType.IMAGE_BUILDER, "local", {})
    ids: dict[str, str] = {"project": str(client.active_project.id)}
    for stack, components in ((STACK, {StackComponentType.ORCHESTRATOR: "team-local"}),
                              (DOCKER_STACK, {StackComponentType.ORCHESTRATOR: "team-docker",
                                              StackComponentType.IMAGE_BUILDER: "team-image-builder"})):
        try:
            model = client.get_stack(stack)
        except KeyError:
            model = client.create_stack(stack, {StackComponentType.ARTIFACT_STORE: ARTIFACT_STORE, **components})
        ids["stack" if stack == STACK else "docker_stack"] = str(model.id)
    api_key = None
    try:
        account = client.create_service_account(SERVICE_ACCOUNT, description="ragwatch CI")
        api_key = client.create_api_key(account.id, "ci").key
    except EntityExistsError:
        pass  # its key was stored in state.json when the account was created
    print(json.dumps({"ids": ids, "ci_api_key": api_key}))


# ---------------------------------------------------------------- commands


SERVICES = ("mariadb", "s3", "zenml-server")


def cmd_up(args: argparse.Namespace) -> None:
    state = State.load() or State()
    for attribute in ("db_port", "server_port", "s3_port"):
        if getattr(args, attribute) is not None:
            setattr(state, attribute, getattr(args, attribute))
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    starters = {"mariadb": (start_mariadb, state.db_port), "s3": (start_s3, state.s3_port),
                "zenml-server": (start_server, state.server_port)}
    for name in SERVICES:
        start, port = starters[name]
        if _alive(state.pids.get(name)):
            continue
        if _port_open(port):
            raise StackError(f"port {port} (for {name}) is taken by another process; choose another with "
                             f"--{'db' if name == 'mariadb' else name.split('-')[-1]}-port")
        state.pids[name] = start(state)
        state.save()
        print(f"team_stack: {name} up (pid {state.pids[name]}, port {port})", file=sys.stderr)
    register(state)
    state.save()
    print(f"team_stack: up in {time.monotonic() - started:.0f} s; data in {STATE_DIR}", file=sys.stderr)
    print(describe(state))


def cmd_down(args: argparse.Namespace) -> None:
    state = State.load()
    if state is None:
        print("team_stack: nothing to stop (no state.json)", file=sys.stderr)
    else:
        for name in reversed(SERVICES):  # the server first, the database last
            pid = state.pids.pop(name, None)
            if pid:
                _stop(pid)
                print(f"team_stack: stopped {name} (pid {pid})", file=sys.stderr)
        state.save()
    if args.purge and STATE_DIR.exists():
        shutil.rmtree(STATE_DIR)
        print(f"team_stack: removed {STATE_DIR}", file=sys.stderr)


def cmd_status(_: argparse.Namespace) -> int:
    state = State.load()
    if state is None:
        print("team_stack: not set up (run `scripts/team_stack.sh up`)")
        return 3
    ports = {"mariadb": state.db_port, "s3": state.s3_port, "zenml-server": state.server_port}
    running = 0
    for name in SERVICES:
        pid = state.pids.get(name)
        alive = _alive(pid)
        running += alive
        print(f"{name:<13} {'running' if alive else 'stopped':<8} pid {pid or '-':<8} 127.0.0.1:{ports[name]}")
    return 0 if running == len(SERVICES) else 3


def cmd_env(args: argparse.Namespace) -> None:
    state = State.load()
    if state is None or "stack" not in state.ids:
        raise StackError("the team stack is not up: run `scripts/team_stack.sh up` first")
    env = client_env(state, ci=args.ci)
    if args.docker:
        env["ZENML_ACTIVE_STACK_ID"] = state.ids["docker_stack"]
    print("\n".join(f"export {key}={value}" for key, value in env.items()))


def cmd_install(_: argparse.Namespace) -> None:
    try:
        _mariadb_binaries()
        print("team_stack: MariaDB is installed", file=sys.stderr)
    except StackError:
        # apt may be busy with another install: retry while its lock is held
        for _attempt in range(30):
            result = subprocess.run(APT_COMMAND.split(), env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
            if result.returncode == 0:
                break
            time.sleep(10)
        else:
            raise StackError(f"`{APT_COMMAND}` kept failing") from None
    moto_server()


def describe(state: State) -> str:
    return (
        f"ZenML server  {state.server_url}  (dashboard; user '{ADMIN_USER}', password in {STATE_DIR}/state.json)\n"
        f"MariaDB       127.0.0.1:{state.db_port} database zenml\n"
        f"S3 (moto)     {state.s3_url}  bucket s3://{BUCKET}, artifact store '{ARTIFACT_STORE}'\n"
        f"stacks        '{STACK}' (local orchestrator), '{DOCKER_STACK}' (local Docker orchestrator)\n\n"
        "Point a client at it:\n"
        '  eval "$(scripts/team_stack.sh env)"            # as the admin user\n'
        '  eval "$(scripts/team_stack.sh env --ci)"       # as the CI service account (API key)\n'
        '  eval "$(scripts/team_stack.sh env --docker)"   # steps in containers (needs the parent image)\n'
        "  python run.py full"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="team_stack.sh", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start MariaDB, the ZenML server and S3; register the stacks")
    up.add_argument("--db-port", type=int)
    up.add_argument("--server-port", type=int)
    up.add_argument("--s3-port", type=int)
    down = commands.add_parser("down", help="stop what `up` started")
    down.add_argument("--purge", action="store_true", help=f"also delete {STATE_DIR}")
    commands.add_parser("status", help="which servers run")
    env = commands.add_parser("env", help="export lines that point a client at the team server")
    env.add_argument("--ci", action="store_true", help="as the CI service account (API key)")
    env.add_argument("--docker", action="store_true", help="activate the local Docker orchestrator stack")
    commands.add_parser("install", help=f"install MariaDB ({APT_COMMAND}) and moto's server ({MOTO_VENV})")
    commands.add_parser("_register", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "_register":
        _register_in_client()
        return 0
    handlers = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "env": cmd_env, "install": cmd_install}
    try:
        return handlers[args.command](args) or 0
    except StackError as error:
        print(f"team_stack: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
