/**
 * @module client/rounds
 * The multi round-trip loop of one call (`driveCall`). For `tools/call`, `resources/read` and
 * `prompts/get`, on `input_required` it asks the host's handlers for every key at once, then sends the
 * same method and params again on a new id, with `inputResponses` holding only this round's answers
 * and the server's `requestState` echoed verbatim (and only when the server sent one). A round that
 * carries only `requestState` is re-sent after a pause that doubles up to a ceiling. Any other method
 * must complete in one round. A `tools/call` of a call that declared the tasks extension may end
 * with a `CreateTaskResult` (`resultType: "task"`), returned as it is for `client/tasks` to follow;
 * a task anywhere else is a protocol error. `answerInputs` also answers a task's questions.
 *
 * Bounds: `maxRounds` requests per call; opt-in transport retries that re-send the same round, on a new
 * id and on the next endpoint, when fetch fails, a 502/503/504 comes back, or an event stream ends
 * before its response (the spec says a broken stream loses the request). Nothing else is retried. The
 * call's timeout and the caller's abort arrive as the call's signal (`client/client`).
 *
 * A call keeps its state in its own `Call`, so parallel calls on one client share nothing.
 */
import { METHODS, SUSPENDABLE_METHODS, TASKS_EXTENSION } from '../mcp/protocol.ts'
import { isObject, type CreateMessageParams, type JsonObject, type RequestId } from '../mcp/wire.ts'
import { pause, untilAborted } from './abort.ts'
import { McpDriverError, protocolError, summarize } from './errors.ts'
import {
  postRequest,
  readAnswer,
  serverError,
  type JsonRpcNotification,
  type Transport,
} from './exchange.ts'
import type { ElicitRequestParams, InputContext, InputHandlers, RoundInfo } from './options.ts'

/** First pause before re-sending a state-only round or a failed transport attempt; it doubles. */
export const RETRY_DELAY_MS = 50
/** Ceiling of that pause. */
export const MAX_RETRY_DELAY_MS = 250

/** One call's own state: nothing here is shared with another call. */
export interface Call {
  method: string
  params: JsonObject
  /** The request's `_meta`, the same on every round. */
  meta: JsonObject
  signal: AbortSignal
  onNotification: ((notification: JsonRpcNotification) => void) | undefined
  /** Whether the request declared the tasks extension (a `tools/call` may then answer a task). */
  tasks: boolean
  /** How many times one round is re-sent after a transport failure. */
  transportRetries: number
  /** The last result the server sent, for the error that ends a call early. */
  lastResult?: JsonObject
}

/** What the loop needs from its client. */
export interface RoundClient extends Transport {
  readonly handlers: InputHandlers
  readonly maxRounds: number
  readonly onRound: ((info: RoundInfo) => void) | undefined
  /** A request id never used before. */
  newId(): RequestId
  /** The endpoint of the next attempt. */
  endpoint(): string
}

type InputJob = (ctx: InputContext) => Promise<unknown>

/** Runs `call` round after round until its result is complete. */
export async function driveCall(client: RoundClient, call: Call): Promise<JsonObject> {
  const suspendable = SUSPENDABLE_METHODS.has(call.method)
  let params = call.params
  let stateOnlyStreak = 0
  for (let round = 1; ; round++) {
    const result = await sendRound(client, call, params, round)
    call.lastResult = result
    const type = result.resultType
    if (type === undefined || type === 'complete') return result
    if (type === 'task') return taskResult(call, result)
    if (type !== 'input_required') {
      throw protocolError(
        `${call.method} returned an unknown resultType ${JSON.stringify(type)}`,
        result
      )
    }
    if (!suspendable) {
      throw protocolError(`${call.method} may not return input_required`, result)
    }
    const { inputRequests, requestState } = result
    if (inputRequests !== undefined && !isObject(inputRequests)) {
      throw protocolError('inputRequests must be an object', result)
    }
    if (requestState !== undefined && typeof requestState !== 'string') {
      throw protocolError('requestState must be a string', result)
    }
    const keys = inputRequests ? Object.keys(inputRequests) : []
    if (keys.length === 0 && requestState === undefined) {
      throw protocolError('input_required carries neither inputRequests nor requestState', result)
    }
    if (round >= client.maxRounds) {
      throw new McpDriverError(
        'max_rounds',
        `${call.method} still needed input after ${client.maxRounds} rounds`,
        { lastResult: result }
      )
    }
    let inputResponses: JsonObject | undefined
    if (inputRequests && keys.length > 0) {
      inputResponses = await answerInputs(
        client.handlers,
        inputRequests,
        round,
        call.signal,
        result
      )
      stateOnlyStreak = 0
    } else {
      await pause(backoff(stateOnlyStreak++), call.signal)
    }
    params = retryParams(call.params, inputResponses, requestState)
  }
}

