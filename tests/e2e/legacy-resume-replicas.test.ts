/**
 * A 2025-era host (the v1 SDK client 1.32.x, default settings) whose interactive `delete_note`
 * loses its stream mid-flow, served by two notes replicas on one PostgreSQL database and one key
 * ring behind a proxy. When the proxy drops the tools/call stream right after the form went out,
 * the SDK resumes it with `GET` + `Last-Event-ID` on the other replica, which replays and follows
 * the stream while the first replica finishes the call. When the replica holding the flow is
 * SIGKILLed while the form is open, the SDK resumes on the survivor, which takes the call over once
 * the dead replica's lease has run out (the task engine's 10 s) and re-drives it from its checkpoint
 * with the answer the host POSTed meanwhile. When the replica is SIGKILLed as soon as it has taken
 * the answer in, it may die before the delete, after it or after the result (the path varies): the
 * survivor goes on from the stored answer, the state's idempotency key keeping the delete to one.
 * Every way the result reaches the host and the note is deleted exactly once, every other note
 * untouched (read from the database). Each test has its own deployment (a test kills one of its
 * replicas). Skipped, visibly, without a PostgreSQL server (fails under CI).
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { once } from 'node:events'
import postgres from 'postgres'
import { afterEach, describe, expect, it } from 'vitest'
import { useBalancedReplicas, type ProxyEntry } from '../support/alternating-proxy.ts'
import {
  OpenHosts,
  createNote,
  noteExists,
  openQuestion,
  resultText,
  type LegacyHost,
  type OpenQuestion,
} from '../support/legacy-host.ts'
import { testDatabaseUrl } from '../support/postgres.ts'
import type { ServerProcess } from '../support/server-process.ts'
import { within } from '../support/within.ts'

const REPLICAS = ['resume-pg-a', 'resume-pg-b']
const FORMS = { elicitation: {} }
const CONFIRM = { action: 'accept', content: { confirm: true } } as const
/**
 * A takeover waits for the dead replica's lease to run out (10 s), and for the SDK's reconnect and
 * the survivor's next look at the store: a bound for the test, never an assertion.
 */
const TAKEOVER_TEST_MS = 90_000

const serverUrl = await testDatabaseUrl()
const balanced = useBalancedReplicas(serverUrl, REPLICAS, { per: 'test' })
const balancer = () => balanced().proxy
const hosts = new OpenHosts()

// Registered after the replicas' own: the hosts are closed first.
afterEach(() => hosts.closeAll())

function replicaAt(upstream: number): ServerProcess {
  const replica = balanced().deployment.servers[upstream]
  if (!replica) throw new Error(`no replica behind upstream ${upstream}`)
  return replica
}

/** The upstream that is not `upstream` (two replicas). */
const otherThan = (upstream: number) => (upstream + 1) % REPLICAS.length

/** Every note the deployment stored, whoever owns it: id and version, in id order. */
async function storedNotes(): Promise<Array<{ id: string; version: number }>> {
  const sql = postgres(balanced().deployment.databaseUrl, { max: 1, onnotice: () => {} })
  try {
    return await sql<Array<{ id: string; version: number }>>`
      SELECT id, version::int AS version FROM notes ORDER BY id`
  } finally {
    await sql.end({ timeout: 1 })
  }
}

/** Ends `replica` at once (SIGKILL: no shutdown, no lease released) and waits for its exit. */
async function kill(replica: ServerProcess): Promise<void> {
  const exited = once(replica.process, 'exit')
  replica.process.kill('SIGKILL')
  await within(exited, 'the killed replica to exit')
}

/**
 * A host through the proxy (`listening`: the entry of its GET stream) with a note to delete, one
 * to keep, and every note stored before.
 */
interface Deletion {
  host: LegacyHost
  listening: ProxyEntry
  title: string
  id: string
  bystander: string
  before: Array<{ id: string; version: number }>
}

async function prepareDeletion(title: string): Promise<Deletion> {
  const host = await hosts.connectBehind(balancer(), FORMS)
  const listening = balancer().log.find((entry) => entry.httpMethod === 'GET')
  if (!listening) throw new Error("the proxy saw no GET stream of the host's")
  const id = await createNote(host, title)
  const bystander = await createNote(host, `Kept while "${title}" goes`)
  return { host, listening, title, id, bystander, before: await storedNotes() }
}

/**
 * The result says the note was deleted, the person was asked once, and the database lost that
 * note only, nothing else.
 */
async function expectDeletedOnce(deletion: Deletion, result: CallToolResult): Promise<void> {
  const { host, title, id, bystander, before } = deletion
  expect(resultText(result)).toContain(`Deleted the note "${title}"`)
  expect(host.asked.map(({ method }) => method)).toEqual(['elicitation/create'])
  expect(await storedNotes()).toEqual(before.filter((note) => note.id !== id))
  expect(await noteExists(host, id)).toBe(false)
  expect(await noteExists(host, bystander)).toBe(true)
}

const isToolsCall = (entry: ProxyEntry) =>
  entry.message?.kind === 'request' && entry.message.method === 'tools/call'

/** The call's JSON-RPC id (its entry is the tools/call POST). */
function callIdOf(call: ProxyEntry): string | number {
  if (call.message?.kind !== 'request') throw new Error('the entry carried no request')
  return call.message.id
}

/** A `delete_note` whose form the person holds open, and the proxy's entry of its POST. */
interface OpenDeletion {
  called: Promise<CallToolResult>
  call: ProxyEntry
  question: OpenQuestion
}

