#!/bin/sh
# Creates Temporal's two databases and applies its schema with temporal-sql-tool (temporalio/admin-tools).
# Idempotent: `create` fails harmlessly when the database exists; setup/update only apply what is missing.
set -eu
SQL="temporal-sql-tool --plugin postgres12 --ep ${POSTGRES_SEEDS} -u ${POSTGRES_USER} -p ${DB_PORT}"
until nc -z "${POSTGRES_SEEDS}" "${DB_PORT}"; do echo "waiting for postgres"; sleep 1; done
for db in temporal temporal_visibility; do
  $SQL --db "$db" create || true
done
$SQL --db temporal setup-schema -v 0.0
$SQL --db temporal update-schema -d /etc/temporal/schema/postgresql/v12/temporal/versioned
$SQL --db temporal_visibility setup-schema -v 0.0
$SQL --db temporal_visibility update-schema -d /etc/temporal/schema/postgresql/v12/visibility/versioned
echo "temporal schema ready"