/** One round, re-sent on a new id after a transport failure while the call's retries remain. */
async function sendRound(
  client: RoundClient,
  call: Call,
  params: JsonObject,
  round: number
): Promise<JsonObject> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await sendAttempt(client, call, params, round, attempt)
    } catch (error) {
      const retryable = error instanceof McpDriverError && error.reason === 'transport'
      if (!retryable || attempt > call.transportRetries) throw error
      await pause(backoff(attempt - 1), call.signal)
    }
  }
}

async function sendAttempt(
  client: RoundClient,
  call: Call,
  params: JsonObject,
  round: number,
  attempt: number
): Promise<JsonObject> {
  const id = client.newId()
  const url = client.endpoint()
  const info: RoundInfo = {
    method: call.method,
    round,
    attempt,
    id,
    url,
    status: 0,
    headers: new Headers(),
  }
  try {
    const body = { ...params, _meta: call.meta }
    const response = await postRequest(client, url, id, call.method, body, call.signal)
    info.status = response.status
    info.headers = response.headers
    const final = await readAnswer(response, id, call.signal, call.onNotification)
    if (final === undefined) {
      throw new McpDriverError(
        'transport',
        `the event stream of ${call.method} ended before its response`
      )
    }
    if ('error' in final) throw serverError(final.error, response.status)
    const { resultType } = final.result
    if (typeof resultType === 'string') info.resultType = resultType
    return final.result
  } finally {
    client.onRound?.(info)
  }
}

/** A `CreateTaskResult`, where the call may have one. */
function taskResult(call: Call, result: JsonObject): JsonObject {
  if (call.method !== METHODS.toolsCall) {
    throw protocolError(`${call.method} returned a task; only tools/call may`, result)
  }
  if (!call.tasks) {
    throw protocolError(
      `tools/call returned a task, but the request did not declare the ${TASKS_EXTENSION} extension`,
      result
    )
  }
  return result
}

/**
 * Runs the handlers of one round (or of one `input_required` phase of a task) concurrently; none
 * starts unless all of them exist. Answers the responses by key.
 */
export async function answerInputs(
  handlers: InputHandlers,
  requests: JsonObject,
  round: number,
  signal: AbortSignal,
  result: JsonObject
): Promise<JsonObject> {
  const jobs = Object.entries(requests).map(
    ([key, request]) => [key, inputJob(handlers, key, request, result)] as const
  )
  const siblings = new AbortController()
  const ctxSignal = AbortSignal.any([signal, siblings.signal])
  const all = Promise.all(
    jobs.map(async ([key, job]) => {
      const answer = await job({ key, round, signal: ctxSignal })
      if (!isObject(answer)) {
        throw new TypeError(
          `the handler for input "${key}" returned ${summarize(answer)}, not an object`
        )
      }
      return answer
    })
  )
  try {
    const answers = await untilAborted(all, signal)
    return Object.fromEntries(jobs.map(([key], i) => [key, answers[i]]))
  } catch (error) {
    siblings.abort(error)
    throw error
  }
}

/** The handler call that answers input request `key`, or why it cannot be answered. */
function inputJob(
  handlers: InputHandlers,
  key: string,
  request: unknown,
  result: JsonObject
): InputJob {
  if (!isObject(request) || typeof request.method !== 'string') {
    throw protocolError(`input request "${key}" is not a {method, params} object`, result)
  }
  const { method, params } = request
  const needsParams = method !== 'roots/list'
  if (needsParams ? !isObject(params) : params !== undefined && !isObject(params)) {
    throw protocolError(`input request "${key}" (${method}) has invalid params`, result)
  }
  const missing = (handler: string) =>
    new McpDriverError(
      'no_handler',
      `the server asked for ${method} (input "${key}") but handlers.${handler} is not set`,
      { lastResult: result }
    )
  switch (method) {
    case 'elicitation/create': {
      const elicit = handlers.elicit
      if (!elicit) throw missing('elicit')
      return (ctx) => elicit(params as ElicitRequestParams, ctx)
    }
    case 'sampling/createMessage': {
      const sample = handlers.sample
      if (!sample) throw missing('sample')
      return (ctx) => sample(params as CreateMessageParams, ctx)
    }
    case 'roots/list': {
      const roots = handlers.roots
      if (!roots) throw missing('roots')
      return (ctx) => roots(ctx)
    }
    default:
      throw protocolError(`input request "${key}" has unknown method ${method}`, result)
  }
}

/** The params of the next round: the original ones, this round's answers, the server's state. */
function retryParams(
  original: JsonObject,
  inputResponses: JsonObject | undefined,
  requestState: string | undefined
): JsonObject {
  const params: JsonObject = { ...original }
  delete params.inputResponses
  delete params.requestState
  if (inputResponses !== undefined) params.inputResponses = inputResponses
  if (requestState !== undefined) params.requestState = requestState
  return params
}

function backoff(retry: number): number {
  return Math.min(RETRY_DELAY_MS * 2 ** retry, MAX_RETRY_DELAY_MS)
}
