#!/usr/bin/env bash
# The OpenTelemetry end-to-end test (issue 27, ADR 0051; interop/otel/test_otel.py): the backend and
# the stdio app export over OTLP/HTTP to a loopback receiver that decodes the official protobuf
# definitions (`opentelemetry-proto`; no Collector binary can be installed here), driven by the
# official Python MCP SDK carrying a traceparent; then the backend with the collector unreachable.
# Needs scripts/install-test-tools.sh and the debug binaries. Last line: `otel: N passed, M failed`.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
load_tools otel-e2e
need_binaries otel-e2e
# Settings a developer may have exported that would change what the test sees.
unset OTEL_EXPORTER_OTLP_TRACES_ENDPOINT OTEL_EXPORTER_OTLP_METRICS_ENDPOINT OTEL_EXPORTER_OTLP_HEADERS \
  OTEL_TRACES_SAMPLER OTEL_TRACES_SAMPLER_ARG OTEL_RESOURCE_ATTRIBUTES OTEL_SDK_DISABLED
timeout 600 "$PY" interop/otel/test_otel.py "$BACKEND_BIN" "$STDIO_BIN"
