/**
 * @module scripts/loadtest/nginx-config
 * The nginx configuration the balanced mode runs with: one loopback listener, the replicas as an
 * upstream group, and everything of nginx's own state (pid, error log, temp paths) inside the run's
 * temporary directory, so it never touches the system nginx. Also finds the nginx binary.
 *
 * Proxying choices (each one matters for MCP over Streamable HTTP):
 * - `proxy_http_version 1.1` and an empty `Connection` header, with `keepalive` connections to the
 *   replicas kept for less time (`keepalive_timeout 4s`) than Node keeps an idle connection open (5
 *   s), so nginx never sends a request on a connection the replica is closing. Round robin stays
 *   per request: keepalive reuses connections, it does not pin a client to a replica.
 * - `proxy_buffering off`, so SSE responses (progress, log messages) pass event by event.
 * - `Host $http_host`: the replicas check the Host header against their loopback allow-list; the
 *   default (`$proxy_host`, the upstream group's name) would be refused with 403.
 * - Failover: `proxy_next_upstream error timeout` — nginx's default, spelled out — without
 *   `non_idempotent`. Every MCP request is a POST, which nginx then passes to the next replica only
 *   when the first one never received it (connection refused, connect timeout): always safe. Once a
 *   request was sent, a failure becomes a 502 and the client decides. `non_idempotent` would make
 *   nginx itself re-send such requests: harmless for the rounds of interactive flows (their final
 *   side effects are keyed by the sealed state's single-use nonce), but `create_note` has no such
 *   key and would create a note twice whenever a replica died after writing it and before
 *   answering. `http_502/503/504` are not listed either: the replicas never answer with them.
 * - `max_fails=1 fail_timeout=1s`: a killed replica is skipped for one second at a time, then tried
 *   again, so a restarted one is back in rotation within a second.
 *
 * Routing: `round-robin` is plain rotation over every replica. `avoid-previous` (the default of the
 * load test) adds one rule for the test's sake: the client names the replica that served the flow's
 * previous round (a 2025 client's answer: the replica holding the flow's stream) in
 * `X-Previous-Replica`, and nginx rotates over the other replicas for that request, with the named
 * one as `backup`, used only while all the others are down. With plain rotation and concurrent
 * users, a flow's next round lands on the same replica about one time in R (R replicas), which
 * leaves those rounds unproven; this rule makes every later round of a flow cross replicas while
 * another replica is up. The header is dropped before the request reaches a replica. Production
 * deployments need no such rule: any replica serves any round.
 */
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import type { Balancer } from './options.ts'

export interface NginxReplica {
  id: string
  port: number
}

export interface NginxConfigOptions {
  /** Loopback port nginx listens on. */
  port: number
  replicas: NginxReplica[]
  /** The run's temporary directory: pid file, error log, temp paths. */
  dir: string
  balancer: Balancer
}

/** Set by the load-test client in `avoid-previous` mode; nginx reads `$http_x_previous_replica`. */
export const PREVIOUS_REPLICA_HEADER = 'x-previous-replica'

const REPLICA_ID = /^[A-Za-z0-9_.-]{1,64}$/

/** An upstream group: `replicas` in rotation, `backup` only while every one of them is down. */
function upstream(name: string, replicas: NginxReplica[], backup: NginxReplica[] = []): string {
  const server = (replica: NginxReplica, role: string) =>
    `    server 127.0.0.1:${replica.port} max_fails=1 fail_timeout=1s${role};`
  return [
    `  upstream ${name} {`,
    ...replicas.map((replica) => server(replica, '')),
    ...backup.map((replica) => server(replica, ' backup')),
    '    keepalive 32;',
    '    keepalive_timeout 4s;',
    '  }',
  ].join('\n')
}

export function nginxConfig({ port, replicas, dir, balancer }: NginxConfigOptions): string {
  for (const replica of replicas) {
    if (!REPLICA_ID.test(replica.id)) throw new TypeError(`bad replica id ${replica.id}`)
  }
  const groups = [upstream('notes_all', replicas)]
  let target = 'http://notes_all'
  let routing: string[] = []
  if (balancer === 'avoid-previous') {
    const names = replicas.map(
      (replica) => `notes_not_${replica.id.replaceAll(/[^A-Za-z0-9_]/g, '_')}`
    )
    replicas.forEach((replica, index) => {
      groups.push(
        upstream(
          names[index] as string,
          replicas.filter((other) => other !== replica),
          [replica]
        )
      )
    })
    routing = [
      '  map $http_x_previous_replica $notes_pool {',
      '    default notes_all;',
      ...replicas.map((replica, index) => `    ${replica.id} ${names[index]};`),
      '  }',
    ]
    target = 'http://$notes_pool'
  }
  return `# Generated by scripts/loadtest for one run; loopback only.
daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;

events {
  worker_connections 4096;
}

http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  # Request bodies stay in memory (the replicas accept at most 1 MiB).
  client_max_body_size 1m;
  client_body_buffer_size 1m;

${groups.join('\n\n')}
${routing.length > 0 ? `\n${routing.join('\n')}\n` : ''}
  server {
    listen 127.0.0.1:${port};

    location / {
      proxy_pass ${target};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Previous-Replica "";
      proxy_buffering off;
      proxy_connect_timeout 1s;
      proxy_read_timeout 60s;
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries ${replicas.length};
      proxy_next_upstream_timeout 5s;
    }
  }
}
`
}

/** The nginx binary: on PATH, or Debian's /usr/sbin/nginx (not on a non-root PATH). */
export function findNginx(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/sbin', '/sbin']
  for (const dir of dirs) {
    const candidate = join(dir, 'nginx')
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}
