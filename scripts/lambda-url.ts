/**
 * @module scripts/lambda-url
 * A Lambda function reached over HTTP on this machine (`npm run start:lambda`, `start:netlify` and
 * their fixtures): serves the handler a module exports (`handler` by default, or the one
 * `--handler` names) on HOST (127.0.0.1) and PORT (8787) through `lambda-local`, which runs it as
 * Lambda's Node.js runtime would (its `awslambda.streamifyResponse` for response streaming, its
 * context and timeout), one module instance for every invocation, as a warm execution environment.
 * Each HTTP request becomes the event of `--event`:
 * - `function-url` (default): a Lambda function URL's (payload format 2.0: raw path and query,
 *   lower-cased headers, cookies apart);
 * - `netlify`: the one Netlify's gateway hands a function built by Netlify (`rawUrl`, `path`,
 *   `httpMethod`, headers single and multi-valued), for the entry point of
 *   `scripts/netlify-build.ts`'s output, whose bootstrap turns it into a `Request`.
 * In both the body is base64-encoded unless it is text, and one over the platforms' 6 MB payload
 * bound is refused with 413 before the function runs. The handler's result is written back, as a
 * stream when the handler streams (RESPONSE_STREAM), else whole (BUFFERED, an API Gateway HTTP API).
 * PUBLIC_URL defaults to the URL served here. The module is loaded at start, as Lambda's init phase
 * does. What this does not reproduce: Lambda freezing the execution environment between
 * invocations, and running several environments.
 *
 *   node scripts/lambda-url.ts src/lambda.ts [--handler bufferedHandler] [--event netlify]
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { resolve } from 'node:path'
import type { Readable } from 'node:stream'
import { parseArgs } from 'node:util'
import { execute, setLogger } from 'lambda-local'

/** The longest a function may run (Lambda's bound), and what an invocation is given here. */
const TIMEOUT_MS = 900_000

/**
 * lambda-local's own lines: only its errors (a failed invocation). Its verbosity stays at the top
 * level, which is what keeps the function's console unmuted: the function's log is this output.
 */
const VERBOSE = 3
setLogger({
  // lambda-local takes a logger with winston's shape: `transports` marks one.
  transports: [],
  log: (level: string, message: unknown) => {
    if (level === 'error') console.error(message)
  },
})

/** A function URL event, payload format 2.0 (what `hono/aws-lambda` reads of it). */
interface FunctionUrlEvent {
  version: '2.0'
  routeKey: '$default'
  rawPath: string
  rawQueryString: string
  cookies?: string[]
  headers: Record<string, string>
  queryStringParameters?: Record<string, string>
  requestContext: {
    accountId: string
    apiId: string
    domainName: string
    domainPrefix: string
    http: { method: string; path: string; protocol: string; sourceIp: string; userAgent: string }
    requestId: string
    routeKey: '$default'
    stage: '$default'
    time: string
    timeEpoch: number
  }
  body?: string
  isBase64Encoded: boolean
}

/** The event of a function Netlify built (what its bootstrap reads of it). */
interface NetlifyEvent {
  rawUrl: string
  rawQuery: string
  path: string
  httpMethod: string
  headers: Record<string, string>
  multiValueHeaders: Record<string, string[]>
  queryStringParameters: Record<string, string>
  multiValueQueryStringParameters: Record<string, string[]>
  body?: string
  isBase64Encoded: boolean
}

/** What a handler answers: whole, or (streaming) its head with the body still being written. */
interface FunctionResult {
  statusCode?: number
  headers?: Record<string, string>
  multiValueHeaders?: Record<string, string[]>
  cookies?: string[]
  body?: string | Readable
  isBase64Encoded?: boolean
}

/** Content types passed as text rather than base64. */
const TEXT_TYPES = /^(text\/|application\/(json|xml|x-www-form-urlencoded|javascript))/i

/** An HTTP request as the parts every event is made of. */
interface Received {
  url: URL
  method: string
  headers: Record<string, string[]>
  body: Buffer
  text: boolean
}

/** Lambda's bound on a request's payload (6 MB, Netlify's too): a gateway refuses more with 413. */
const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024

/** A request over {@link MAX_PAYLOAD_BYTES}, refused before the function is invoked. */
class PayloadTooLargeError extends Error {
  override name = 'PayloadTooLargeError'
}

async function receive(request: IncomingMessage, host: string): Promise<Received> {
  const chunks: Buffer[] = []
  let size = 0
  // Read to its end either way (so the client reads the refusal), keeping at most the bound.
  for await (const chunk of request) {
    size += (chunk as Buffer).length
    if (size <= MAX_PAYLOAD_BYTES) chunks.push(chunk as Buffer)
  }
  if (size > MAX_PAYLOAD_BYTES) throw new PayloadTooLargeError()
  const headers = request.headersDistinct as Record<string, string[]>
  return {
    url: new URL(request.url ?? '/', `http://${host}`),
    method: request.method ?? 'GET',
    headers,
    body: Buffer.concat(chunks),
    text: TEXT_TYPES.test(headers['content-type']?.[0] ?? ''),
  }
}

