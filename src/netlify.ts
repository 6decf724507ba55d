/**
 * @module netlify
 * Netlify Functions entry (a Web-standard handler of Netlify's functions API, on its Node.js
 * runtime): the replica of a function platform (`node/function-replica.ts`: PostgreSQL, STATE_KEYS
 * and PUBLIC_URL required, no tasks, no telemetry export, the safe default per request, no drain),
 * opened by the first request an instance serves. `netlify/functions/notes-mcp.ts` is the function,
 * on every path of the site. Netlify streams a response's body as it is written, so listen streams,
 * 2025 GET streams and 2025 calls that ask the person mid-call work (an event stream is begun by a
 * comment, so its head goes out before its first event); a synchronous function runs at most 60 s,
 * so each stream ends (with `retry`, for the client to resume elsewhere) at STREAM_MAX_SECONDS,
 * which defaults here to 50.
 */
import { withStreamHeadFirst } from './http/event-stream-head.ts'
import { functionReplica } from './node/function-replica.ts'

/** Streams end within a synchronous function's 60 s, with room to end well. */
const serve = functionReplica({ runtime: 'Netlify', title: 'Netlify', streamMaxSeconds: 50 })

/** The function's handler: the request alone (Netlify's second argument is its context). */
export async function serveNetlify(request: Request): Promise<Response> {
  return withStreamHeadFirst(await serve(request))
}
