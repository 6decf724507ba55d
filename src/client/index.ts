/**
 * @module client
 * The public surface of the project's MCP client driver (`McpClient`, for stateless 2026-07-28
 * servers), used by the tests, the load test and hosts. It is not part of the server: nothing under
 * `src/` outside `src/client/` imports it, and the Worker bundle never contains it.
 *
 * Inside: `client` (the requests and their `_meta`), `rounds` (the multi round-trip loop and its
 * retries), `tasks` (a task's handle: poll, answer, cancel), `exchange` (one POST and its JSON or SSE
 * answer), `sse` (event-stream parsing), `options` (option checks and defaults), `errors`, `abort`.
 */
export {
  McpClient,
  type CompletionReference,
  type ListenRequestOptions,
  type RequestOptions,
  type ToolCallOutcome,
} from './client.ts'
export { McpClientError, McpDriverError, type DriverFailure } from './errors.ts'
export { encodeHeaderValue, type JsonRpcNotification } from './exchange.ts'
export type {
  ElicitContent,
  ElicitRequestParams,
  ElicitResult,
  HeadersOption,
  InputContext,
  InputHandlers,
  McpClientOptions,
  RoundInfo,
} from './options.ts'
export { McpTask, type TaskInfo, type TaskRequestOptions, type TaskWaitOptions } from './tasks.ts'
