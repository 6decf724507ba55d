/**
 * @module mcp/legacy/batch
 * JSON-RPC batches of 2025-03-26 sessions, the one revision whose transport has them (2025-06-18
 * removed them): one POSTed array of requests, notifications and answers to server→client requests.
 * `readBatch` refuses, before any session is read, an empty batch and one carrying `initialize`
 * (which must be sent alone: it opens the session the others need); `batch` then refuses a batch
 * of any other revision's session with the -32600 every revision answered before (send one message
 * per POST), one of more than `MAX_BATCH_MESSAGES`, one with an element that is no valid message
 * (naming its position) or with two requests of one id (their answers and cancellations could not be
 * told apart), and one whose elements together need scopes the caller lacks (the 403 challenge
 * naming them all). Any refusal is of the whole batch, with nothing done; otherwise every element is
 * served at once, as the same message POSTed alone in the same session would be (`handler.ts`
 * routes each, its own telemetry observation included), and the answer is:
 * - 202 with no body for a batch of only notifications and answers;
 * - a JSON array of the requests' responses, in the batch's order, when every one is plain JSON;
 * - else, from the first request that streams on, one SSE stream carrying the other requests'
 *   responses as they come and everything each streaming request sends (its events as its own
 *   stream has them, whole events, ids included), ending when all have ended; the client closing
 *   it closes every request's stream, as closing that request's own stream would.
 * Notifications and answers are settled before the answer is chosen; a request that finds its
 * session gone meanwhile answers its -32001 in the batch.
 */
import { ErrorCode } from '../errors.ts'
import type { RequestObservation } from '../observer.ts'
import { InsufficientScopeError, missingScopes, requiredScopes, scopeRefusal } from '../scopes.ts'
import { SSE_HEADERS, closeQuietly, jsonText, sseEvent } from '../streaming.ts'
import { isObject } from '../wire.ts'
import { LEGACY_METHODS, type LegacyProtocolVersion } from './protocol.ts'
import {
  TransportError,
  readMessage,
  transportFailure,
  type LegacyEraContext,
  type LegacyInput,
  type Message,
  type OpenedSession,
} from './transport.ts'

/** The one revision with JSON-RPC batches. */
export const BATCH_REVISION: LegacyProtocolVersion = '2025-03-26'

/**
 * Most messages one batch may carry. Its elements are served at once, so the bound is on the work
 * one POST starts: 64 is far more than a client batches (none of the SDK clients sends batches by
 * default), while the body limit alone (`MAX_BODY_BYTES`, 1 MiB) lets through some 25,000 pings.
 */
export const MAX_BATCH_MESSAGES = 64

/** A POSTed array of 2025-era messages, its elements not read yet. */
export interface Batch {
  readonly kind: 'batch'
  readonly elements: readonly unknown[]
}

/** Serves one message of the batch's session as if it were POSTed alone (`handler.ts` routes it). */
export type ServeMessage = (
  message: Message,
  observation: RequestObservation | undefined
) => Promise<Response>

const invalid = (message: string) => new TransportError(400, ErrorCode.InvalidRequest, message)

/** A POSTed array as a batch, or the -32600 of one that needs no session to be refused. */
export function readBatch(elements: readonly unknown[]): Batch {
  if (elements.length === 0) {
    throw invalid('Invalid Request: the batch is empty; send at least one JSON-RPC message.')
  }
  if (
    elements.some((element) => isObject(element) && element.method === LEGACY_METHODS.initialize)
  ) {
    throw invalid(
      'Invalid Request: initialize must be sent alone, not in a batch; send the other messages once the session is open.'
    )
  }
  return { kind: 'batch', elements }
}