/** The body as an event carries it. */
function eventBody({ body, text }: Received) {
  return {
    ...(body.length > 0 && { body: body.toString(text ? 'utf8' : 'base64') }),
    isBase64Encoded: body.length > 0 && !text,
  }
}

function functionUrlEvent(received: Received, request: IncomingMessage): FunctionUrlEvent {
  const { url, method } = received
  const headers: Record<string, string> = {}
  let cookies: string[] | undefined
  for (const [name, values] of Object.entries(received.headers)) {
    if (name === 'cookie') cookies = values.flatMap((line) => line.split(/;\s*/))
    else headers[name] = values.join(',')
  }
  const now = new Date()
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    ...(cookies && { cookies }),
    headers,
    ...(url.search && { queryStringParameters: Object.fromEntries(url.searchParams) }),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'local',
      domainName: headers.host ?? url.host,
      domainPrefix: 'local',
      http: {
        method,
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toISOString(),
      timeEpoch: now.getTime(),
    },
    ...eventBody(received),
  }
}

function netlifyEvent(received: Received): NetlifyEvent {
  const { url, method } = received
  const query: Record<string, string[]> = {}
  for (const [name, value] of url.searchParams) (query[name] ??= []).push(value)
  const rawUrl = new URL(
    url.pathname + url.search,
    `http://${received.headers.host?.[0] ?? url.host}`
  )
  return {
    rawUrl: rawUrl.href,
    rawQuery: url.search.slice(1),
    path: url.pathname,
    httpMethod: method,
    headers: Object.fromEntries(
      Object.entries(received.headers).map(([name, values]) => [name, values.join(', ')])
    ),
    multiValueHeaders: received.headers,
    queryStringParameters: Object.fromEntries(
      Object.entries(query).map(([name, values]) => [name, values.join(', ')])
    ),
    multiValueQueryStringParameters: query,
    ...eventBody(received),
  }
}

/** Writes the handler's result as the platform's gateway would. */
function respond(response: ServerResponse, result: FunctionResult): void {
  const headers: Record<string, string | string[]> = {
    ...result.multiValueHeaders,
    ...result.headers,
  }
  if (result.cookies?.length) headers['set-cookie'] = result.cookies
  response.writeHead(result.statusCode ?? 200, headers)
  const body = result.body
  if (body === undefined || typeof body === 'string') {
    response.end(
      body === undefined ? '' : Buffer.from(body, result.isBase64Encoded ? 'base64' : 'utf8')
    )
    return
  }
  // The head now, as a gateway sends it once the handler's prelude arrives.
  response.flushHeaders()
  // A client gone: the handler's next write fails, as on Lambda, instead of crashing this process.
  body.on('error', () => response.destroy())
  response.on('close', () => body.destroy())
  body.pipe(response)
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    handler: { type: 'string', default: 'handler' },
    event: { type: 'string', default: 'function-url' },
  },
})
if (positionals.length !== 1 || !['function-url', 'netlify'].includes(values.event)) {
  console.error(
    'usage: node scripts/lambda-url.ts <module> [--handler <export>] [--event function-url|netlify]'
  )
  process.exit(2)
}
const host = process.env.HOST ?? '127.0.0.1'
const port = Number(process.env.PORT ?? 8787)
const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
process.env.PUBLIC_URL ??= origin
const lambdaFunc = (await import(resolve(positionals[0]!))) as Record<string, unknown>
if (typeof lambdaFunc[values.handler] !== 'function') {
  console.error(`${positionals[0]} exports no function ${values.handler}`)
  process.exit(2)
}

const server = createServer((request, response) => {
  receive(request, `${host}:${port}`)
    .then((received) =>
      execute({
        lambdaFunc,
        lambdaHandler: values.handler,
        event:
          values.event === 'netlify' ? netlifyEvent(received) : functionUrlEvent(received, request),
        timeoutMs: TIMEOUT_MS,
        verboseLevel: VERBOSE,
      })
    )
    .then((result) => respond(response, result as FunctionResult))
    .catch((error: unknown) => {
      const tooLarge = error instanceof PayloadTooLargeError
      if (!tooLarge) console.error('the function failed:', error)
      if (!response.headersSent)
        response.writeHead(tooLarge ? 413 : 502, { 'content-type': 'application/json' })
      response.end(
        JSON.stringify({ message: tooLarge ? 'Request Entity Too Large' : 'Internal Server Error' })
      )
    })
})
server.listen(port, host, () => {
  console.log(`${values.handler} of ${positionals[0]} listening on ${origin}/mcp (lambda-local)`)
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(0))
