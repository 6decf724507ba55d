/**
 * The container image (`Dockerfile`, built by `scripts/image-build.ts` as `npm run -s image:build`
 * builds it, cached) and the fleet manifests under `deploy/`, run with podman:
 * - the image: package.json's Node, a non-root user, no npm, compiler, package cache or dev
 *   dependency; without auth it refuses to listen on every interface unless ALLOW_UNAUTHENTICATED=1;
 * - two containers from the image on one PostgreSQL (a container of `deploy/postgres`'s image) behind
 *   nginx (on this machine, from the load test's generated configuration): the official 2026
 *   client's and the v1 SDK client's interactive delete through nginx, the Host guard through it, a
 *   2026 multi round-trip flow whose rounds alternate between the containers, and `podman stop` of
 *   one container while every flow of a batch waits between its rounds: the container drains and
 *   exits 0, and every flow finishes on the other one;
 * - the compose fleet (`deploy/compose.yaml`: PostgreSQL, three replicas, nginx) answering a
 *   `tools/call` through its published port;
 * - `podman kube play` of `deploy/kubernetes/` answering `/readyz`: the Deployment as written but
 *   for one replica and its port published on 127.0.0.1 (podman 4.3 publishes a containerPort on
 *   every interface otherwise, and each replica on the same host port), next to the Service and the
 *   PodDisruptionBudget, which kube play skips; the Secret is created as podman's JSON secret (4.3's
 *   kube play cannot read the Secret documents it stores itself).
 * Containers are reached only through ports published on 127.0.0.1. Skipped, visibly, without podman
 * or nginx; under CI=true their absence fails the file.
 */
import { readFile, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findNginx, nginxConfig } from '../../scripts/loadtest/nginx-config.ts'
import { NginxProcess } from '../../scripts/loadtest/processes.ts'
import { McpClient } from '../../src/client/index.ts'
import { formatKeyRing, generateKey } from '../../src/mcp/key-ring.ts'
import { serviceTestsRun } from '../support/ci.ts'
import { deleteWithOfficialClient, deleteWithV1Client } from '../support/client-deletes.ts'
import { toolResultText } from '../support/mcp-request.ts'
import {
  FLEET_IMAGES,
  IMAGE_NAME,
  PODMAN_FOUND,
  buildAllImages,
  podman,
  removeContainers,
  runContainer,
  untilAnswers,
  withPodmanEnv,
} from '../support/podman.ts'
import { freePort, tempDataDir } from '../support/server-process.ts'

const root = join(import.meta.dirname, '../..')
const nginx = findNginx()
const RUN = serviceTestsRun(
  'Container tests',
  PODMAN_FOUND && nginx !== undefined,
  'no podman (apt-get install podman runc mmdebstrap podman-compose) or no nginx'
)

/** A cold build makes the Debian base and three images (minutes); a warm one takes seconds. */
const BUILD_MS = 900_000
/** A container or a fleet starting (a kube play pod may restart until its network's DNS knows it). */
const START_MS = 90_000
/** A test that drains a container: SHUTDOWN_DELAY_SECONDS, then its connections closing. */
const DRAIN_TEST_MS = 120_000
const FLEET_TEST_MS = 180_000
const SERVER_PORT = 8787
/** The replicas deploy/compose.yaml runs. */
const FLEET_REPLICAS = 3
const DRAIN_DELAY_SECONDS = '1'

/** Every name this file gives podman starts with it, so runs never meet. */
const prefix = `notes-e2e-${process.pid}`
const network = `${prefix}-net`
const postgres = `${prefix}-pg`
const composeProject = `${prefix}-compose`
const stateKeys = formatKeyRing([generateKey()])
const started: string[] = []
let nginxProcess: NginxProcess | undefined
let nginxDir: string | undefined

interface Replica {
  id: string
  name: string
  port: number
  baseUrl: string
}
let replicas: Replica[] = []
let balancedUrl = ''

