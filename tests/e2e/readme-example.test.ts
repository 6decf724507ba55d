/**
 * The README's "Build your own server" block, run exactly as printed, from the packed engine
 * tarball installed alone into a scratch folder (with `zod` and `@hono/node-server`, as its text
 * says): on Node 24 (`node server.ts`), two replicas sharing one `STATE_KEYS`, the official 2026
 * client (pinned, an elicitation handler) and the v1 SDK client (default settings) each complete
 * `greet` through the question, and a 2026-07-28 round sealed on one replica finishes on the other.
 * The same server's `fetch` handler (the block with its last line `export default server` instead of
 * `serve(…)`) from the same tarball passes the same clients on Deno (`deno serve`), Bun and workerd
 * (`wrangler dev`).
 */
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { installEngine, installedVersion, type EngineInstall } from '../support/engine-package.ts'
import { acceptingWith, connectLegacyHost, resultText } from '../support/legacy-host.ts'
import { firstMessage, mcpInit } from '../support/mcp-request.ts'
import { freePort } from '../support/server-process.ts'
import { readCompatibilityDate, WRANGLER_ENV, wranglerDevArgs } from '../workers/wrangler-dev.ts'

const root = join(import.meta.dirname, '../..')
const bin = join(root, 'node_modules/.bin')

