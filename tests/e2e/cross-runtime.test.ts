/**
 * Retries that cross runtimes: the conformance fixture served by workerd (`wrangler dev`, local) and by
 * Node (`tests/conformance/fixture-server.ts`) with the same key ring, and interactive flows whose
 * rounds go to a chosen runtime each — round 1 on the Worker and round 2 on Node, the reverse, and a
 * three-round chain that changes runtime every round. The fixture's interactive tools keep all their
 * memory in the sealed requestState, so nothing else is shared. Each round's `X-Replica` header proves
 * which runtime answered it. Also: a ring that differs rejects the other runtime's state, and a flow
 * survives a key promotion that reached one runtime before the other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpClient, McpClientError, type RoundInfo } from '../../src/client/index.ts'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { startServer, type ServerProcess } from '../support/server-process.ts'
import { startWorker, type WorkerProcess } from '../workers/wrangler-dev.ts'

const [keyA, keyB] = [generateKey(), generateKey()] as const
const RING = formatKeyRing([keyA, keyB])
/** The same two keys with B promoted: what one replica runs while the rotation is under way. */
const PROMOTED_RING = formatKeyRing([keyB, keyA])

let worker: WorkerProcess
let node: ServerProcess
let nodePromoted: ServerProcess
let nodeOtherRing: ServerProcess

beforeAll(async () => {
  ;[worker, node, nodePromoted, nodeOtherRing] = await Promise.all([
    startWorker({ vars: { STATE_KEYS: RING, REPLICA_ID: 'workerd' } }),
    startServer('fixture', { STATE_KEYS: RING, REPLICA_ID: 'node' }),
    startServer('fixture', { STATE_KEYS: PROMOTED_RING, REPLICA_ID: 'node-promoted' }),
    startServer('fixture', { STATE_KEYS: formatKeyRing([generateKey()]), REPLICA_ID: 'stranger' }),
  ])
}, 120_000)

afterAll(async () => {
  await Promise.all([worker?.stop(), node?.stop(), nodePromoted?.stop(), nodeOtherRing?.stop()])
})

const ANSWERS: Record<string, Record<string, string>> = {
  user_name: { name: 'Ada' },
  step1: { name: 'Ada' },
  step2: { color: 'teal' },
  user_context: { context: 'edge and origin' },
}

/**
 * A client whose round N goes to `route[N-1]` (the last entry for any later round), answering every
 * question, and the replicas that answered, in order.
 */
function routedClient(route: Array<{ url: string }>) {
  const rounds: RoundInfo[] = []
  let next = 0
  const client = new McpClient({
    url: route[0]!.url,
    urls: () => route[Math.min(next++, route.length - 1)]!.url,
    onRound: (info) => rounds.push(info),
    handlers: {
      elicit: async (_params, { key }) => {
        const content = ANSWERS[key]
        if (!content) throw new Error(`the fixture asked an unexpected question: ${key}`)
        return { action: 'accept', content }
      },
      sample: async () => ({
        role: 'assistant',
        content: { type: 'text', text: 'Paris' },
        model: 'cross-runtime-test',
      }),
      roots: async () => ({ roots: [{ uri: 'file:///srv/notes', name: 'notes' }] }),
    },
  })
  return {
    client,
    replicas: () => rounds.map((info) => info.headers.get('x-replica')),
    resultTypes: () => rounds.map((info) => info.resultType),
  }
}

/** A runtime by the replica id it answers with. */
type Runtime = 'workerd' | 'node'
const serverOf = (runtime: Runtime) => (runtime === 'workerd' ? worker : node)

function text(result: { content?: unknown }): string {
  const [first] = result.content as Array<{ type: string; text: string }>
  return first?.text ?? ''
}

describe('a flow started on one runtime finishes on the other', () => {
  it.each<[string, Runtime[], string, string, string[]]>([
    [
      'round 1 on the Worker, round 2 on Node',
      ['workerd', 'node'],
      'test_input_required_result_elicitation',
      'Hello, Ada!',
      ['input_required', 'complete'],
    ],
    [
      'round 1 on Node, round 2 on the Worker',
      ['node', 'workerd'],
      'test_input_required_result_elicitation',
      'Hello, Ada!',
      ['input_required', 'complete'],
    ],
    [
      'a three-round chain alternating Worker, Node, Worker',
      ['workerd', 'node', 'workerd'],
      'test_input_required_result_multi_round',
      'Ada likes teal.',
      ['input_required', 'input_required', 'complete'],
    ],
    [
      'a three-round chain alternating Node, Worker, Node',
      ['node', 'workerd', 'node'],
      'test_input_required_result_multi_round',
      'Ada likes teal.',
      ['input_required', 'input_required', 'complete'],
    ],
  ])('%s', async (_test, route, tool, answer, expectedResultTypes) => {
    const { client, replicas, resultTypes } = routedClient(route.map(serverOf))
    const result = await client.callTool(tool)
    expect(text(result)).toBe(answer)
    expect(replicas()).toEqual(route)
    expect(resultTypes()).toEqual(expectedResultTypes)
  })

  it('elicitation, sampling and roots asked in one round on the Worker, answered on Node', async () => {
    const { client, replicas } = routedClient([worker, node])
    const result = await client.callTool('test_input_required_result_multiple_inputs')
    expect(text(result)).toBe('name=Ada; greeting=Paris; roots=1')
    expect(replicas()).toEqual(['workerd', 'node'])
  })

  it('a prompt that asks first: prompts/get on Node, then on the Worker', async () => {
    const { client, replicas } = routedClient([node, worker])
    const result = await client.getPrompt('test_input_required_result_prompt')
    const [message] = result.messages as Array<{ content: { text: string } }>
    expect(message?.content.text).toBe('Use this context: edge and origin')
    expect(replicas()).toEqual(['node', 'workerd'])
  })

  it('a flow crosses a key promotion that reached Node before the Worker', async () => {
    // Node seals with key B (promoted), the Worker still seals with key A; both open both.
    const { client, replicas } = routedClient([nodePromoted, worker, nodePromoted])
    const result = await client.callTool('test_input_required_result_multi_round')
    expect(text(result)).toBe('Ada likes teal.')
    expect(replicas()).toEqual(['node-promoted', 'workerd', 'node-promoted'])
  })
})

describe('a runtime with another key ring', () => {
  it("rejects the Worker's requestState with the frozen message", async () => {
    const { client, replicas } = routedClient([worker, nodeOtherRing])
    const failure = await client.callTool('test_input_required_result_elicitation').then(
      () => undefined,
      (error: unknown) => error
    )
    expect(failure).toBeInstanceOf(McpClientError)
    expect(failure).toMatchObject({ code: -32602, message: 'Invalid or expired requestState' })
    expect(replicas()).toEqual(['workerd', 'stranger'])
  })
})
