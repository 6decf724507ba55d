/**
 * @module stateless-mcp/redis
 * The event bus of Node fleets past one database: Redis sharded pub/sub on one `redis-server` or a
 * Redis Cluster, each event carried only to the replicas holding a listener for its principal or
 * session (`RedisEventBus`). On node-redis (`redis`, an optional peer dependency: install it to use
 * this entry), so for Node, Deno and Bun, not Workers.
 */
export {
  DEFAULT_REDIS_CHANNEL_PREFIX,
  RedisEventBus,
  type RedisEventBusOptions,
  type RedisSubscription,
} from './buses/redis.ts'
