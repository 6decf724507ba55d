/**
 * @module scripts/bench/wire
 * The exact requests the benchmark sends and the checks every response must pass, shared by the load
 * drivers and the benchmark servers so that all of them speak about the same tools: `echo`,
 * `confirm_echo` (one form elicitation `confirm: boolean`, then the text), `progress` (three
 * `notifications/progress`, then a result), `search_notes` (full text over the seeded notes, shaped
 * like the notes server's own tool) and `create_note` (a change `subscriptions/listen` streams hear).
 * 2026-07-28 requests carry their `_meta` and headers; 2025-era ones are what a v1 SDK client sends
 * (`initialize`, `notifications/initialized`, then requests with `Mcp-Session-Id` when the server
 * issued one), in 2025-11-25 or, for a peer that negotiates no later revision, 2025-06-18
 * (`legacyRequestsFor`); a stateless 2025 call is the same request without a session. Request bodies
 * are built once per scenario; a verifier answers `true` only for an answer of the expected shape (a
 * 2025 answer may come as JSON or as a one-message SSE stream, as the 2025 transport allows; the
 * `...JsonOrSse` checks allow the same for a 2026-07-28 answer, as some peers send one).
 */

export const PROTOCOL_VERSION = '2026-07-28'
export const LEGACY_PROTOCOL_VERSION = '2025-11-25'
/** The latest 2025 revision every peer negotiates (tmcp's latest). */
export const OLDER_LEGACY_PROTOCOL_VERSION = '2025-06-18'
export type LegacyVersion = typeof LEGACY_PROTOCOL_VERSION | typeof OLDER_LEGACY_PROTOCOL_VERSION
export const HEADER_SESSION_ID = 'mcp-session-id'
const ECHO_TEXT = 'hello'
export const CONFIRM_MESSAGE = 'Echo the text back?'
export const PROGRESS_STEPS = 3
/** Two mid-frequency words of the seeded vocabulary: every word must match, the last as a prefix. */
export const SEARCH_QUERY = 'harbor lantern'
const SEARCH_LIMIT = 10
export const SERVER_READY = 'bench server listening on'
/** What every bench server says of its tools, so that their `tools/list` answers carry the same text. */
export const TOOL_DESCRIPTIONS = {
  echo: 'Echo the text back.',
  confirm_echo: 'Ask the user to confirm, then echo the text back.',
  progress: 'Report progress three times, then answer.',
  search_notes: 'Full-text search over the notes, best match first.',
} as const

const CLIENT_INFO = { name: 'notes-mcp-bench', version: '1.0.0' }

export type Json = Record<string, unknown>

export interface HttpRequest {
  method: 'POST'
  path: string
  headers: Record<string, string>
  body: string
}

function meta(capabilities: Json, extra: Json = {}): Json {
  return {
    'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
    'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    ...extra,
  }
}

function post(method: string, name: string | undefined, id: number, params: Json): HttpRequest {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL_VERSION,
    'mcp-method': method,
  }
  if (name !== undefined) headers['mcp-name'] = name
  return {
    method: 'POST',
    path: '/mcp',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
  }
}

const FORM_CAPABILITIES = { elicitation: { form: {} } }
const CONFIRM_ARGS = { text: ECHO_TEXT }
/** The confirmation a client sends back, in `inputResponses` or as a 2025 JSON-RPC response. */
const CONFIRM_ANSWER = { action: 'accept', content: { confirm: true } }

