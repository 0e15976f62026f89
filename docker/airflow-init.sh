#!/usr/bin/env bash
# The airflow-init service (docker-compose.yml), run once before the other Airflow services:
# migrate the metadata database, then give the simple auth manager's users their password.
# Idempotent: a second `docker compose up` migrates nothing and rewrites the same file.
set -euo pipefail

airflow db migrate

# Airflow 3's simple auth manager reads the passwords of the users in
# AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS from this JSON file (and generates random ones for
# users missing from it); the api-server shares the file through the airflow-auth volume.
mkdir -p "$(dirname "${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE}")"
python - <<'PY'
import json
import os

users = [entry.split(":")[0].strip() for entry in os.environ["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"].split(",")]
path = os.environ["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]
with open(path, "w") as file:
    json.dump({user: os.environ["AIRFLOW_ADMIN_PASSWORD"] for user in users if user}, file)
    file.write("\n")
os.chmod(path, 0o660)
print(f"airflow-init: password set for {', '.join(u for u in users if u)} in {path}")
PY

airflow version
