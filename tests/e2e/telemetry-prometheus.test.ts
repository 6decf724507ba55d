/**
 * The Prometheus text exposition of `npm start` with METRICS_PORT: served at `/metrics` on that port
 * only (the MCP port answers it 404, the metrics port serves nothing else and only GET/HEAD), with
 * METRICS_PORT alone exporting no traces; and a real Prometheus (Debian's package, run on loopback by
 * `tests/support/prometheus.ts`) scraping it finds the target up and the conventions' duration
 * histogram by method and tool, labelled with the replica, and the operators' counters. Skipped
 * without Prometheus, failed under CI=true.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mcpInit } from '../support/mcp-request.ts'
import {
  prometheusTestsRun,
  startPrometheus,
  type PrometheusServer,
} from '../support/prometheus.ts'
import { startServer, tempDataDir, type ServerProcess } from '../support/server-process.ts'

let server: ServerProcess
let metricsUrl: string

beforeAll(async () => {
  server = await startServer('notes', {
    DATA_DIR: await tempDataDir(),
    METRICS_PORT: '0',
    REPLICA_ID: 'prom-1',
  })
  const printed = /notes-mcp metrics on (http:\/\/\S+\/metrics)/.exec(server.output())
  if (!printed) throw new Error(`no metrics URL printed:\n${server.output()}`)
  metricsUrl = printed[1]!
})

afterAll(async () => {
  await server?.stop()
})

async function callTool(name: string, args: Record<string, unknown>): Promise<void> {
  const response = await fetch(
    server.url,
    mcpInit('tools/call', { params: { name, arguments: args } })
  )
  expect(response.status).toBe(200)
  await response.text()
}

describe('the /metrics endpoint of METRICS_PORT', () => {
  it('serves the Prometheus text of the duration histogram after a request', async () => {
    await callTool('list_tags', {})
    const response = await fetch(metricsUrl)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/)
    const text = await response.text()
    expect(text).toContain('# TYPE mcp_server_operation_duration histogram')
    expect(text).toMatch(
      /mcp_server_operation_duration_count\{[^}]*mcp_method_name="tools\/call"[^}]*gen_ai_tool_name="list_tags"[^}]*\} 1/
    )
    expect(text).toMatch(/target_info\{[^}]*service_instance_id="prom-1"/)
  })

  it('is never served on the MCP port', async () => {
    const response = await fetch(`${server.baseUrl}/metrics`)
    expect(response.status).toBe(404)
    await response.text()
  })

  it('serves nothing but GET /metrics on the metrics port', async () => {
    const port = new URL(metricsUrl).origin
    const mcp = await fetch(`${port}/mcp`, mcpInit('tools/list'))
    expect(mcp.status).toBe(404)
    await mcp.text()
    const post = await fetch(metricsUrl, { method: 'POST', body: '' })
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')).toBe('GET, HEAD')
    await post.text()
  })

  it('exports no traces with METRICS_PORT alone', () => {
    expect(server.output()).not.toMatch(/OpenTelemetry (traces|metrics) to/)
  })
})

describe.runIf(prometheusTestsRun('the Prometheus scrape test'))(
  'Prometheus scraping /metrics',
  () => {
    let prometheus: PrometheusServer | undefined

    beforeAll(async () => {
      prometheus = await startPrometheus([new URL(metricsUrl).host])
    }, 60_000)

    afterAll(async () => {
      await prometheus?.stop()
    })

    it('finds the target up and the duration histogram by method, tool and replica', async () => {
      await callTool('create_note', { title: 'Scraped', body: 'Counted by Prometheus.' })
      const samples = await prometheus!.waitForQuery(
        'mcp_server_operation_duration_count{gen_ai_tool_name="create_note"} * on(job, instance) group_left(service_instance_id) target_info',
        (found) => found.some((sample) => sample.value >= 1)
      )
      expect(samples[0]!.metric).toMatchObject({
        mcp_method_name: 'tools/call',
        gen_ai_operation_name: 'execute_tool',
        mcp_protocol_version: '2026-07-28',
        notes_mcp_result_type: 'complete',
        service_instance_id: 'prom-1',
      })
      expect(await prometheus!.targets()).toEqual({ [new URL(metricsUrl).host]: 'up' })
    })

    it('sees a refused requestState counted by its reason', async () => {
      const response = await fetch(
        server.url,
        mcpInit('tools/call', {
          params: { name: 'delete_note', arguments: { id: 'n_x' }, requestState: 'forged' },
          capabilities: { elicitation: {} },
        })
      )
      await response.text()
      const samples = await prometheus!.waitForQuery(
        'notes_mcp_server_request_state_rejections_total',
        (found) => found.length > 0
      )
      expect(samples[0]!.metric.notes_mcp_request_state_reason).toMatch(/^[a-z_]+$/)
      expect(samples[0]!.value).toBe(1)
    })
  }
)
