/**
 * @module scripts/lambda-url
 * A Lambda function URL on this machine (`npm run start:lambda`, `npm run start:fixture:lambda`):
 * serves the handler a module exports (`handler` by default, or the one `--handler` names) on HOST
 * (127.0.0.1) and PORT (8787) through `lambda-local`, which runs it as Lambda's Node.js runtime
 * would (its `awslambda.streamifyResponse` for response streaming, its context and timeout). Each
 * HTTP request becomes a function URL event (payload format 2.0: raw path and query, lower-cased
 * headers, cookies apart, the body base64-encoded unless it is text); the handler's result is
 * written back, as a stream when the handler streams (the RESPONSE_STREAM invoke mode), else whole
 * (BUFFERED, or an API Gateway HTTP API). PUBLIC_URL defaults to the URL served here.
 * The module is loaded at start, as Lambda's init phase does. What this does not reproduce: Lambda
 * freezing the execution environment between invocations, and running several environments.
 *
 *   node scripts/lambda-url.ts src/lambda.ts [--handler bufferedHandler]
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

/** What a handler answers: whole, or (streaming) its head with the body still being written. */
interface FunctionResult {
  statusCode?: number
  headers?: Record<string, string>
  cookies?: string[]
  body?: string | Readable
  isBase64Encoded?: boolean
}

/** Content types a function URL passes as text rather than base64. */
const TEXT_TYPES = /^(text\/|application\/(json|xml|x-www-form-urlencoded|javascript))/i

async function eventOf(request: IncomingMessage, host: string): Promise<FunctionUrlEvent> {
  const url = new URL(request.url ?? '/', `http://${host}`)
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  const body = Buffer.concat(chunks)
  const headers: Record<string, string> = {}
  let cookies: string[] | undefined
  for (const [name, value] of Object.entries(request.headersDistinct)) {
    if (name === 'cookie') cookies = value!.flatMap((line) => line.split(/;\s*/))
    else headers[name] = value!.join(',')
  }
  const text = TEXT_TYPES.test(headers['content-type'] ?? '')
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
      domainName: headers.host ?? host,
      domainPrefix: 'local',
      http: {
        method: request.method ?? 'GET',
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
    ...(body.length > 0 && { body: body.toString(text ? 'utf8' : 'base64') }),
    isBase64Encoded: body.length > 0 && !text,
  }
}

/** Writes the handler's result as the function URL would. */
function respond(response: ServerResponse, result: FunctionResult): void {
  const headers: Record<string, string | string[]> = { ...result.headers }
  if (result.cookies?.length) headers['set-cookie'] = result.cookies
  response.writeHead(result.statusCode ?? 200, headers)
  const body = result.body
  if (body === undefined || typeof body === 'string') {
    response.end(
      body === undefined ? '' : Buffer.from(body, result.isBase64Encoded ? 'base64' : 'utf8')
    )
    return
  }
  // The head now, as a function URL sends it once the handler's prelude arrives.
  response.flushHeaders()
  // A client gone: the handler's next write fails, as on Lambda, instead of crashing this process.
  body.on('error', () => response.destroy())
  response.on('close', () => body.destroy())
  body.pipe(response)
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { handler: { type: 'string', default: 'handler' } },
})
if (positionals.length !== 1) {
  console.error('usage: node scripts/lambda-url.ts <module> [--handler <export>]')
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
  eventOf(request, `${host}:${port}`)
    .then((event) =>
      execute({
        lambdaFunc,
        lambdaHandler: values.handler,
        event,
        timeoutMs: TIMEOUT_MS,
        verboseLevel: VERBOSE,
      })
    )
    .then((result) => respond(response, result as FunctionResult))
    .catch((error: unknown) => {
      console.error('the function failed:', error)
      if (!response.headersSent) response.writeHead(502, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ message: 'Internal Server Error' }))
    })
})
server.listen(port, host, () => {
  console.log(`${values.handler} of ${positionals[0]} listening on ${origin}/mcp (lambda-local)`)
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(0))
