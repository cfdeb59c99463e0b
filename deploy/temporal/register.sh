#!/bin/sh
# Registers the namespace and the custom search attributes the service sets on every workflow
# (temporal.config.ts SEARCH_ATTRIBUTES). Safe to run again.
set -eu
NS="${TEMPORAL_NAMESPACE:-default}"
until temporal operator cluster health --address "${TEMPORAL_ADDRESS}" | grep -q SERVING; do echo "waiting for temporal"; sleep 2; done
temporal operator namespace describe --address "${TEMPORAL_ADDRESS}" -n "$NS" >/dev/null 2>&1 \
  || temporal operator namespace create --address "${TEMPORAL_ADDRESS}" -n "$NS" --retention 72h
for attr in OrganizationId ResourceId; do
  temporal operator search-attribute create --address "${TEMPORAL_ADDRESS}" -n "$NS" --name "$attr" --type Keyword || true
done
echo "namespace $NS ready"
