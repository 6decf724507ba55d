/**
 * @module lambda
 * AWS Lambda entry (the managed Node.js 24 runtime), through Hono's Lambda adapter: the replica of
 * a function platform (`node/function-replica.ts`: PostgreSQL, STATE_KEYS and PUBLIC_URL required,
 * no tasks, no telemetry export, the safe default per request, no drain), opened by the first
 * invocation an execution environment serves. Lambda freezes the environment once a response is
 * sent. Two handlers, one per way Lambda is reached:
 * - `handler`: Function URLs in the RESPONSE_STREAM invoke mode (`streamHandle`). Responses stream
 *   as on Node (an event stream begun by a comment, so its head goes out before its first event):
 *   listen streams, 2025 GET streams and 2025 calls that ask the person mid-call all work, each
 *   ending (with `retry`, for the client to resume elsewhere) at STREAM_MAX_SECONDS, which defaults
 *   here to 840 and must stay below the function's timeout;
 * - `bufferedHandler`: API Gateway HTTP APIs, and Function URLs in the BUFFERED mode (`handle`). A
 *   response reaches the client only once it has ended, so what holds one open is refused before the
 *   app: `subscriptions/listen` answers -32601 (HTTP 404) and the 2025 GET stream 405 (what the 2025
 *   transport lets a server without one answer); a 2025 call that would ask the person mid-call
 *   ends, when it would ask, with a tool error saying why (its questions could not reach the client
 *   before its response). The 2026-07-28 era's interactive flows are plain rounds and work.
 * A function uses one of the two; each opens its own replica on first use.
 */
import { Hono } from 'hono'
import { handle, streamHandle } from 'hono/aws-lambda'
import { jsonRpcError, peekRequestId } from './http/errors.ts'
import { withStreamHeadFirst } from './http/event-stream-head.ts'
import { ErrorCode, METHODS } from 'stateless-mcp'
import { HEADER_METHOD } from 'stateless-mcp/compose'
import { functionReplica, type FunctionPlatform } from './node/function-replica.ts'

/** Lambda; streams end within its longest timeout (900 s), with room to end well. */
const LAMBDA: FunctionPlatform = { runtime: 'Lambda', title: 'AWS Lambda', streamMaxSeconds: 840 }

const serveStreamed = functionReplica(LAMBDA)

const serveBuffered = functionReplica({
  ...LAMBDA,
  wholeResponses:
    'This server sends whole responses here (AWS Lambda, buffered), so it cannot ask you anything ' +
    'in the middle of a call made over a 2025 session: the call stopped where it would have asked. ' +
    'Connect through its function URL in the RESPONSE_STREAM mode, or with a 2026-07-28 client.',
})

/** What a request body may be for its id to be read into a refusal (the listen request is small). */
const PEEK_BYTES = 64 * 1024

/**
 * The app streamed: every request goes to the replica, an event stream begun by a comment so its
 * head goes out at once (`http/event-stream-head.ts`).
 */
const streamed = new Hono().all('*', async (c) =>
  withStreamHeadFirst(await serveStreamed(c.req.raw))
)

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
  .all('*', (c) => serveBuffered(c.req.raw))

/** Function URLs in the RESPONSE_STREAM invoke mode. */
export const handler = streamHandle(streamed)

/** API Gateway HTTP APIs, and Function URLs in the BUFFERED invoke mode. */
export const bufferedHandler = handle(buffered)