export const requests = {
  echo: () =>
    post('tools/call', 'echo', 1, {
      name: 'echo',
      arguments: { text: ECHO_TEXT },
      _meta: meta({}),
    }),
  list: () => post('tools/list', undefined, 1, { _meta: meta({}) }),
  confirmRound1: () =>
    post('tools/call', 'confirm_echo', 1, {
      name: 'confirm_echo',
      arguments: CONFIRM_ARGS,
      _meta: meta(FORM_CAPABILITIES),
    }),
  confirmRound2: (requestState: string) =>
    post('tools/call', 'confirm_echo', 2, {
      name: 'confirm_echo',
      arguments: CONFIRM_ARGS,
      _meta: meta(FORM_CAPABILITIES),
      inputResponses: { confirm: CONFIRM_ANSWER },
      requestState,
    }),
  progress: () =>
    post('tools/call', 'progress', 1, {
      name: 'progress',
      arguments: {},
      _meta: meta({}, { progressToken: 'bench-progress' }),
    }),
  search: () =>
    post('tools/call', 'search_notes', 1, {
      name: 'search_notes',
      arguments: { query: SEARCH_QUERY, limit: SEARCH_LIMIT },
      _meta: meta({}),
    }),
  /** A stream of `notifications/resources/list_changed` (the request id names the subscription). */
  listen: (id: number) =>
    post('subscriptions/listen', undefined, id, {
      notifications: { resourcesListChanged: true },
      _meta: meta({}),
    }),
  createNote: (id: number) =>
    post('tools/call', 'create_note', id, {
      name: 'create_note',
      arguments: { title: `bench note ${id}`, body: 'Created by the scale scenario.' },
      _meta: meta({}),
    }),
}

/** The 2025-era requests of a client speaking `version`. */
export function legacyRequestsFor(version: LegacyVersion) {
  /** A 2025-era POST: the session id once the server issued one, the version after `initialize`. */
  function legacyPost(message: Json, session: string | undefined, initialized = true): HttpRequest {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    }
    if (initialized) headers['mcp-protocol-version'] = version
    if (session !== undefined) headers[HEADER_SESSION_ID] = session
    return { method: 'POST', path: '/mcp', headers, body: JSON.stringify(message) }
  }

  return {
    initialize: () =>
      legacyPost(
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: version,
            capabilities: FORM_CAPABILITIES,
            clientInfo: CLIENT_INFO,
          },
        },
        undefined,
        false
      ),
    initialized: (session: string | undefined) =>
      legacyPost({ jsonrpc: '2.0', method: 'notifications/initialized' }, session),
    echo: (session: string | undefined, id = 2) =>
      legacyPost(
        {
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'echo', arguments: CONFIRM_ARGS },
        },
        session
      ),
    confirm: (session: string | undefined, id: number) =>
      legacyPost(
        {
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'confirm_echo', arguments: CONFIRM_ARGS },
        },
        session
      ),
    list: (session: string | undefined, id = 2) =>
      legacyPost({ jsonrpc: '2.0', id, method: 'tools/list', params: {} }, session),
    /** The client's answer to the server's `elicitation/create` request `requestId`. */
    confirmAnswer: (session: string | undefined, requestId: string | number) =>
      legacyPost({ jsonrpc: '2.0', id: requestId, result: CONFIRM_ANSWER }, session),
  }
}

export type LegacyRequests = ReturnType<typeof legacyRequestsFor>

export const legacyRequests = legacyRequestsFor(LEGACY_PROTOCOL_VERSION)