/** Serves a batch in the session `opened` (module header). */
export async function batch<Deps>(
  era: Pick<LegacyEraContext<Deps>, 'server' | 'telemetry'>,
  { elements }: Batch,
  { session }: OpenedSession,
  input: LegacyInput,
  serve: ServeMessage
): Promise<Response> {
  if (session.protocolVersion !== BATCH_REVISION) {
    throw invalid('Invalid Request: batches are not supported; send one JSON-RPC message per POST.')
  }
  if (elements.length > MAX_BATCH_MESSAGES) {
    throw invalid(
      `Invalid Request: a batch carries at most ${MAX_BATCH_MESSAGES} messages and this one has ${elements.length}; send the rest in further POSTs.`
    )
  }
  const messages = elements.map(readElement)
  assertDistinctIds(messages)
  const denied = scopeChallenge(era.server, messages, input)
  if (denied) return denied
  const answers = messages.map((message, index) => {
    const observation = era.telemetry?.request(elements[index], input.headers)
    observation?.session(session.sid, session.protocolVersion)
    return serve(message, observation).catch((error: unknown) => {
      observation?.failed(error)
      if (!(error instanceof TransportError)) throw error
      return transportFailure(error)
    })
  })
  const isRequest = (_: unknown, index: number) => messages[index]?.kind === 'request'
  const responses = answers.filter(isRequest)
  // Notifications and answers settle first (each is a store write or a bus signal); one wait for
  // both, so that whatever fails later is still handled.
  const [streaming] = await Promise.all([
    oneStreams(responses),
    Promise.all(answers.filter((answer, index) => !isRequest(answer, index))),
  ])
  if (responses.length === 0) return new Response(null, { status: 202 })
  if (streaming) return mergedStream(responses)
  const texts = await Promise.all(responses.map(async (response) => (await response).text()))
  return jsonText(`[${texts.join(',')}]`)
}

/** One element as `readMessage` reads a message alone; its refusal names its position. */
function readElement(element: unknown, index: number): Message {
  try {
    return readMessage(element)
  } catch (error) {
    if (!(error instanceof TransportError)) throw error
    throw new TransportError(
      error.status,
      error.code,
      `${error.message} This was message ${index + 1} of the batch.`
    )
  }
}

/** Refuses two requests of one id (7 and "7" are two ids). */
function assertDistinctIds(messages: readonly Message[]): void {
  const seen = new Set<string>()
  for (const message of messages) {
    if (message.kind !== 'request') continue
    const key = JSON.stringify(message.id)
    if (seen.has(key)) {
      throw invalid(
        `Invalid Request: two requests of the batch have the id ${key.slice(0, 64)}; give each request its own id.`
      )
    }
    seen.add(key)
  }
}

/**
 * The 403 naming every scope the batch's messages need together, when the caller lacks any
 * (an answer needs those of the call that asked); `undefined` to go on.
 */
function scopeChallenge<Deps>(
  server: LegacyEraContext<Deps>['server'],
  messages: readonly Message[],
  input: LegacyInput
): Response | undefined {
  const own = messages.flatMap((message) => {
    const { method, params } = message.kind === 'response' ? message.call : message
    return requiredScopes(server, method, params)
  })
  const required = missingScopes([...new Set(own)], input)
  return required && scopeRefusal(new InsufficientScopeError(required), null, input)
}

const isEventStream = (response: Response) =>
  response.headers.get('content-type')?.startsWith('text/event-stream') === true

/** True once one response is an SSE stream; false once every one (if any) is in and none is. */
function oneStreams(responses: readonly Promise<Response>[]): Promise<boolean> {
  return new Promise((resolve, reject) => {
    let pending = responses.length
    if (pending === 0) resolve(false)
    for (const response of responses) {
      response.then((answer) => {
        if (isEventStream(answer)) resolve(true)
        else if (--pending === 0) resolve(false)
      }, reject)
    }
  })
}

/**
 * One SSE stream of every response: a JSON one as one event, a streaming one's events as they come.
 * It ends when all have; closed by the client, it cancels every stream, those still to come too.
 */
function mergedStream(responses: readonly Promise<Response>[]): Response {
  const readers: ReadableStreamDefaultReader<Uint8Array>[] = []
  let cancelled = false
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (chunk: Uint8Array) => {
        if (!cancelled) controller.enqueue(chunk)
      }
      const relay = async (pending: Promise<Response>) => {
        const response = await pending
        if (!isEventStream(response) || !response.body) {
          send(sseEvent(await response.json()))
          return
        }
        const reader = response.body.getReader()
        if (cancelled) return void (await reader.cancel())
        readers.push(reader)
        for (let read = await reader.read(); !read.done; read = await reader.read())
          send(read.value)
      }
      Promise.all(responses.map(relay)).then(
        () => closeQuietly(controller),
        (error: unknown) => {
          if (!cancelled) controller.error(error)
        }
      )
    },
    cancel() {
      cancelled = true
      for (const reader of readers) void reader.cancel()
    },
  })
  return new Response(body, { status: 200, headers: SSE_HEADERS })
}
