/**
 * @module tests/support/redis
 * Real Redis servers for the tests: one `redis-server`, or a cluster of three masters with a
 * replica each, started and stopped by `scripts/support/redis.ts` (shared with the load test), and
 * re-exported here so tests never reach into `scripts/` for them. {@link redisTestsRun} is the rule
 * of `tests/support/ci.ts`: without `redis-server`, the tests fail under `CI=true` and are skipped
 * (visibly) elsewhere.
 */
import { redisInstalled } from '../../scripts/support/redis.ts'
import { serviceTestsRun } from './ci.ts'

export {
  startRedisCluster,
  startRedisServer,
  until,
  type RedisCluster,
  type RedisServer,
} from '../../scripts/support/redis.ts'

/** Whether the Redis tests run (`redis-server` and `redis-cli` installed, or CI, where they then fail). */
export function redisTestsRun(suite: string): boolean {
  return serviceTestsRun(
    suite,
    redisInstalled(),
    'redis-server or redis-cli is not installed (apt-get install redis-server)'
  )
}
