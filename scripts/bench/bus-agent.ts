/**
 * @module scripts/bench/bus-agent
 * The fleet side of a bench replica (`ours.ts` with `BENCH_BUS`): which event bus it shares with the
 * other replicas (`openBenchBus`: the PostgreSQL LISTEN/NOTIFY bus or the Redis sharded pub/sub bus
 * of the engine, as a deployment plugs them in), and, when the driver (`bus-fanout.ts`) started it
 * with an IPC channel, the agent that measures the bus from inside the replica: on `listen` it
 * subscribes one listener with the interest a listen stream of `principal` registers, on `publish`
 * it publishes events (a bounded number in flight) through the bus as a change on this replica
 * would, and on `count` / `report` it says what its listener heard and how long each event took.
 *
 * Each fan-out event is a `resource_updated` whose URI carries its sequence number and the wall-clock
 * time it was published (`fanOutUri`), so the listener on another process reads its latency off the
 * event itself: both processes read the same machine's clock (`wallClockMs`).
 */
import { InProcessEventBus, type EventBus, type ServerEvent } from 'stateless-mcp'
import { PostgresEventBus } from 'stateless-mcp/postgres'

/** The buses a bench fleet can share (`BENCH_BUS`). */
export const BENCH_BUSES = ['postgres', 'redis'] as const
export type BenchBus = (typeof BENCH_BUSES)[number]

/** The LISTEN/NOTIFY channel, or the Redis channel prefix, of the bench fleets. */
const BENCH_CHANNEL = 'bench_events'

export type AgentCommand =
  | { op: 'listen'; principal: string }
  | { op: 'publish'; principal: string; events: number; inFlight: number }
  | { op: 'count' }
  | { op: 'report' }

export type AgentReply =
  | { op: 'listening' }
  | { op: 'published'; startedAtMs: number; seconds: number; failed: number }
  | { op: 'count'; heard: number; lastAtMs: number | null }
  | { op: 'report'; heard: number; latenciesMs: number[]; lastAtMs: number | null }
  | { op: 'error'; message: string }

/** Milliseconds since the epoch with sub-millisecond resolution, comparable across processes. */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now()
}

const FAN_OUT_PREFIX = 'bench://fan-out/'

/** The URI of fan-out event `seq`, published at `sentAtMs` (wall clock). */
export function fanOutUri(seq: number, sentAtMs: number): string {
  return `${FAN_OUT_PREFIX}${seq}/${sentAtMs.toFixed(3)}`
}

/** The sequence number and publish time a fan-out event's URI carries; `undefined` for any other. */
export function readFanOutUri(uri: string): { seq: number; sentAtMs: number } | undefined {
  if (!uri.startsWith(FAN_OUT_PREFIX)) return undefined
  const [seq, sentAt] = uri.slice(FAN_OUT_PREFIX.length).split('/')
  const parsed = { seq: Number(seq), sentAtMs: Number(sentAt) }
  return Number.isInteger(parsed.seq) && Number.isFinite(parsed.sentAtMs) ? parsed : undefined
}

/** The bus named by `kind` at `url`; the in-process bus when `kind` is absent. */
export async function openBenchBus(
  kind: string | undefined,
  url: string | undefined
): Promise<EventBus & { close?(): Promise<void> }> {
  if (kind === undefined || kind === '') return new InProcessEventBus()
  if (!url) throw new Error(`BENCH_BUS=${kind} needs BENCH_BUS_URL`)
  if (kind === 'postgres') return PostgresEventBus.start({ url, channel: BENCH_CHANNEL })
  if (kind === 'redis') {
    const { RedisEventBus } = await import('stateless-mcp/redis')
    return RedisEventBus.start({ url, channelPrefix: BENCH_CHANNEL })
  }
  throw new Error(`BENCH_BUS must be one of ${BENCH_BUSES.join(', ')}, not ${kind}`)
}

/** Publishes `events` fan-out events for `principal`, at most `inFlight` awaiting the bus at once. */
async function publishAll(
  bus: EventBus,
  principal: string,
  events: number,
  inFlight: number
): Promise<{ startedAtMs: number; seconds: number; failed: number }> {
  const startedAtMs = wallClockMs()
  const started = performance.now()
  let next = 0
  let failed = 0
  const worker = async () => {
    while (next < events) {
      const seq = next++
      const event: ServerEvent = {
        kind: 'resource_updated',
        uri: fanOutUri(seq, wallClockMs()),
        principal,
      }
      await Promise.resolve(bus.publish(event)).catch(() => (failed += 1))
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(inFlight, events)) }, worker))
  return { startedAtMs, seconds: (performance.now() - started) / 1000, failed }
}

/**
 * Answers the driver's commands on this process's IPC channel (module header). Replies in order;
 * a command that fails answers `error` with its message.
 */
export function serveBusAgent(bus: EventBus): void {
  const latencies: number[] = []
  let lastAtMs: number | null = null
  const unsubscribes: Array<() => void> = []
  const reply = (message: AgentReply) => process.send?.(message)
  const handle = async (command: AgentCommand): Promise<AgentReply> => {
    switch (command.op) {
      case 'listen': {
        const subscription = bus.subscribe(
          (event) => {
            if (event.kind !== 'resource_updated') return
            const fanOut = readFanOutUri(event.uri)
            if (fanOut === undefined) return
            lastAtMs = wallClockMs()
            latencies.push(lastAtMs - fanOut.sentAtMs)
          },
          { principal: command.principal }
        )
        unsubscribes.push(subscription)
        // The Redis bus subscribes on Redis after `subscribe` answers: wait until it hears.
        await (subscription as { ready?: Promise<void> }).ready
        return { op: 'listening' }
      }
      case 'publish':
        return {
          op: 'published',
          ...(await publishAll(bus, command.principal, command.events, command.inFlight)),
        }
      case 'count':
        return { op: 'count', heard: latencies.length, lastAtMs }
      case 'report':
        return { op: 'report', heard: latencies.length, latenciesMs: latencies, lastAtMs }
    }
  }
  process.on('message', (command: AgentCommand) => {
    handle(command).then(reply, (error: unknown) =>
      reply({ op: 'error', message: error instanceof Error ? error.message : String(error) })
    )
  })
  process.once('disconnect', () => {
    for (const unsubscribe of unsubscribes) unsubscribe()
  })
}
