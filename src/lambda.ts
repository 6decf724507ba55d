/**
 * @module lambda
 * AWS Lambda entry (the managed Node.js 24 runtime), through Hono's Lambda adapter: the replica of
 * `node/replica.ts` on PostgreSQL, opened by the first invocation an execution environment serves and
 * kept for the next ones. A failed open is not kept: the next invocation tries again, and until then
 * requests get a JSON-RPC error without detail (500 for a misconfiguration, 503 otherwise), the
 * reason going to the function's log.
 * - `handler`: Function URLs in the RESPONSE_STREAM invoke mode (`streamHandle`). Responses stream
 *   as on Node (an event stream begun by a comment, so its head goes out before its first event):
 *   listen streams, 2025 GET streams and 2025 calls that ask the person mid-call all work,
 *   each ending (with `retry`, for the client to resume elsewhere) at STREAM_MAX_SECONDS, which
 *   defaults here to {@link LAMBDA_STREAM_MAX_SECONDS} and must stay below the function's timeout;
 * - `bufferedHandler`: API Gateway HTTP APIs, and Function URLs in the BUFFERED mode (`handle`). A
 *   response reaches the client only once it has ended, so what holds one open is refused before the
 *   app: `subscriptions/listen` answers -32601 (HTTP 404) and the 2025 GET stream 405 (what the 2025
 *   transport lets a server without one answer). A 2025 call that asks the person mid-call cannot be
 *   told apart before it asks: through this handler it waits until the gateway's timeout.
 *
 * Lambda differs from Node in these places, all decided here:
 * - DATABASE_URL, STATE_KEYS and PUBLIC_URL are required: an execution environment's disk is its own
 *   and short-lived (no SQLite file or generated key ring would be shared), and it has no address of
 *   its own for the links it hands out. ALLOWED_HOSTS defaults to PUBLIC_URL's host;
 * - no tasks: Lambda freezes the environment once the response is sent, so nothing would run a task
 *   after its `CreateTaskResult`. The tasks extension is not advertised: `import_notes` runs within
 *   its call (up to 50 notes) and `export_notes` answers that it needs the extension;
 * - no telemetry export (it would send its batches after the response): OTEL_* and METRICS_PORT are
 *   refused, as off Node;
 * - the safe default is checked per request against its Host, as on Workers: without auth a request
 *   under a name that is not loopback gets a 500 "misconfigured" unless ALLOW_UNAUTHENTICATED=1;
 * - no drain: Lambda ends an environment without telling the function; the leases it held lapse and
 *   another invocation takes the 2025 calls over, as after a crash.
 */
import { Hono } from 'hono'
import { handle, streamHandle } from 'hono/aws-lambda'
import { ConfigError, assertSafeExposure } from './config.ts'
import { MISCONFIGURED, jsonRpcError, peekRequestId, setupFailed } from './http/errors.ts'
import { withStreamHeadFirst } from './http/event-stream-head.ts'
import { ErrorCode } from './mcp/errors.ts'
import { HEADER_METHOD, METHODS } from './mcp/protocol.ts'
import { logError } from './mcp/logger.ts'
import { openReplica, type Replica } from './node/replica.ts'

/** STREAM_MAX_SECONDS unless set: below Lambda's longest timeout (900 s), with room to end well. */
export const LAMBDA_STREAM_MAX_SECONDS = 840

/** What a request body may be for its id to be read into a refusal (the listen request is small). */
const PEEK_BYTES = 64 * 1024

/** The settings Lambda cannot do without, and why. */
const REQUIRED: ReadonlyArray<[name: string, why: string]> = [
  ['DATABASE_URL', 'the notes must live in PostgreSQL, shared by every execution environment'],
  ['STATE_KEYS', 'every execution environment must seal and open requestState with one key ring'],
  ['PUBLIC_URL', 'the function URL (or API URL) the links it hands out must name'],
]

/** The environment the replica is opened with: Lambda's requirements checked, its defaults added. */
export function lambdaEnvironment(
  env: Record<string, string | undefined>
): Record<string, string | undefined> {
  const missing = REQUIRED.filter(([name]) => !env[name])
  if (missing.length > 0)
    throw new ConfigError(
      `On AWS Lambda, set ${missing.map(([name, why]) => `${name} (${why})`).join('; ')}.`
    )
  return {
    ALLOWED_HOSTS: new URL(env.PUBLIC_URL!).hostname,
    STREAM_MAX_SECONDS: String(LAMBDA_STREAM_MAX_SECONDS),
    ...env,
  }
}

let opening: Promise<Replica> | undefined

/** The replica of this execution environment, opened on first use; a failed open is retried. */
function replica(): Promise<Replica> {
  if (!opening) {
    opening = (async () =>
      openReplica(lambdaEnvironment(process.env), 'Lambda', { serveTasks: false }))()
    opening.catch(() => (opening = undefined))
  }
  return opening
}

/** The replica's app behind the checks of a request any invocation makes first. */
async function serve(request: Request): Promise<Response> {
  let ready: Replica
  try {
    ready = await replica()
  } catch (error) {
    logError('lambda setup failed', error)
    return error instanceof ConfigError
      ? setupFailed(500, MISCONFIGURED)
      : setupFailed(503, 'Service unavailable: the server could not start; try again shortly.')
  }
  try {
    assertSafeExposure({ ...ready.config, host: new URL(request.url).hostname })
  } catch (error) {
    logError('refusing an unauthenticated public deployment', error)
    return setupFailed(500, MISCONFIGURED)
  }
  return ready.app.fetch(request)
}

/**
 * The app streamed: every request goes to the replica, an event stream begun by a comment so its
 * head goes out at once (`http/event-stream-head.ts`).
 */
const streamed = new Hono().all('*', async (c) => withStreamHeadFirst(await serve(c.req.raw)))

/** The app buffered: what holds a response open is refused first (module header). */
const buffered = new Hono()
  .get('/mcp', () =>
    jsonRpcError(
      null,
      405,
      'Method Not Allowed: this deployment sends whole responses (AWS Lambda, buffered), so it ' +
        'offers no SSE stream on GET; POST requests are served.',
      { allow: 'POST, DELETE' }
    )
  )
  .post('/mcp', async (c, next) => {
    if (c.req.header(HEADER_METHOD) !== METHODS.listen) return next()
    return jsonRpcError(
      await peekRequestId(c, PEEK_BYTES),
      404,
      'Method not found: subscriptions/listen needs a streamed response, which this deployment ' +
        '(AWS Lambda, buffered) cannot send; its function URL in the RESPONSE_STREAM mode serves it.',
      {},
      ErrorCode.MethodNotFound
    )
  })
  .all('*', (c) => serve(c.req.raw))

/** Function URLs in the RESPONSE_STREAM invoke mode. */
export const handler = streamHandle(streamed)

/** API Gateway HTTP APIs, and Function URLs in the BUFFERED invoke mode. */
export const bufferedHandler = handle(buffered)