/** A response as the load generator sees it. `contentType` is the header value, lower case. */
export interface HttpResponse {
  status: number
  contentType: string
  body: string
  /** The `Mcp-Session-Id` response header, when there is one. */
  sessionId?: string
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The `result` of a 200 `application/json` JSON-RPC response with the given id, or `undefined`. */
function jsonResult(response: HttpResponse, id: number): Json | undefined {
  if (response.status !== 200 || !response.contentType.startsWith('application/json')) return
  let message: unknown
  try {
    message = JSON.parse(response.body)
  } catch {
    return
  }
  if (!isObject(message) || message.jsonrpc !== '2.0' || message.id !== id) return
  return isObject(message.result) ? message.result : undefined
}

function firstText(result: Json): string | undefined {
  const content = result.content
  if (!Array.isArray(content) || content.length === 0) return
  const block = content[0] as unknown
  return isObject(block) && block.type === 'text' && typeof block.text === 'string'
    ? block.text
    : undefined
}

function isComplete(result: Json): boolean {
  return result.resultType === 'complete' && result.isError !== true
}

function isCompleteEcho(result: Json | undefined): boolean {
  return result !== undefined && isComplete(result) && firstText(result) === ECHO_TEXT
}

/** Whether a `tools/list` result names the four bench tools. */
function listsBenchTools(result: Json | undefined): boolean {
  if (result === undefined || !Array.isArray(result.tools)) return false
  const names = new Set(result.tools.map((tool) => (isObject(tool) ? tool.name : undefined)))
  return ['echo', 'confirm_echo', 'progress', 'search_notes'].every((name) => names.has(name))
}

export function isEchoResult(response: HttpResponse): boolean {
  return isCompleteEcho(jsonResult(response, 1))
}

export function isToolList(response: HttpResponse): boolean {
  return listsBenchTools(jsonResult(response, 1))
}

/** The 2026-07-28 echo as JSON or as a one-message SSE stream (tmcp streams every answer). */
export function isEchoResultJsonOrSse(response: HttpResponse): boolean {
  return isCompleteEcho(legacyResult(response, 1))
}

export function isToolListJsonOrSse(response: HttpResponse): boolean {
  return listsBenchTools(legacyResult(response, 1))
}

/** The `requestState` of a valid round-1 `input_required` answer, or `undefined`. */
export function round1State(response: HttpResponse): string | undefined {
  const result = jsonResult(response, 1)
  if (result === undefined || result.resultType !== 'input_required') return
  const asks = result.inputRequests
  if (!isObject(asks) || Object.keys(asks).length !== 1 || !isObject(asks.confirm)) return
  const ask = asks.confirm
  if (ask.method !== 'elicitation/create' || !isObject(ask.params)) return
  if (ask.params.mode !== 'form' || ask.params.message !== CONFIRM_MESSAGE) return
  const schema = ask.params.requestedSchema
  if (!isObject(schema) || !isObject(schema.properties) || !isObject(schema.properties.confirm)) {
    return
  }
  if (schema.properties.confirm.type !== 'boolean') return
  return typeof result.requestState === 'string' && result.requestState.length > 0
    ? result.requestState
    : undefined
}

export function isRound2Result(response: HttpResponse): boolean {
  const result = jsonResult(response, 2)
  return result !== undefined && isComplete(result) && firstText(result) === ECHO_TEXT
}

/**
 * The `data:` payloads of an SSE body, parsed; `undefined` when a frame is not JSON. Frames without
 * data (comments, a resumable stream's priming event: an id and empty data) carry no message.
 */
export function sseMessages(body: string): unknown[] | undefined {
  const messages: unknown[] = []
  for (const frame of body.split(/\r?\n\r?\n/)) {
    const data = frame
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n')
    if (data === '') continue
    try {
      messages.push(JSON.parse(data))
    } catch {
      return
    }
  }
  return messages
}

/**
 * The complete events at the head of `buffer`, an SSE stream read so far, parsed as `sseMessages`
 * does (`undefined` when one is not JSON), and the `rest` after the last event boundary (a blank line,
 * LF or CRLF), to prepend to the next chunk.
 */
export function takeSseFrames(buffer: string): { messages: unknown[] | undefined; rest: string } {
  const boundary = /\r?\n\r?\n/g
  let end = 0
  for (const match of buffer.matchAll(boundary)) end = match.index + match[0].length
  return { messages: sseMessages(buffer.slice(0, end)), rest: buffer.slice(end) }
}

/** Exactly three increasing progress notifications for our token, then the result, on one stream. */
export function isProgressStream(response: HttpResponse): boolean {
  if (response.status !== 200 || !response.contentType.startsWith('text/event-stream')) return false
  const messages = sseMessages(response.body)
  if (messages === undefined || messages.length !== PROGRESS_STEPS + 1) return false
  for (let step = 1; step <= PROGRESS_STEPS; step++) {
    const note = messages[step - 1]
    if (!isObject(note) || note.method !== 'notifications/progress' || !isObject(note.params)) {
      return false
    }
    if (note.params.progressToken !== 'bench-progress' || note.params.progress !== step)
      return false
  }
  const final = messages[PROGRESS_STEPS]
  if (!isObject(final) || final.jsonrpc !== '2.0' || final.id !== 1 || !isObject(final.result)) {
    return false
  }
  return isComplete(final.result) && firstText(final.result) === 'done'
}

/** A full first page of hits, each shaped like the notes server's search hit. */
export function isSearchResult(response: HttpResponse): boolean {
  const result = jsonResult(response, 1)
  if (result === undefined || !isComplete(result)) return false
  const structured = result.structuredContent
  if (!isObject(structured) || !Array.isArray(structured.notes)) return false
  if (structured.notes.length !== SEARCH_LIMIT || typeof structured.nextCursor !== 'string') {
    return false
  }
  return structured.notes.every(
    (hit) =>
      isObject(hit) &&
      typeof hit.id === 'string' &&
      typeof hit.title === 'string' &&
      typeof hit.excerpt === 'string' &&
      Array.isArray(hit.tags)
  )
}

/**
 * The `result` of the 2025-era answer to request `id`: a 200 JSON body, or the JSON-RPC response on a
 * 200 SSE stream (the transport may answer either way); `undefined` otherwise.
 */
function legacyResult(response: HttpResponse, id: number): Json | undefined {
  if (response.status !== 200) return
  let messages: unknown[] | undefined
  if (response.contentType.startsWith('text/event-stream')) {
    messages = sseMessages(response.body)
  } else if (response.contentType.startsWith('application/json')) {
    try {
      messages = [JSON.parse(response.body)]
    } catch {
      return
    }
  }
  const answer = messages?.find((message) => isObject(message) && message.id === id)
  return isObject(answer) && answer.jsonrpc === '2.0' && isObject(answer.result)
    ? answer.result
    : undefined
}

/** `initialize` answered with the revision the client asked for and the server's info. */
export function isInitializeResult(
  response: HttpResponse,
  version: LegacyVersion = LEGACY_PROTOCOL_VERSION
): boolean {
  const result = legacyResult(response, 1)
  return (
    result !== undefined &&
    result.protocolVersion === version &&
    isObject(result.serverInfo) &&
    isObject(result.capabilities)
  )
}

/** A notification (or a client's answer to a server request) accepted: 202, no body. */
export function isAccepted(response: HttpResponse): boolean {
  return response.status === 202
}

/** The 2025-era echo of request `id`: the text back, no error (and no 2026-only stamps needed). */
export function isLegacyEcho(response: HttpResponse, id = 2): boolean {
  const result = legacyResult(response, id)
  return result !== undefined && result.isError !== true && firstText(result) === ECHO_TEXT
}

/** The 2025-era `tools/list` of request `id`, naming the four bench tools. */
export function isLegacyToolList(response: HttpResponse, id = 2): boolean {
  return listsBenchTools(legacyResult(response, id))
}

/** A 2025-era message read off an SSE stream: the server's request or the final response. */
export function isLegacyEchoMessage(message: unknown, id: number): boolean {
  return (
    isObject(message) &&
    message.id === id &&
    isObject(message.result) &&
    message.result.isError !== true &&
    firstText(message.result) === ECHO_TEXT
  )
}

/** The server's `elicitation/create` for the confirmation, as a 2025 server→client request. */
export function confirmRequestId(message: unknown): string | number | undefined {
  if (!isObject(message) || message.method !== 'elicitation/create') return
  if (!isObject(message.params) || message.params.message !== CONFIRM_MESSAGE) return
  return typeof message.id === 'string' || typeof message.id === 'number' ? message.id : undefined
}

/** The acknowledgment that opens a listen stream. */
export function isListenAck(message: unknown): boolean {
  return isObject(message) && message.method === 'notifications/subscriptions/acknowledged'
}

/** A `notifications/resources/list_changed` on a listen stream. */
export function isListChanged(message: unknown): boolean {
  return isObject(message) && message.method === 'notifications/resources/list_changed'
}

/** `create_note` answered with a result that is not an error. */
export function isCreated(response: HttpResponse, id: number): boolean {
  const result = jsonResult(response, id)
  return result !== undefined && result.isError !== true
}
