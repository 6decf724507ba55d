/**
 * The Worker's telemetry after a request (`afterRequest`, handed to `ctx.waitUntil`): when the OTLP
 * collector refuses the metrics export, it settles with one warning instead of rejecting (a rejection
 * there is an uncaught error of the request in workerd), and the export is really attempted.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { parseTelemetryEnv } from '../../src/telemetry/env.ts'
import { startWorkerTelemetry } from '../../src/workers/telemetry.ts'

let collector: Server
let endpoint: string
let exports = 0

beforeAll(async () => {
  collector = createServer((request, response) => {
    exports++
    request.resume()
    request.on('end', () => response.writeHead(500).end('collector down'))
  })
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve))
  endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`
})

afterAll(() => new Promise<void>((resolve) => collector.close(() => resolve())))

it('settles with a warning when the collector refuses the metrics', async () => {
  const config = parseTelemetryEnv({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_TRACES_EXPORTER: 'none',
    OTEL_METRIC_EXPORT_INTERVAL: '1',
  })
  const running = startWorkerTelemetry(config!, 'worker-test')
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
  try {
    // One open stream counted: a metric to export.
    const server = { tools: new Map(), prompts: new Map() }
    running.telemetry.forServer(server).stream('listen', '2026-07-28', new Response('stream'))
    await new Promise((resolve) => setTimeout(resolve, 5))
    await expect(running.afterRequest()).resolves.toBeUndefined()
    expect(exports).toBeGreaterThan(0)
    const warnings = warn.mock.calls.map(
      ([line]) => JSON.parse(String(line)) as { message: string }
    )
    expect(warnings).toContainEqual(
      expect.objectContaining({ level: 'warn', message: 'telemetry export failed' })
    )
  } finally {
    warn.mockRestore()
    await running.shutdown().catch(() => {})
  }
})