async function startReplica(id: string): Promise<Replica> {
  const port = await freePort()
  const name = await runContainer({
    name: `${prefix}-${id}`,
    network,
    publish: { hostPort: port, containerPort: SERVER_PORT },
    env: {
      DATABASE_URL: `postgres://postgres:postgres@${postgres}:5432/postgres`,
      STATE_KEYS: stateKeys,
      ALLOW_UNAUTHENTICATED: '1',
      REPLICA_ID: id,
      SHUTDOWN_DELAY_SECONDS: DRAIN_DELAY_SECONDS,
    },
  })
  started.push(name)
  return { id, name, port, baseUrl: `http://127.0.0.1:${port}` }
}

beforeAll(async () => {
  if (!RUN) return
  await buildAllImages()
  await podman('network', 'rm', '--force', network).catch(() => {})
  await podman('network', 'create', network)
  started.push(await runContainer({ name: postgres, image: FLEET_IMAGES.postgres, network }))
  await waitForPostgres()
  replicas = [await startReplica('a'), await startReplica('b')]
  await Promise.all(
    replicas.map((replica) => untilAnswers(`${replica.baseUrl}/readyz`, replica.name, START_MS))
  )
  nginxDir = await tempDataDir('notes-e2e-nginx-')
  const port = await freePort()
  const config = join(nginxDir, 'nginx.conf')
  await writeFile(
    config,
    nginxConfig({ port, replicas, dir: nginxDir, balancer: 'round-robin' }),
    'utf8'
  )
  nginxProcess = new NginxProcess(nginx!, nginxDir, config, port)
  await nginxProcess.start()
  balancedUrl = nginxProcess.url
}, BUILD_MS)

afterAll(async () => {
  if (!RUN) return
  await nginxProcess?.stop()
  if (nginxDir) await rm(nginxDir, { recursive: true, force: true })
  await removeContainers(started)
  await podman('network', 'rm', '--force', network).catch(() => {})
}, START_MS)

/** PostgreSQL in its container accepts connections (`pg_isready` inside it, polled). */
async function waitForPostgres(): Promise<void> {
  const deadline = Date.now() + START_MS
  while (Date.now() < deadline) {
    const ready = await podman('exec', postgres, 'pg_isready', '--quiet', '--host=127.0.0.1').then(
      () => true,
      () => false
    )
    if (ready) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`PostgreSQL in ${postgres} did not accept connections`)
}

/** A POST to /mcp through nginx naming `host` in its Host header: the status it gets. */
function statusWithHost(url: string, host: string): Promise<number> {
  const target = new URL(url)
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: { host, 'content-type': 'application/json', accept: 'application/json' },
      },
      (answer) => {
        answer.resume()
        resolve(answer.statusCode ?? 0)
      }
    )
    outgoing.once('error', reject)
    outgoing.end('{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
  })
}

async function createNote(url: string, title: string): Promise<string> {
  const result = await new McpClient({ url }).callTool('create_note', { title })
  return (result.structuredContent as { note: { id: string } }).note.id
}

describe.skipIf(!RUN)('the image', () => {
  it("holds package.json's Node, runs as a non-root user, and has no npm, compiler or dev dependency", async () => {
    const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>
    }
    const report = await podman(
      'run',
      '--rm',
      IMAGE_NAME,
      'sh',
      '-c',
      'id -u; node --version; for tool in npm npx gcc cc make; do command -v $tool || true; done; ' +
        'ls /app/node_modules; ls -d /root/.npm /app/.npm 2>/dev/null || true'
    )
    const [uid, version, ...rest] = report.split('\n')
    expect(uid).toBe('10001')
    expect(version).toBe(`v${pkg.devDependencies.node}`)
    expect(rest).not.toContainEqual(expect.stringMatching(/npm|gcc|\/cc|make/))
    for (const dev of ['vitest', 'typescript', 'wrangler', 'node', 'esbuild']) {
      expect(rest).not.toContain(dev)
    }
    expect(rest).toContain('hono')
    const size = Number(await podman('image', 'inspect', '--format', '{{.Size}}', IMAGE_NAME))
    console.log(`${IMAGE_NAME}: ${(size / 1e6).toFixed(0)} MB`)
  })

  it('refuses to listen on every interface without auth unless ALLOW_UNAUTHENTICATED=1', async () => {
    const failure = await podman('run', '--rm', IMAGE_NAME).then(
      () => 'started',
      (error: Error) => error.message
    )
    expect(failure).toContain('Refusing to serve HOST=0.0.0.0 without authentication')
  })
})

