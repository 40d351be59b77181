#!/usr/bin/env bash
# Make a local PostgreSQL ready for moot's ledger tests (run as root), then print the URL to export:
#   export MOOT_TEST_DATABASE_URL="$(.ci/postgres.sh | tail -n 1)"
# Idempotent: installs PostgreSQL only when it is missing, starts the first cluster, and creates (or
# resets the password of) the role and database `moot_test` with password login over TCP on 127.0.0.1.
set -euo pipefail

ROLE="${MOOT_PG_ROLE:-moot}"
PASSWORD="${MOOT_PG_PASSWORD:-moot}"
DATABASE="${MOOT_PG_DATABASE:-moot_test}"

log() { echo "postgres.sh: $*" >&2; }

if [[ "$(id -u)" -ne 0 ]]; then
    log "run me as root (I install packages and start the cluster as the postgres user)."
    exit 1
fi

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    log "installing postgresql"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update >&2
    apt-get install -y postgresql >&2
fi

# The first cluster `pg_lsclusters` lists (the Debian packages create `<version> main`).
read -r VERSION CLUSTER PORT _ < <(pg_lsclusters --no-header | head -n 1) || true
if [[ -z "${VERSION:-}" ]]; then
    VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
    log "creating cluster $VERSION main"
    pg_createcluster "$VERSION" main >&2
    CLUSTER=main
    PORT="$(pg_lsclusters --no-header | awk -v v="$VERSION" '$1 == v && $2 == "main" {print $3}')"
fi

if ! pg_lsclusters --no-header | awk -v v="$VERSION" -v c="$CLUSTER" '$1 == v && $2 == c {print $4}' | grep -q online; then
    log "starting cluster $VERSION $CLUSTER"
    pg_ctlcluster "$VERSION" "$CLUSTER" start >&2
fi

for _ in $(seq 1 30); do
    if pg_isready -q -h 127.0.0.1 -p "$PORT"; then break; fi
    sleep 1
done
pg_isready -h 127.0.0.1 -p "$PORT" >&2

psql_admin() { (cd / && runuser -u postgres -- psql -v ON_ERROR_STOP=1 -q -p "$PORT" "$@"); }

# Values go through psql variables (:'name' quotes them), never through string pasting into SQL.
psql_admin -v role="$ROLE" -v password="$PASSWORD" >&2 <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'role')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') \gexec
SELECT format('ALTER ROLE %I WITH LOGIN PASSWORD %L', :'role', :'password') \gexec
SQL

psql_admin -v role="$ROLE" -v db="$DATABASE" >&2 <<'SQL'
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'role')
WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = :'db') \gexec
SQL

# The tests create and drop one schema per test in this database.
psql_admin -d "$DATABASE" -v role="$ROLE" >&2 <<'SQL'
SELECT format('GRANT CREATE ON DATABASE %I TO %I', current_database(), :'role') \gexec
SQL

URL="postgresql://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DATABASE"
PGPASSWORD="$PASSWORD" psql -q -h 127.0.0.1 -p "$PORT" -U "$ROLE" -d "$DATABASE" -c "SELECT 1" >/dev/null
log "ready; export MOOT_TEST_DATABASE_URL as printed below"
echo "$URL"
