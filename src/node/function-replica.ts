/**
 * @module node/function-replica
 * The replica of `node/replica.ts` on a function platform that runs nothing once a response is sent
 * (AWS Lambda, Netlify Functions): `functionReplica(platform)` answers requests with it, as each
 * platform's entry (`lambda.ts`, `netlify.ts`) hands them over. The replica is opened by the first
 * request an instance serves and kept for the next ones; a failed open is not kept, so the next
 * request tries again, and until then requests get a JSON-RPC error without detail (500 for a
 * misconfiguration, 503 otherwise: `http/serverless.ts`), the reason going to the function's log.
 * What these platforms
 * share, decided here:
 * - DATABASE_URL, STATE_KEYS and PUBLIC_URL are required: an instance's disk is its own and
 *   short-lived (no SQLite file or generated key ring would be shared), and it has no address of its
 *   own for the links it hands out. ALLOWED_HOSTS defaults to PUBLIC_URL's host name;
 * - no tasks: nothing would run a task after its `CreateTaskResult`. The tasks extension is not
 *   advertised: `import_notes` runs within its call (up to 50 notes) and `export_notes` answers that
 *   it needs the extension;
 * - no telemetry export (it would send its batches after the response): OTEL_* and METRICS_PORT are
 *   refused, as off Node;
 * - STREAM_MAX_SECONDS defaults below the platform's longest invocation, so a stream ends with
 *   `retry` (its client resumes it elsewhere) before the platform cuts it;
 * - the safe default is checked per request against its Host, as on Workers: without auth a request
 *   under a name that is not loopback gets a 500 "misconfigured" unless ALLOW_UNAUTHENTICATED=1;
 * - no drain: an instance ends without telling the function; the leases it held lapse and another
 *   instance takes the 2025 calls over, as after a crash.
 */
import { ConfigError } from '../config.ts'
import { refusedExposure, setupFailure } from '../http/serverless.ts'
import { logError } from 'stateless-mcp/compose'
import { openReplica, type Replica, type ReplicaRuntime } from './replica.ts'

/** A function platform, as its entry describes it. */
export interface FunctionPlatform {
  runtime: Extract<ReplicaRuntime, 'Lambda' | 'Netlify'>
  /** Its name in messages: "On AWS Lambda, set …". */
  title: string
  /** STREAM_MAX_SECONDS unless set: below the platform's longest invocation. */
  streamMaxSeconds: number
  /** Set where it sends responses whole: why 2025 calls cannot ask mid-call (`AppDeps`). */
  wholeResponses?: string
}

/** The settings a function cannot do without, and why. */
const REQUIRED: ReadonlyArray<[name: string, why: string]> = [
  ['DATABASE_URL', 'the notes must live in PostgreSQL, shared by every instance'],
  ['STATE_KEYS', 'every instance must seal and open requestState with one key ring'],
  ['PUBLIC_URL', 'the URL clients reach the function under, which the links it hands out name'],
]

/** The environment a function's replica is opened with: its requirements checked, defaults added. */
export function functionEnvironment(
  env: Record<string, string | undefined>,
  platform: FunctionPlatform
): Record<string, string | undefined> {
  const missing = REQUIRED.filter(([name]) => !env[name])
  if (missing.length > 0)
    throw new ConfigError(
      `On ${platform.title}, set ${missing.map(([name, why]) => `${name} (${why})`).join('; ')}.`
    )
  // A PUBLIC_URL that is no URL gets no default here: the configuration's parser names it.
  const publicUrl = URL.parse(env.PUBLIC_URL!)
  return {
    ...(publicUrl && { ALLOWED_HOSTS: publicUrl.hostname }),
    STREAM_MAX_SECONDS: String(platform.streamMaxSeconds),
    ...env,
  }
}

/** Answers requests with the replica of this instance, as the module header says. */
export function functionReplica(
  platform: FunctionPlatform
): (request: Request) => Promise<Response> {
  let opening: Promise<Replica> | undefined
  const replica = (): Promise<Replica> => {
    if (!opening) {
      opening = (async () =>
        openReplica(functionEnvironment(process.env, platform), platform.runtime, {
          serveTasks: false,
          wholeResponses: platform.wholeResponses,
        }))()
      opening.catch(() => (opening = undefined))
    }
    return opening
  }

  return async (request) => {
    let ready: Replica
    try {
      ready = await replica()
    } catch (error) {
      logError(`${platform.title} setup failed`, error)
      return setupFailure(error, (cause) => cause instanceof ConfigError)
    }
    return refusedExposure(ready.config, request) ?? ready.app.fetch(request)
  }
}
