/**
 * @module mcp/otel/request-observation
 * The engine's `RequestObservation` on OpenTelemetry: for one MCP request or notification, its SERVER
 * span (named and attributed as the semantic conventions for MCP say, `conventions.ts`; parented as
 * `spans.ts` says), the child spans of the steps the engine reports (sealing and opening
 * `requestState`), and what it records when it ends: `mcp.server.operation.duration`, the rounds of a
 * completed multi round-trip flow, and a refused state's reason.
 *
 * Names that clients choose are bounded: a tool or prompt name only when the server has it, a method
 * outside the known ones as `_OTHER`, a protocol version only when supported, a resource URI up to
 * 2048 characters, a request id up to 256, a status description cut at 256. Generic: it reads only
 * what the engine reports and the protocol defines (a server's tool and prompt names through
 * `ObservedServer`).
 */
import {
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api'
import { ErrorCode } from '../errors.ts'
import { LEGACY_METHODS } from '../legacy/protocol.ts'
import type { ObservedServer, RequestObservation } from '../observer.ts'
import { META_PROTOCOL_VERSION, METHODS } from '../protocol.ts'
import { isObject, type JsonObject } from '../wire.ts'
import {
  ATTR,
  GEN_AI_EXECUTE_TOOL,
  KNOWN_METHODS,
  KNOWN_VERSIONS,
  OTHER_METHOD,
  TOOL_ERROR,
  isServerFailure,
  type OwnNames,
} from './conventions.ts'
import type { Instruments } from './metrics.ts'
import { markFailed, parentOf, type SpanScope, type TraceContextReader } from './spans.ts'

const MAX_URI_CHARS = 2048
/** Longest request id recorded (ids are the client's: a longer one is left out). */
const MAX_ID_CHARS = 256
/** Longest status description (a JSON-RPC message may quote what the client sent). */
const MAX_MESSAGE_CHARS = 256

/** Methods whose `params.uri` is the conventions' `mcp.resource.uri`. */
const URI_METHODS: ReadonlySet<string> = new Set([
  METHODS.resourcesRead,
  LEGACY_METHODS.subscribe,
  LEGACY_METHODS.unsubscribe,
])

/** What every request observation of one telemetry shares. */
export interface ObservationParts {
  /** Absent: no spans (metrics only). */
  readonly tracer: Tracer | undefined
  readonly instruments: Instruments
  readonly scope: SpanScope
  readonly propagator: TraceContextReader
  readonly names: OwnNames
}

export class OtelRequestObservation implements RequestObservation {
  readonly #tracer: Tracer | undefined
  readonly #instruments: Instruments
  readonly #names: OwnNames
  readonly #started = performance.now()
  readonly #method: string
  readonly #tool: string | undefined
  readonly #prompt: string | undefined
  #protocolVersion: string | undefined
  readonly #modern: boolean
  #span: Span | undefined
  #context: Context | undefined
  #scope: SpanScope
  #round = 1
  #ended = false

  constructor(
    { tracer, instruments, scope, propagator, names }: ObservationParts,
    server: ObservedServer,
    message: JsonObject & { method: string },
    headers: Headers
  ) {
    this.#tracer = tracer
    this.#instruments = instruments
    this.#scope = scope
    this.#names = names
    const method = message.method
    this.#method = KNOWN_METHODS.has(method) ? method : OTHER_METHOD
    const params = isObject(message.params) ? message.params : undefined
    const name = params?.name
    if (method === METHODS.toolsCall && typeof name === 'string' && server.tools.has(name))
      this.#tool = name
    const ref = params?.ref
    const promptName =
      method === METHODS.promptsGet
        ? name
        : isObject(ref) && ref.type === 'ref/prompt'
          ? ref.name
          : undefined
    if (typeof promptName === 'string' && server.prompts.has(promptName)) this.#prompt = promptName
    const claimed = isObject(params?._meta) ? params._meta[META_PROTOCOL_VERSION] : undefined
    this.#modern = typeof claimed === 'string'
    if (typeof claimed === 'string' && KNOWN_VERSIONS.has(claimed)) this.#protocolVersion = claimed
    if (!tracer) return

    const attributes: Attributes = this.#common()
    const id = message.id
    if ((typeof id === 'string' && id.length <= MAX_ID_CHARS) || typeof id === 'number')
      attributes[ATTR.jsonrpcRequestId] = String(id)
    const uri = params?.uri
    if (URI_METHODS.has(method) && typeof uri === 'string' && uri.length <= MAX_URI_CHARS)
      attributes[ATTR.mcpResourceUri] = uri
    const target = this.#tool ?? this.#prompt
    const { parent, links } = parentOf(propagator, params, headers)
    this.#span = tracer.startSpan(
      target === undefined ? this.#method : `${this.#method} ${target}`,
      { kind: SpanKind.SERVER, attributes, links },
      parent
    )
    this.#context = trace.setSpan(parent, this.#span)
  }

  /** What spans and the duration metric share. */
  #common(): Attributes {
    const attributes: Attributes = {
      [ATTR.mcpMethodName]: this.#method,
      [ATTR.networkTransport]: 'tcp',
      [ATTR.networkProtocolName]: 'http',
    }
    if (this.#protocolVersion) attributes[ATTR.mcpProtocolVersion] = this.#protocolVersion
    if (this.#tool) {
      attributes[ATTR.genAiToolName] = this.#tool
      attributes[ATTR.genAiOperationName] = GEN_AI_EXECUTE_TOOL
    }
    if (this.#prompt) attributes[ATTR.genAiPromptName] = this.#prompt
    return attributes
  }

  run<T>(run: () => T): T {
    return this.#context ? this.#scope.run(this.#context, run) : run()
  }

  async step<T>(name: string, step: () => Promise<T>): Promise<T> {
    if (!this.#tracer || !this.#context) return step()
    const span = this.#tracer.startSpan(name, { kind: SpanKind.INTERNAL }, this.#context)
    try {
      return await step()
    } catch (error) {
      markFailed(span, error)
      throw error
    } finally {
      span.end()
    }
  }

  session(id: string, protocolVersion: string): void {
    if (KNOWN_VERSIONS.has(protocolVersion)) {
      this.#protocolVersion = protocolVersion
      this.#span?.setAttribute(ATTR.mcpProtocolVersion, protocolVersion)
    }
    this.#span?.setAttribute(ATTR.mcpSessionId, id)
  }

  round(round: number): void {
    this.#round = round
  }

  stateRejected(reason: string): void {
    this.#span?.setAttribute(this.#names.requestStateRejection, reason)
    this.#instruments.rejections.add(1, {
      [this.#names.requestStateRejection]: reason,
      [ATTR.mcpMethodName]: this.#method,
    })
  }

  succeeded(result?: Record<string, unknown>): void {
    const resultType =
      typeof result?.resultType === 'string'
        ? result.resultType
        : this.#modern
          ? 'complete'
          : undefined
    const toolError = this.#method === METHODS.toolsCall && result?.isError === true
    this.#end(resultType, undefined, toolError ? TOOL_ERROR : undefined)
  }

  failed(error: unknown): void {
    const code =
      isObject(error) && typeof error.code === 'number' ? error.code : ErrorCode.InternalError
    const failure = isServerFailure(code)
    const message =
      failure && error instanceof Error ? error.message.slice(0, MAX_MESSAGE_CHARS) : undefined
    this.#end(undefined, code, failure ? String(code) : undefined, message)
  }

  #end(
    resultType: string | undefined,
    code: number | undefined,
    errorType: string | undefined,
    message?: string
  ): void {
    if (this.#ended) return
    this.#ended = true
    const seconds = (performance.now() - this.#started) / 1000
    const attributes = this.#common()
    if (resultType) attributes[this.#names.resultType] = resultType
    if (code !== undefined) attributes[ATTR.rpcResponseStatusCode] = String(code)
    if (errorType) attributes[ATTR.errorType] = errorType
    this.#instruments.duration.record(seconds, attributes)
    if (this.#round > 1 && code === undefined && resultType !== 'input_required') {
      const flow = this.#common()
      delete flow[ATTR.networkTransport]
      delete flow[ATTR.networkProtocolName]
      this.#instruments.rounds.record(this.#round, flow)
    }
    const span = this.#span
    if (!span) return
    if (resultType) span.setAttribute(this.#names.resultType, resultType)
    if (code !== undefined) span.setAttribute(ATTR.rpcResponseStatusCode, String(code))
    if (errorType) {
      span.setAttribute(ATTR.errorType, errorType)
      span.setStatus({ code: SpanStatusCode.ERROR, message })
    }
    span.end()
  }
}
