/**
 * @module stateless-mcp/otel
 * OpenTelemetry for a server on the engine: `otelTelemetry({ tracer, meter })` makes what
 * `createMcpServer`'s `telemetry` option takes (spans per request parented on the client's trace
 * context, the semantic conventions' attributes and duration metric, store calls as child spans).
 * Its one dependency is `@opentelemetry/api`, an optional peer: install it (and an SDK of your
 * choice) to use this entry; `stateless-mcp` itself never loads it.
 */
export { otelTelemetry, type OtelTelemetryOptions } from './otel/telemetry.ts'
export type { ContextStorage } from './otel/spans.ts'
