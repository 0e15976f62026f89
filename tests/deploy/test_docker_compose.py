"""docker-compose.yml, validated statically: no Docker engine runs here (and `docker compose config`
is not called). The file is read with PyYAML (anchors and `<<` merges resolved as Compose does),
`${VAR:-default}` is interpolated as Compose does with an empty environment, and the Dockerfiles
it builds are read as text. docs/deployment.md describes the stack."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
# the installed Airflow's option list, found without importing airflow at collection time
AIRFLOW_CONFIG_TEMPLATE = Path(importlib.util.find_spec("airflow").origin).parent / "config_templates" / "config.yml"

AIRFLOW_SERVICES = ("airflow-init", "airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer")
AIRFLOW_LONG_RUNNING = {"airflow-apiserver": "api-server", "airflow-scheduler": "scheduler",
                        "airflow-dag-processor": "dag-processor", "airflow-triggerer": "triggerer"}
EXPECTED_SERVICES = {"postgres", *AIRFLOW_SERVICES, "spark-master", "spark-worker", "minio", "minio-init", "kafka"}
SPARK_MASTER_URL = "spark://spark-master:7077"

# The code whose environment the stack must provide: read at test time, so new code is covered.
SCANNED_FOLDERS = ("spark_apps", "include", "dags")
# Variables the code reads that the stack deliberately leaves unset (keep this tiny):
NOT_SET_BY_THE_STACK = {
    "PYSPARK_GATEWAY_PORT": "set by spark-submit for the Python driver it starts; tells the code it runs under spark-submit",
    "PATH": "the system's search path (include/airflow_local.py, the laptop launcher, prepends .venv/bin to it)",
    "STREAMJOIN_S3_ACCESS_KEY": "read by the embedded S3 (make demo, make airflow, tests) only; the stack runs MinIO",
    "STREAMJOIN_S3_SECRET_KEY": "read by the embedded S3 (make demo, make airflow, tests) only; the stack runs MinIO",
    "AIRFLOW__API__HOST": "read by include/airflow_local.py (the laptop launcher) only, to listen beyond 127.0.0.1 when "
                          "asked; the stack's api-server keeps Airflow's default (0.0.0.0 inside its container)",
    "CHECKPOINT_PATH": "a one-run override of an app's [paths] checkpoint: one value for the whole stack would make "
                       "every app share one checkpoint (the defaults lie on the shared volume: tested below)",
    "KDA_CHECKPOINT_PATH": "the same one-run override, for the app whose env_prefix is KDA_",
    "STREAMJOIN_CRASH_AT": "the crash harness's kill point (tests/crash_harness.py): never set outside its tests",
    "JAVA_HOME": "set by the images (docker/*.Dockerfile `ENV JAVA_HOME`); the class archive's fingerprint reads it",
    "ARROW_DEFAULT_MEMORY_POOL": "Arrow's own: unset, a driver chooses jemalloc for itself and its workers (io.storage.memory.lean_pool)",
    "MALLOC_MMAP_THRESHOLD_": "glibc's own: unset, a driver fixes it at 1 MB for itself and its workers (io.storage.memory.lean_heap)",
}
FALLBACK_OF = {  # read only when the primary is unset: the primary must be set, one name per setting
    "AWS_ENDPOINT_URL_S3": "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_KINESIS": "AWS_ENDPOINT_URL",
    "AWS_DEFAULT_REGION": "AWS_REGION",
}
# What the scan must find today (a guard against a scanner that silently finds nothing).
KNOWN_READS = {
    "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "OUTPUT_PATH", "SALES_PATH",
    "CITY_INFO_PATH", "STREAMJOIN_SMTP_HOST", "STREAMJOIN_SMTP_PORT", "STREAMJOIN_SMTP_FROM",
    "STREAMJOIN_ALERT_EMAIL_TO", "STREAMJOIN_SMTP_USER", "STREAMJOIN_SMTP_PASSWORD", "STREAMJOIN_SMTP_STARTTLS",
    "STREAMJOIN_ALERT_WEBHOOK_URL", "PYSPARK_PYTHON", "STREAMJOIN_HOME", "AIRFLOW_CONN_SPARK_DEFAULT",
}

_NAME = r"([A-Z][A-Z0-9_]*)"
_PY_READS = [
    re.compile(rf"""\b(?:environ|env)(?:\.get|\.setdefault|\.pop)\(\s*["']{_NAME}["']"""),  # os.environ.get("X"), env.get("X")
    re.compile(rf"""\bgetenv\(\s*["']{_NAME}["']"""),  # os.getenv("X")
    re.compile(rf"""\b(?:environ|env)\[\s*["']{_NAME}["']\s*\](?!\s*=[^=])"""),  # os.environ["X"], not an assignment
    re.compile(rf"""["']{_NAME}["']\s+(?:not\s+)?in\s+(?:os\.)?(?:environ|env)\b"""),  # "X" in os.environ
]
_TEMPLATE_READ = re.compile(r"\$\{" + _NAME + r"(?::?[-?][^}]*)?\}")  # ${X}, ${X:-default} (SQL options, shell)
_CONN_IDS = [
    re.compile(r"""\b\w*conn_id\s*(?::\s*[\w| ]+)?=\s*["']([A-Za-z0-9_.-]+)["']"""),  # conn_id="spark_default"
    re.compile(r"""["']\w*conn_id["']\s*[,:]\s*["']([A-Za-z0-9_.-]+)["']"""),  # kwargs.setdefault("conn_id", "x"), {"conn_id": "x"}
]
_VARIABLE = re.compile(r"""\bVariable\.get\(\s*(?:key\s*=\s*)?["']([A-Za-z0-9_.-]+)["']|\bvar\.(?:value|json)\.(\w+)""")


def scanned_env_reads() -> dict[str, set[str]]:
    """Variable -> the files (relative) that read it: environment reads in Python, `${X}` in SQL,
    TOML and shell files (and in DAG files, whose bash commands expand them), and the Airflow
    connections (`AIRFLOW_CONN_<ID>`) and variables (`AIRFLOW_VAR_<KEY>`) the DAGs and include/
    use."""
    found: dict[str, set[str]] = {}
    for folder in SCANNED_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if not path.is_file() or path.suffix not in {".py", ".sql", ".toml", ".sh", ".cfg", ".ini"}:
                continue
            if any(part in {"__pycache__", "streamjoin.egg-info"} for part in path.parts):
                continue
            text, names = path.read_text(errors="replace"), set()
            if path.suffix == ".py":
                for pattern in _PY_READS:
                    names.update(pattern.findall(text))
            # ${NAME} in engine docstrings documents the option syntax; in SQL, shell and DAGs it is a read
            if path.suffix != ".py" or folder == "dags":
                names.update(_TEMPLATE_READ.findall(text))
            if folder != "spark_apps":  # the engine has no Airflow imports; DAGs and include/ops do
                for pattern in _CONN_IDS:
                    names.update(f"AIRFLOW_CONN_{c.upper()}" for c in pattern.findall(text))
                names.update(f"AIRFLOW_VAR_{(a or b).upper()}" for a, b in _VARIABLE.findall(text))
            for name in names:
                found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def interpolate(value):
    """A value as Compose would use it with no variables set: `${X:-d}` / `${X-d}` -> d, `${X}` -> '',
    `$$` -> `$`."""
    if not isinstance(value, str):
        return value
    value = re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}", lambda m: m.group(1) or "", value.replace("$$", "\0"))
    return value.replace("\0", "$")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