describe.skipIf(!RUN)('two containers on one PostgreSQL behind nginx', () => {
  it("serves the official 2026 client's interactive delete", async () => {
    const outcome = await deleteWithOfficialClient(balancedUrl)
    expect(outcome.text).toContain('Deleted')
    expect(outcome.asked).toEqual(['elicitation/create'])
  })

  it("serves the v1 SDK client's interactive delete", async () => {
    const outcome = await deleteWithV1Client(balancedUrl)
    expect(outcome.text).toContain('Deleted')
    expect(outcome.asked).toEqual(['elicitation/create'])
  })

  it('keeps the Host guard: /mcp refuses a Host that is not allowed, through nginx', async () => {
    expect(await statusWithHost(balancedUrl, 'notes.attacker.example')).toBe(403)
  })

  it("serves a 2026 flow's rounds on alternating containers", async () => {
    const id = await createNote(balancedUrl, 'Across containers')
    let next = 0
    const served: string[] = []
    const client = new McpClient({
      url: `${replicas[0]!.baseUrl}/mcp`,
      urls: () => `${replicas[next++ % 2]!.baseUrl}/mcp`,
      handlers: { elicit: async () => ({ action: 'accept', content: { confirm: true } }) },
      onRound: (info) => served.push(info.headers.get('x-replica') ?? '?'),
    })
    expect(toolResultText(await client.callTool('delete_note', { id }))).toContain('Deleted')
    expect(served).toEqual(['a', 'b'])
  })

  it(
    'drains a container on podman stop while every flow waits between rounds: none fails',
    async () => {
      const [stopped, other] = replicas as [Replica, Replica]
      const flows = 8
      const ids = await Promise.all(
        Array.from({ length: flows }, (_, i) => createNote(balancedUrl, `Drained ${i}`))
      )
      // Every flow has had its first round answered (on either container) before the stop.
      let waiting = 0
      const allWaiting = Promise.withResolvers<void>()
      let stop: Promise<string> | undefined
      const firstRounds: string[] = []
      const laterRounds: string[] = []
      const results = ids.map((id) => {
        let round = 0
        const client = new McpClient({
          url: balancedUrl,
          handlers: {
            elicit: async () => {
              if (++waiting === flows) allWaiting.resolve()
              await allWaiting.promise
              stop ??= podman('stop', '--time', '60', stopped.name)
              await stop
              return { action: 'accept', content: { confirm: true } }
            },
          },
          onRound: (info) =>
            (round++ === 0 ? firstRounds : laterRounds).push(info.headers.get('x-replica') ?? '?'),
        })
        return client.callTool('delete_note', { id })
      })
      const outcomes = await Promise.all(results)
      for (const outcome of outcomes) expect(toolResultText(outcome)).toContain('Deleted')
      expect(firstRounds).toContain(stopped.id)
      expect(new Set(laterRounds)).toEqual(new Set([other.id]))
      expect(await podman('inspect', '--format', '{{.State.ExitCode}}', stopped.name)).toBe('0')
      const logs = await podman('logs', stopped.name)
      expect(logs).toContain('notes-mcp draining on SIGTERM')
      expect(logs).toContain('notes-mcp drained: every request finished')
    },
    DRAIN_TEST_MS
  )
})