/** The `ts` block under the README's "Build your own server" heading, as printed. */
function readmeExample(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const section = readme.split(/^## Build your own server$/m)[1]
  const block = section?.match(/^```ts\n([\s\S]*?)^```$/m)?.[1]
  if (block === undefined)
    throw new Error('README.md has no ts block under "Build your own server"')
  return block
}

/** The example as a module whose default export is the server (`deno serve`, Bun, Workers). */
function fetchHandlerModule(example: string): string {
  const serveLine = /^serve\(\{ fetch: server\.fetch.*\)\n/m
  const serveImport = /^import \{ serve \} from '@hono\/node-server'\n/m
  expect(example).toMatch(serveLine)
  expect(example).toMatch(serveImport)
  return `${example.replace(serveImport, '').replace(serveLine, '')}export default server\n`
}

/** A running copy of the example: its endpoint and how to stop it. */
interface Replica {
  url: string
  stop(): Promise<void>
}

/**
 * Runs `command` in the scratch folder and resolves once it answers HTTP on `port` (any status: the
 * example prints nothing when it listens). Its output is kept for the error of a start that fails.
 */
async function startReplica(
  install: EngineInstall,
  command: string,
  args: string[],
  port: number,
  env: Record<string, string>
): Promise<Replica> {
  const child = spawn(command, args, {
    cwd: install.dir,
    env: { ...process.env, ...WRANGLER_ENV, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let running = true
  void exited.then(() => (running = false))
  const stop = async () => {
    if (running && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL')
    await exited
  }
  const url = `http://127.0.0.1:${port}/mcp`
  // Bounded by the test's timeout; each try waits for an answer or a refused connection.
  for (;;) {
    if (!running) throw new Error(`${command} exited before serving:\n${output}`)
    const answered = await fetch(url).then(
      () => true,
      () => false
    )
    if (answered) return { url, stop }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/** `greet` without a name through the official client pinned to 2026-07-28, answering "Ada". */
async function greetWithOfficialClient(url: string): Promise<{ text: string; asked: number }> {
  let asked = 0
  const client = new Client(
    { name: 'readme-example-test', version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    }
  )
  client.setRequestHandler('elicitation/create', () => {
    asked += 1
    return { action: 'accept', content: { name: 'Ada' } }
  })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  try {
    const result = await client.callTool({ name: 'greet', arguments: {} })
    const content = result.content as Array<{ text?: string }>
    return { text: content.map((block) => block.text ?? '').join(''), asked }
  } finally {
    await client.close()
  }
}

/** `greet` without a name through the v1 SDK client (a 2025 session, defaults), answering "Grace". */
async function greetWithV1Client(url: string): Promise<{ text: string; asked: string[] }> {
  const host = await connectLegacyHost(url, { elicitation: {} })
  try {
    host.person.elicit = acceptingWith({ name: 'Grace' })
    const text = resultText(await host.callTool('greet', {}))
    return { text, asked: host.asked.map((message) => message.method) }
  } finally {
    await host.close()
  }
}

/** The clients every runtime's copy must serve. */
function servesBothClients(replica: () => Replica): void {
  it('the official 2026 client completes greet through the question', async () => {
    expect(await greetWithOfficialClient(replica().url)).toEqual({ text: 'Hello, Ada', asked: 1 })
  })
  it('the v1 SDK client, with default settings, completes greet through the question', async () => {
    expect(await greetWithV1Client(replica().url)).toEqual({
      text: 'Hello, Grace',
      asked: ['elicitation/create'],
    })
  })
}

const example = readmeExample()
const stateKeys = formatKeyRing([generateKey()])
let install: EngineInstall

beforeAll(async () => {
  install = await installEngine({
    packages: [`@hono/node-server@${installedVersion('@hono/node-server')}`],
  })
  writeFileSync(join(install.dir, 'server.ts'), example)
  writeFileSync(join(install.dir, 'handler.ts'), fetchHandlerModule(example))
}, 300_000)
afterAll(() => install?.remove())

describe('the README example', () => {
  it('is one server file of at most 25 non-blank lines', () => {
    const lines = example.split('\n').filter((line) => line.trim() !== '')
    expect(lines.length).toBeLessThanOrEqual(25)
    expect(example).toContain("from 'stateless-mcp'")
  })

  it('brings only the declared dependencies into the scratch folder, and no install script', () => {
    const lock = JSON.parse(readFileSync(join(install.dir, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>
    }
    const installed = Object.keys(lock.packages)
      .filter((path) => path !== '')
      .map((path) => path.replace(/^node_modules\//, ''))
      .sort()
    // hono is @hono/node-server's peer; the engine brings jose, and zod is its peer.
    expect(installed).toEqual(['@hono/node-server', 'hono', 'jose', 'stateless-mcp', 'zod'])
    expect(Object.values(lock.packages).some((entry) => entry.hasInstallScript)).toBe(false)
  })
})

describe('the README example on Node 24, two replicas with one STATE_KEYS', () => {
  let a: Replica
  let b: Replica
  beforeAll(async () => {
    const env = { STATE_KEYS: stateKeys }
    ;[a, b] = await Promise.all([
      startReplica(install, process.execPath, ['server.ts'], await freePort(), env),
      startReplica(install, process.execPath, ['server.ts'], await freePort(), env),
    ])
  }, 60_000)
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
  })

  servesBothClients(() => a)

  it('finishes on one replica a 2026-07-28 round sealed on the other', async () => {
    const capabilities = { elicitation: { form: {} } }
    const first = await fetch(
      a.url,
      mcpInit('tools/call', { params: { name: 'greet', arguments: {} }, capabilities })
    )
    const asked = await firstMessage(first)
    expect(asked.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { name: { method: 'elicitation/create' } },
    })
    const second = await fetch(
      b.url,
      mcpInit('tools/call', {
        params: {
          name: 'greet',
          arguments: {},
          inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } },
          requestState: asked.result.requestState,
        },
        capabilities,
      })
    )
    const answered = await firstMessage(second)
    expect(answered.result.content).toEqual([{ type: 'text', text: 'Hello, Ada' }])
  })
})

/** How each runtime serves `handler.ts`, the example's `fetch` handler as its default export. */
const RUNTIMES: Record<string, (install: EngineInstall, port: number) => Promise<Replica>> = {
  deno: (install, port) =>
    startReplica(
      install,
      join(bin, 'deno'),
      [
        'serve',
        '--allow-env',
        '--allow-net',
        '--allow-read',
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        'handler.ts',
      ],
      port,
      { STATE_KEYS: stateKeys }
    ),
  bun: (install, port) =>
    startReplica(install, join(bin, 'bun'), ['handler.ts'], port, { STATE_KEYS: stateKeys }),
  workerd: async (install, port) => {
    const worker = join(install.dir, 'worker')
    mkdirSync(worker, { recursive: true })
    writeFileSync(
      join(worker, 'wrangler.toml'),
      [
        'name = "readme-example"',
        'main = "../handler.ts"',
        `compatibility_date = "${readCompatibilityDate()}"`,
        'compatibility_flags = ["nodejs_compat"]',
        '',
      ].join('\n')
    )
    writeFileSync(join(worker, '.dev.vars'), `STATE_KEYS=${stateKeys}\n`, { mode: 0o600 })
    return startReplica(
      install,
      process.execPath,
      await wranglerDevArgs({
        config: join(worker, 'wrangler.toml'),
        port,
        persistTo: join(worker, 'state'),
      }),
      port,
      { WRANGLER_REGISTRY_PATH: join(worker, 'registry') }
    )
  },
}

describe.each(Object.keys(RUNTIMES))('the README example’s fetch handler on %s', (runtime) => {
  let replica: Replica
  beforeAll(async () => {
    replica = await (RUNTIMES[runtime] as (typeof RUNTIMES)[string])(install, await freePort())
  }, 120_000)
  afterAll(async () => {
    await replica?.stop()
  })

  servesBothClients(() => replica)
})
