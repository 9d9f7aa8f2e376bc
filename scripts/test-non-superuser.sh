#!/usr/bin/env bash
# Runs the SQL sandbox's tests with Tally connected to PostgreSQL as a role that is not a
# superuser and owns a scratch database, the sandbox set up the documented way: `tally migrate`,
# then the SQL of `tally sandbox-sql` run once by a superuser (docs/security.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PG=${PG_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
DB=tally_nonsuper_$$
ROLE=tally_nonsuper_app_$$
cleanup() {
  psql "$PG" -qAtc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
  psql "$PG" -qAtc "DROP ROLE IF EXISTS ${DB}_sandbox" >/dev/null
  psql "$PG" -qAtc "DROP ROLE IF EXISTS $ROLE" >/dev/null
}
trap cleanup EXIT
psql "$PG" -qAtc "CREATE ROLE $ROLE LOGIN PASSWORD 'tally-ci'" >/dev/null
psql "$PG" -qAtc "CREATE DATABASE $DB OWNER $ROLE" >/dev/null
APP_URL="postgres://$ROLE:tally-ci@127.0.0.1:5432/$DB"
DATABASE_URL="$APP_URL" npx tally migrate >/dev/null
ADMIN_DB_URL="${PG%/*}/$DB"
DATABASE_URL="$APP_URL" npx tally sandbox-sql | psql "$ADMIN_DB_URL" -qAt -v ON_ERROR_STOP=1 >/dev/null
TEST_DATABASE_URL="$APP_URL" TEST_DATABASE_REUSE=1 npx vitest run test/security test/e2e/analytics-sandbox.test.ts
