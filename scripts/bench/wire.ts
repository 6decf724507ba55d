/**
 * @module scripts/bench/wire
 * The exact 2026-07-28 requests the benchmark sends and the checks every response must pass, shared by
 * the load driver and the three benchmark servers so that all of them speak about the same tools:
 * `echo`, `confirm_echo` (one form elicitation `confirm: boolean`, then the text), `progress` (three
 * `notifications/progress`, then a result) and `search_notes` (full text over the seeded notes,
 * shaped like the notes server's own tool). Request bodies are built once per scenario; a verifier
 * answers `true` only for a 200 JSON-RPC result of the expected shape.
 */

export const PROTOCOL_VERSION = '2026-07-28'
const ECHO_TEXT = 'hello'
export const CONFIRM_MESSAGE = 'Echo the text back?'
export const PROGRESS_STEPS = 3
/** Two mid-frequency words of the seeded vocabulary: every word must match, the last as a prefix. */
export const SEARCH_QUERY = 'harbor lantern'
const SEARCH_LIMIT = 10
export const SERVER_READY = 'bench server listening on'

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
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
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
}

/** A response as the load generator sees it. `contentType` is the header value, lower case. */
export interface HttpResponse {
  status: number
  contentType: string
  body: string
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

export function isEchoResult(response: HttpResponse): boolean {
  const result = jsonResult(response, 1)
  return result !== undefined && isComplete(result) && firstText(result) === ECHO_TEXT
}

export function isToolList(response: HttpResponse): boolean {
  const result = jsonResult(response, 1)
  if (result === undefined || !Array.isArray(result.tools)) return false
  const names = new Set(result.tools.map((tool) => (isObject(tool) ? tool.name : undefined)))
  return ['echo', 'confirm_echo', 'progress', 'search_notes'].every((name) => names.has(name))
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

/** The `data:` payloads of an SSE body, parsed; `undefined` when a frame is not JSON. */
function sseMessages(body: string): unknown[] | undefined {
  const messages: unknown[] = []
  for (const frame of body.split(/\r?\n\r?\n/)) {
    const data = frame
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
    if (data.length === 0) continue
    try {
      messages.push(JSON.parse(data.join('\n')))
    } catch {
      return
    }
  }
  return messages
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