/** Calls `delete_note` through `upstream` and resolves once the person has its form. */
async function deleteWithFormOpen(deletion: Deletion, upstream: number): Promise<OpenDeletion> {
  const question = openQuestion()
  deletion.host.person = { elicit: question.elicit }
  const since = balancer().log.length
  balancer().route(() => upstream)
  const called = deletion.host.callTool('delete_note', { id: deletion.id })
  await within(question.asked, 'the confirmation form')
  const call = balancer().log.find((entry) => entry.seq >= since && isToolsCall(entry))
  if (!call) throw new Error('the proxy saw no tools/call')
  return { called, call, question }
}

/** The GET that resumed a stream and carried the result of `call`, once it has. */
function resumedWith(call: ProxyEntry): Promise<ProxyEntry> {
  return balancer().waitFor(
    (entry) =>
      entry.seq > call.seq &&
      entry.httpMethod === 'GET' &&
      entry.lastEventId !== undefined &&
      entry.responses.includes(callIdOf(call)),
    'the resumed GET to carry the result'
  )
}

/**
 * The host's answer POST to the one question asked since `call` (on its stream or on a resumed
 * one), once it was answered.
 */
async function answerTo(call: ProxyEntry): Promise<ProxyEntry> {
  const answer = await balancer().waitFor(
    (entry) => entry.seq > call.seq && entry.message?.kind === 'response' && entry.ended,
    "the host's answer to be answered"
  )
  const questions = balancer().log.flatMap((entry) => (entry.seq < call.seq ? [] : entry.carried))
  expect(questions).toHaveLength(1)
  expect(answer.message).toEqual({ kind: 'response', id: questions[0] })
  return answer
}

describe.skipIf(!serverUrl)('a 2025-era host whose interactive call loses its stream', () => {
  it.each([
    { after: 'the priming event', questions: 0 },
    { after: 'the form', questions: 1 },
  ])(
    'delete_note whose stream the proxy drops after $after resumes on the other replica',
    async ({ after, questions }) => {
      const deletion = await prepareDeletion(`Cut after ${after}`)
      deletion.host.person = { elicit: () => CONFIRM }
      const since = balancer().log.length
      const cut = balancer().cutWhen(
        (entry) => entry.seq >= since && isToolsCall(entry) && entry.carried.length >= questions,
        `the tools/call stream to carry ${after}`
      )
      // A resuming GET goes to the replica that is not holding the call's stream.
      balancer().route((entry) => {
        const holder = balancer().log.find((logged) => logged.cut)
        return entry.lastEventId !== undefined && holder ? otherThan(holder.upstream) : undefined
      })

      const result = await deletion.host.callTool('delete_note', { id: deletion.id })
      const call = await cut
      expect(call.responses).toEqual([])
      const resumed = await resumedWith(call)
      expect(resumed.status).toBe(200)
      expect(REPLICAS).toContain(call.replica)
      expect(REPLICAS).toContain(resumed.replica)
      expect(resumed.replica).not.toBe(call.replica)
      expect((await answerTo(call)).status).toBe(202)
      await expectDeletedOnce(deletion, result)
    }
  )

  it.each([
    { listening: 'on the survivor', withStream: false },
    { listening: 'on the killed replica too', withStream: true },
  ])(
    'delete_note whose replica is SIGKILLed while the form is open, the host listening $listening, is taken over by the survivor',
    async ({ withStream }) => {
      const deletion = await prepareDeletion('Killed mid-flow')
      const { listening } = deletion
      const holder = withStream ? listening.upstream : otherThan(listening.upstream)
      const { called, call, question } = await deleteWithFormOpen(deletion, holder)
      const survivor = otherThan(holder)
      // The load balancer takes the dead replica out: everything goes to the survivor from now on.
      balancer().route(() => survivor)
      await kill(replicaAt(holder))
      question.decide(CONFIRM)

      const result = await called
      expect(call.replica).toBe(REPLICAS[holder])
      expect(call.responses).toEqual([])
      const resumed = await resumedWith(call)
      expect(resumed.status).toBe(200)
      expect(resumed.replica).toBe(REPLICAS[survivor])
      const answer = await answerTo(call)
      expect(answer.status).toBe(202)
      expect(answer.replica).toBe(REPLICAS[survivor])
      await expectDeletedOnce(deletion, result)
      if (withStream) {
        // The host's GET stream broke with its replica: it listens on the survivor again.
        await balancer().waitFor(
          (entry) =>
            entry.seq > call.seq &&
            entry.httpMethod === 'GET' &&
            entry.status === 200 &&
            !entry.responses.includes(callIdOf(call)) &&
            entry.replica === REPLICAS[survivor],
          "the host's GET stream to open again"
        )
      }
    },
    TAKEOVER_TEST_MS
  )

  it(
    'delete_note whose replica is SIGKILLed as the answer reaches it deletes the note once',
    async () => {
      const deletion = await prepareDeletion('Killed while answered')
      const holder = otherThan(deletion.listening.upstream)
      const { called, call, question } = await deleteWithFormOpen(deletion, holder)
      // The answer goes to the replica driving the flow, which dies as soon as it has taken it in:
      // before the delete, after it, or after the result (the path varies; the outcome may not).
      question.decide(CONFIRM)
      const answer = await balancer().waitFor(
        (entry) =>
          entry.seq > call.seq && entry.message?.kind === 'response' && entry.status !== undefined,
        "the host's answer to reach the replica driving the flow"
      )
      balancer().route(() => otherThan(holder))
      await kill(replicaAt(holder))
      expect(answer.status).toBe(202)
      expect(answer.replica).toBe(call.replica)
      await expectDeletedOnce(deletion, await called)
    },
    TAKEOVER_TEST_MS
  )
})