describe.skipIf(!RUN)('the fleet manifests', () => {
  it(
    'brings the compose fleet up (PostgreSQL, three replicas, nginx) and answers a tools/call',
    async () => {
      const port = await freePort()
      const compose = (...args: string[]) =>
        withPodmanEnv(
          'podman-compose',
          ['--project-name', composeProject, '--file', join(root, 'deploy/compose.yaml'), ...args],
          { STATE_KEYS: stateKeys, NOTES_PORT: String(port) }
        )
      try {
        await compose('up', '--detach')
        const url = `http://127.0.0.1:${port}`
        const ready = new Set<string>()
        await untilAnswers(
          `${url}/readyz`,
          'every replica of the compose fleet',
          START_MS,
          (ok) => {
            ready.add(ok.headers.get('x-replica') ?? '?')
            return ready.size === FLEET_REPLICAS
          }
        )
        const served = new Set<string>()
        for (let call = 0; call < FLEET_REPLICAS; call++) {
          const client = new McpClient({
            url: `${url}/mcp`,
            onRound: (info) => served.add(info.headers.get('x-replica') ?? '?'),
          })
          const result = await client.callTool('create_note', { title: `Fleet ${call}` })
          expect(result.isError).toBeFalsy()
        }
        expect(served.size).toBe(FLEET_REPLICAS)
      } finally {
        // podman-compose 1.0.3's down leaves the replicas' anonymous /data volumes: removed by name.
        const containers = await podman(
          'ps',
          '--all',
          '--quiet',
          '--filter',
          `label=io.podman.compose.project=${composeProject}`
        ).catch(() => '')
        const volumes = containers
          ? await podman(
              'inspect',
              '--format',
              '{{range .Mounts}}{{.Name}} {{end}}',
              ...containers.split('\n')
            ).catch(() => '')
          : ''
        await compose('down', '--volumes').catch(() => {})
        const names = volumes.split(/\s+/).filter((name) => /^[0-9a-f]{64}$/.test(name))
        if (names.length > 0) await podman('volume', 'rm', '--force', ...names).catch(() => {})
        await podman('network', 'rm', '--force', `${composeProject}_default`).catch(() => {})
      }
    },
    FLEET_TEST_MS
  )

  it(
    'plays the Kubernetes manifests with podman kube play, answering /readyz',
    async () => {
      const port = await freePort()
      const dir = join(root, 'deploy/kubernetes')
      const deployment = await readFile(join(dir, 'deployment.yaml'), 'utf8')
      const published = replaceOnce(
        replaceOnce(deployment, '  replicas: 3\n', '  replicas: 1\n'),
        '              containerPort: 8787\n',
        `              containerPort: 8787\n              hostIP: 127.0.0.1\n              hostPort: ${port}\n`
      )
      const secretKeys = [
        ...(await readFile(join(dir, 'secret.yaml'), 'utf8')).matchAll(/^ {2}([A-Z_]+):/gm),
      ].map((match) => match[1])
      expect(secretKeys).toEqual(['STATE_KEYS', 'DATABASE_URL'])
      const secret = {
        STATE_KEYS: stateKeys,
        DATABASE_URL: `postgres://postgres:postgres@${postgres}:5432/postgres`,
      }
      const bundleDir = await tempDataDir('notes-e2e-kube-')
      const bundle = join(bundleDir, 'notes-mcp.yaml')
      const secretFile = join(bundleDir, 'secret.json')
      const others = await Promise.all(
        ['service.yaml', 'pdb.yaml'].map((file) => readFile(join(dir, file), 'utf8'))
      )
      await writeFile(bundle, [published, ...others].join('---\n'), 'utf8')
      await writeFile(
        secretFile,
        JSON.stringify(
          Object.fromEntries(
            Object.entries(secret).map(([key, value]) => [
              key,
              Buffer.from(value).toString('base64'),
            ])
          )
        ),
        'utf8'
      )
      try {
        await podman('secret', 'rm', 'notes-mcp').catch(() => {})
        await podman('secret', 'create', 'notes-mcp', secretFile)
        await podman('kube', 'play', '--replace', '--network', network, bundle)
        await untilAnswers(`http://127.0.0.1:${port}/readyz`, 'the kube play pod', START_MS)
        const healthz = await fetch(`http://127.0.0.1:${port}/healthz`)
        expect(healthz.status).toBe(200)
      } finally {
        await podman('kube', 'down', bundle).catch(() => {})
        await podman('secret', 'rm', 'notes-mcp').catch(() => {})
        await rm(bundleDir, { recursive: true, force: true })
      }
    },
    FLEET_TEST_MS
  )
})

/** `text` with `from` replaced by `to`, failing when `from` is not in it exactly once. */
function replaceOnce(text: string, from: string, to: string): string {
  const parts = text.split(from)
  if (parts.length !== 2) throw new Error(`expected exactly one ${JSON.stringify(from)}`)
  return parts.join(to)
}