def env_of(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
    return {k: interpolate("" if v is None else str(v)) for k, v in env.items()}


def command_of(service: dict, key: str = "command") -> list[str]:
    command = service.get(key) or []
    return shlex.split(command) if isinstance(command, str) else [str(c) for c in command]


def mounts_of(service: dict) -> dict[str, str]:
    """Container path -> source (a host path as written, or a named volume)."""
    mounts = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            mounts[volume["target"]] = volume["source"]
        else:
            source, target = volume.split(":")[:2]
            mounts[target] = source
    return mounts


def is_host_path(source: str) -> bool:
    return source.startswith((".", "/", "~"))


def published_ports(service: dict) -> dict[int, int]:
    """Container port -> host port."""
    ports = {}
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            ports[int(port["target"])] = int(port["published"])
            continue
        parts = str(port).split("/")[0].split(":")
        ports[int(parts[-1])] = int(parts[-2]) if len(parts) > 1 else int(parts[-1])
    return ports


def image_is_pinned(reference: str) -> bool:
    """`name:tag` with a real version in the tag (not latest), or a digest."""
    if "@sha256:" in reference:
        return True
    if "$" in reference:
        return False
    name_and_tag = reference.rsplit("/", 1)[-1]
    if ":" not in name_and_tag:
        return False
    tag = name_and_tag.split(":", 1)[1]
    return tag not in {"latest", "stable", "main", "master", "edge", "nightly"} and any(c.isdigit() for c in tag)


def dockerfile_of(service: dict) -> Path:
    build = service["build"]
    context = ROOT / (build if isinstance(build, str) else build.get("context", "."))
    dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
    return context / dockerfile


def dockerfile_base_images(path: Path) -> list[str]:
    """The images a Dockerfile pulls: FROM lines and COPY --from=image (build stages excluded)."""
    stages, images = set(), []
    for line in path.read_text().splitlines():
        words = line.split()
        if words and words[0].upper() == "FROM":
            args = [w for w in words[1:] if not w.startswith("--")]
            if args[0] not in stages and args[0] != "scratch":
                images.append(args[0])
            if len(args) >= 3 and args[1].upper() == "AS":
                stages.add(args[2])
        elif words and words[0].upper() == "COPY":
            for word in words[1:]:
                if word.startswith("--from=") and word[7:] not in stages:
                    images.append(word[7:])
    return images


def pins(path: Path) -> dict[str, str]:
    """name (lower case, extras dropped) -> version of `name==version` lines."""
    found = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^\s*([A-Za-z0-9_.-]+)(?:\[[^]]*\])?\s*==\s*([^\s;#]+)", line)
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


# --- services and commands


def test_the_file_parses_and_declares_exactly_the_stacks_services(compose, services):
    assert set(services) == EXPECTED_SERVICES
    declared = set(compose.get("volumes") or {})
    for name, service in services.items():
        for source in mounts_of(service).values():
            assert is_host_path(source) or source in declared, f"{name}: volume {source} is not declared"


def test_each_airflow_service_runs_its_airflow_3_command(services):
    for name, subcommand in AIRFLOW_LONG_RUNNING.items():
        command = command_of(services[name])
        # the image's entrypoint runs `airflow <args>`, dropping a leading `airflow`
        assert (command[1:] if command[:1] == ["airflow"] else command) == [subcommand], (name, command)


def test_airflow_init_migrates_the_database_and_sets_the_admin_password(services):
    init = services["airflow-init"]
    command = command_of(init)
    assert command[0] == "bash"
    script_in_container = command[1]
    source = mounts_of(init)[str(Path(script_in_container).parent)]
    script = (ROOT / source / Path(script_in_container).name).resolve()
    assert script.is_file(), script
    text = script.read_text()
    assert "airflow db migrate" in text
    assert "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE" in text and "AIRFLOW_ADMIN_PASSWORD" in text
    env = env_of(init)
    for name in set(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", text)) | set(re.findall(r'environ\["([A-Z][A-Z0-9_]*)"\]', text)):
        assert env.get(name), f"airflow-init.sh reads {name}, which airflow-init does not set"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"].split(":")[0] == "admin"


def test_the_spark_master_and_worker_run_the_standalone_daemons_on_port_7077(services):
    master = command_of(services["spark-master"])
    assert master[:2] == ["spark-class", "org.apache.spark.deploy.master.Master"]
    assert master[master.index("--port") + 1] == "7077" and master[master.index("--host") + 1] == "spark-master"
    # the RPC port is bound to --host's address only: the healthcheck must knock there
    assert "('spark-master', 7077)" in " ".join(services["spark-master"]["healthcheck"]["test"])
    worker = command_of(services["spark-worker"])
    assert worker[:3] == ["spark-class", "org.apache.spark.deploy.worker.Worker", SPARK_MASTER_URL]
    env = env_of(services["spark-worker"])
    assert int(env["SPARK_WORKER_CORES"]) >= 1 and re.fullmatch(r"\d+[mg]", env["SPARK_WORKER_MEMORY"])


def test_minio_init_waits_for_minio_and_creates_the_bucket_the_stack_writes_to(services):
    minio_env = env_of(services["minio"])
    script = interpolate(" ".join(command_of(services["minio-init"], "entrypoint") + command_of(services["minio-init"])))
    assert re.search(r"until mc alias set local http://minio:9000 ", script), script
    assert "mc mb --ignore-existing local/streamjoin" in script
    init_env = env_of(services["minio-init"])
    assert (init_env["MINIO_ROOT_USER"], init_env["MINIO_ROOT_PASSWORD"]) == (minio_env["MINIO_ROOT_USER"], minio_env["MINIO_ROOT_PASSWORD"])
    assert "server /data" in " ".join(command_of(services["minio"]))
    buckets = {urlparse(v).netloc for s in AIRFLOW_SERVICES for v in env_of(services[s]).values() if v.startswith("s3://")}
    assert buckets == {"streamjoin"}


# --- images


def test_every_image_is_pinned_or_built_here_from_pinned_images(services):
    for name, service in services.items():
        if "build" in service:
            dockerfile = dockerfile_of(service)
            assert dockerfile.is_file() and ROOT in dockerfile.resolve().parents, f"{name}: {dockerfile}"
            bases = dockerfile_base_images(dockerfile)
            assert bases, f"{name}: {dockerfile} has no FROM"
            for base in bases:
                assert image_is_pinned(base), f"{name}: {dockerfile.name} uses the unpinned image {base}"
        else:
            assert image_is_pinned(service["image"]), f"{name}: {service['image']} is not pinned"


def test_every_file_a_dockerfile_copies_exists_in_its_build_context(services):
    for name, service in services.items():
        if "build" not in service:
            continue
        dockerfile = dockerfile_of(service)
        context = ROOT / service["build"].get("context", ".")
        for line in dockerfile.read_text().splitlines():
            words = line.split()
            if words[:1] == ["COPY"] and not any(w.startswith("--from=") for w in words):
                for source in [w for w in words[1:-1] if not w.startswith("--")]:
                    assert (context / source).exists(), f"{name}: {dockerfile.name} copies {source}, which is missing"


def test_the_images_match_the_pinned_python_airflow_and_pyspark_versions(services):
    requirements, constraints = pins(ROOT / "requirements.txt"), pins(ROOT / "constraints.txt")
    airflow_version, pyspark_version = requirements["apache-airflow"], requirements["pyspark"]
    assert constraints["apache-airflow"] == airflow_version and constraints["pyspark"] == pyspark_version

    airflow_dockerfile = dockerfile_of(services["airflow-scheduler"])
    (airflow_base,) = [b for b in dockerfile_base_images(airflow_dockerfile) if b.startswith("apache/airflow:")]
    tag = re.fullmatch(r"apache/airflow:(\d+\.\d+\.\d+)-python(\d+\.\d+)", airflow_base)
    assert tag and tag.group(1) == airflow_version, airflow_base
    driver_python = tag.group(2)
    text = airflow_dockerfile.read_text()
    assert "-r /tmp/streamjoin/requirements.txt -c /tmp/streamjoin/constraints.txt" in text
    assert f"('{airflow_version}', '{pyspark_version}')" in text  # the build asserts what it installed

    spark_dockerfile = dockerfile_of(services["spark-master"])
    assert dockerfile_of(services["spark-worker"]) == spark_dockerfile
    (python_base,) = [b for b in dockerfile_base_images(spark_dockerfile) if b.startswith("python:")]
    assert re.match(rf"python:{re.escape(driver_python)}\.\d+-", python_base), "executors' Python != driver's Python"
    spark_text = spark_dockerfile.read_text()
    assert f"pyspark.__version__ == '{pyspark_version}'" in spark_text
    assert "-c /tmp/streamjoin/constraints.txt" in spark_text
    executor_packages = ROOT / "docker" / "spark-requirements.txt"
    names = [re.split(r"[\[=<>~ ]", line.strip())[0].lower() for line in executor_packages.read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert "pyspark" in names
    for package in names:
        assert package in constraints, f"{package} (spark-requirements.txt) is not pinned in constraints.txt"
    for line in executor_packages.read_text().splitlines():
        assert "==" not in line, "versions come from constraints.txt only"
    for dockerfile in (airflow_dockerfile, spark_dockerfile):
        assert "eclipse-temurin:17." in dockerfile.read_text(), f"{dockerfile.name}: Java 17 for Spark"


# --- mounts


def test_every_airflow_service_mounts_the_dags_include_and_spark_apps(services):
    for name in AIRFLOW_SERVICES:
        env, mounts = env_of(services[name]), mounts_of(services[name])
        home = env["STREAMJOIN_HOME"]
        assert mounts.get(env["AIRFLOW__CORE__DAGS_FOLDER"]) == "./dags", name
        assert mounts.get(f"{home}/include") == "./include", name
        assert mounts.get(f"{home}/spark_apps") == "./spark_apps", name
        assert not is_host_path(mounts.get(f"{home}/data", ".")), f"{name}: data/ is a named volume"
        # `import streamjoin` from spark_apps/, `import include.ops...` (as the DAGs do) from the root
        pythonpath = env["PYTHONPATH"].split(":")
        assert f"{home}/spark_apps" in pythonpath and home in pythonpath, name


def test_every_mounted_host_path_exists_in_the_repository(services):
    for name, service in services.items():
        for source in mounts_of(service).values():
            if is_host_path(source):
                path = (COMPOSE_FILE.parent / source).resolve()
                assert path.exists() and (path == ROOT or ROOT in path.parents), f"{name}: {source}"


def test_the_spark_worker_sees_the_code_and_data_at_the_airflow_paths(services):
    """Executors import streamjoin and read/write the checkpoints the driver (in Airflow) uses."""
    airflow_mounts, airflow_env = mounts_of(services["airflow-scheduler"]), env_of(services["airflow-scheduler"])
    worker_mounts, worker_env = mounts_of(services["spark-worker"]), env_of(services["spark-worker"])
    home = airflow_env["STREAMJOIN_HOME"]
    for target in (f"{home}/include", f"{home}/spark_apps", f"{home}/data"):
        assert worker_mounts.get(target) == airflow_mounts[target], target
    assert worker_env["PYTHONPATH"] == airflow_env["PYTHONPATH"]
    assert worker_env["PYSPARK_PYTHON"] == airflow_env["PYSPARK_PYTHON"]


# --- start order


def test_airflow_starts_after_postgres_is_healthy_and_airflow_init_completed(services):
    for name in AIRFLOW_LONG_RUNNING:
        depends = services[name]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy", name
        assert depends["airflow-init"]["condition"] == "service_completed_successfully", name
    assert services["airflow-init"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    scheduler = services["airflow-scheduler"]["depends_on"]
    assert scheduler["minio-init"]["condition"] == "service_completed_successfully"
    assert scheduler["spark-master"]["condition"] == "service_healthy"


def test_minio_init_starts_after_minio_and_the_worker_after_the_master(services):
    assert services["minio-init"]["depends_on"]["minio"]["condition"] == "service_healthy"
    assert services["spark-worker"]["depends_on"]["spark-master"]["condition"] == "service_healthy"


def test_every_dependency_exists_and_waits_only_for_what_can_report_it(services):
    for name, service in services.items():
        for target, spec in (service.get("depends_on") or {}).items():
            assert target in services and target != name, f"{name} -> {target}"
            if spec["condition"] == "service_healthy":
                assert services[target].get("healthcheck", {}).get("test"), f"{target} has no healthcheck"
            if spec["condition"] == "service_completed_successfully":
                assert str(services[target].get("restart", "no")) == "no", f"{target} is one-shot: restart no"
    assert services["postgres"]["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]


# --- environment


def test_the_code_scan_finds_the_variables_known_to_be_read():
    found = scanned_env_reads()
    assert KNOWN_READS <= set(found), KNOWN_READS - set(found)


def test_every_environment_variable_the_code_reads_is_set_in_every_airflow_service(services):
    found = scanned_env_reads()
    for name in AIRFLOW_SERVICES:
        env = env_of(services[name])
        missing = {}
        for variable, files in found.items():
            if variable in NOT_SET_BY_THE_STACK:
                continue
            if variable not in env and FALLBACK_OF.get(variable) not in env:
                missing[variable] = sorted(files)
        assert not missing, f"{name} does not set: {missing}"
    for variable, primary in FALLBACK_OF.items():
        assert variable not in env_of(services["airflow-scheduler"]), f"set {primary} only, not also {variable}"


def test_every_apps_default_checkpoint_lies_on_the_volume_the_driver_and_executors_share(services):
    import tomllib

    home = env_of(services["airflow-scheduler"])["STREAMJOIN_HOME"]
    data = f"{home}/data"
    shared = mounts_of(services["airflow-scheduler"])[data]
    assert mounts_of(services["spark-worker"])[data] == shared
    apps = sorted((ROOT / "include" / "apps").glob("*/app.toml"))
    assert apps
    for app in apps:
        checkpoint = tomllib.loads(app.read_text())["paths"]["checkpoint"]
        resolved = checkpoint if checkpoint.startswith("/") else f"{home}/{checkpoint}"
        assert resolved.startswith(data + "/"), f"{app.parent.name}: checkpoint {resolved} is not under {data}"


def test_the_stack_sets_streamjoin_home_and_the_dags_connections(services):
    for name in AIRFLOW_SERVICES:
        env = env_of(services[name])
        assert env["STREAMJOIN_HOME"] == "/opt/streamjoin"
        assert env["AIRFLOW_CONN_SPARK_DEFAULT"] and env["AIRFLOW_CONN_AWS_DEFAULT"]


def test_the_aws_endpoint_and_credentials_point_at_the_minio_service(services):
    minio = services["minio"]
    minio_env = env_of(minio)
    assert {9000, 9001} <= set(published_ports(minio))
    for name in AIRFLOW_SERVICES:
        env = env_of(services[name])
        endpoint = urlparse(env["AWS_ENDPOINT_URL"])
        assert (endpoint.scheme, endpoint.hostname, endpoint.port) == ("http", "minio", 9000), name
        assert env["AWS_ACCESS_KEY_ID"] == minio_env["MINIO_ROOT_USER"]
        assert env["AWS_SECRET_ACCESS_KEY"] == minio_env["MINIO_ROOT_PASSWORD"]
        assert env["AWS_REGION"] and env["AWS_ALLOW_HTTP"] == "true"


def test_the_airflow_aws_connection_is_minio(services):
    from airflow.models.connection import Connection

    env = env_of(services["airflow-scheduler"])
    minio_env = env_of(services["minio"])
    conn = Connection.from_json(env["AIRFLOW_CONN_AWS_DEFAULT"], conn_id="aws_default")
    assert conn.conn_type == "aws"
    assert (conn.login, conn.password) == (minio_env["MINIO_ROOT_USER"], minio_env["MINIO_ROOT_PASSWORD"])
    assert conn.extra_dejson["endpoint_url"] == env["AWS_ENDPOINT_URL"]
    assert conn.extra_dejson["region_name"] == env["AWS_REGION"]


def test_the_spark_connection_and_master_point_at_spark_master_7077(services, monkeypatch):
    from airflow.models.connection import Connection
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    env = env_of(services["airflow-scheduler"])
    conn = Connection(conn_id="spark_default", uri=env["AIRFLOW_CONN_SPARK_DEFAULT"])
    monkeypatch.setattr(SparkSubmitHook, "get_connection", classmethod(lambda cls, conn_id: conn))
    assert SparkSubmitHook(conn_id="spark_default")._connection["master"] == SPARK_MASTER_URL  # what spark-submit gets
    assert env["STREAMJOIN_SPARK_MASTER"] == SPARK_MASTER_URL  # what spark_session() uses outside spark-submit


def test_airflow_talks_to_postgres_and_its_own_api_server(services):
    postgres = env_of(services["postgres"])
    for name in AIRFLOW_SERVICES:
        env = env_of(services[name])
        db = urlparse(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
        assert db.scheme == "postgresql+psycopg2" and db.hostname == "postgres"
        assert (db.username, db.password, db.path) == (postgres["POSTGRES_USER"], postgres["POSTGRES_PASSWORD"],
                                                       "/" + postgres["POSTGRES_DB"])
        assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
        assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "false"
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://airflow-apiserver:8080/execution/"
        assert env["AIRFLOW__API_AUTH__JWT_SECRET"]
    secrets = {env_of(services[n])["AIRFLOW__API_AUTH__JWT_SECRET"] for n in AIRFLOW_SERVICES}
    assert len(secrets) == 1, "every Airflow component signs and checks JWTs with one secret"


def test_every_airflow_option_set_exists_in_the_installed_airflow(services):
    template = yaml.safe_load(AIRFLOW_CONFIG_TEMPLATE.read_text())
    for name in AIRFLOW_SERVICES:
        for variable in env_of(services[name]):
            match = re.fullmatch(r"AIRFLOW__([A-Z0-9_]+?)__([A-Z0-9_]+)", variable)
            if match:
                section, option = match.group(1).lower(), match.group(2).lower()
                assert option in (template.get(section) or {}).get("options", {}), f"{variable} is no Airflow option"


# --- ports


def test_the_api_server_minio_and_spark_ui_are_published_on_distinct_host_ports(services):
    assert published_ports(services["airflow-apiserver"]) == {8080: 8080}
    assert published_ports(services["minio"]) == {9000: 9000, 9001: 9001}
    master_ui = command_of(services["spark-master"])
    ui_port = int(master_ui[master_ui.index("--webui-port") + 1])
    assert ui_port in published_ports(services["spark-master"])
    host_ports = [host for service in services.values() for host in published_ports(service).values()]
    assert len(host_ports) == len(set(host_ports)), sorted(host_ports)


def test_kafka_is_one_kraft_node_advertised_as_kafka_9092_and_every_airflow_service_points_streamjoin_at_it(services):
    kafka = env_of(services["kafka"])
    assert kafka["KAFKA_PROCESS_ROLES"] == "broker,controller" and kafka["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka:9093"
    assert kafka["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://kafka:9092"
    assert "PLAINTEXT://:9092" in kafka["KAFKA_LISTENERS"].split(",")
    assert str(kafka["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"]) == "1"  # one node: replication factor 1 everywhere
    assert "--bootstrap-server localhost:9092" in " ".join(services["kafka"]["healthcheck"]["test"])
    for name in AIRFLOW_SERVICES:
        assert env_of(services[name])["STREAMJOIN_KAFKA_BOOTSTRAP"] == "kafka:9092", name
