/**
 * @module tests/support/podman
 * Podman for the container tests: whether it is installed, the images (built through
 * `scripts/image-build.ts`, as `npm run -s image:build -- --fleet` builds them: cached, so a warm run
 * takes seconds), podman's commands with that script's configuration, and containers that a test
 * file starts and removes again, with their anonymous volumes. Tests reach containers only through
 * ports published on 127.0.0.1, never through the containers' own addresses.
 */
import { execFile } from 'node:child_process'
import {
  FLEET_IMAGES,
  IMAGE_NAME,
  buildFleetImages,
  buildImage,
  commandExists,
  podmanEnvironment,
} from '../../scripts/image-build.ts'

export { FLEET_IMAGES, IMAGE_NAME }

export const PODMAN_FOUND = commandExists('podman')

/** How long podman's own commands may take (a build is bounded by the caller's hook timeout). */
const COMMAND_MS = 120_000

let environment: Promise<NodeJS.ProcessEnv> | undefined

/**
 * Runs `command args…` (podman, podman-compose) with the build script's podman configuration and
 * `env`; answers stdout, throws with stderr.
 */
export async function withPodmanEnv(
  command: string,
  args: string[],
  env: Record<string, string> = {}
): Promise<string> {
  environment ??= podmanEnvironment()
  const base = await environment
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { env: { ...base, ...env }, timeout: COMMAND_MS },
      (error, stdout, stderr) => {
        if (error)
          reject(new Error(`${command} ${args.join(' ')} failed: ${stderr || error.message}`))
        else resolve(stdout.trim())
      }
    )
  })
}

/** `podman args…` as {@link withPodmanEnv} runs it. */
export function podman(...args: string[]): Promise<string> {
  return withPodmanEnv('podman', args)
}

/**
 * Builds the server's image and the fleet's PostgreSQL and nginx images (each cached by podman), the
 * server's alongside the fleet's: a cold build mostly waits for downloads.
 */
export async function buildAllImages(): Promise<void> {
  await Promise.all([buildFleetImages({ quiet: true }), buildImage({ quiet: true })])
}

export interface ContainerOptions {
  name: string
  image?: string
  network?: string
  env?: Record<string, string>
  /** A host port to publish the container's `containerPort` on, on 127.0.0.1 only. */
  publish?: { hostPort: number; containerPort: number }
}

/** Starts a detached container (replacing one of the same name); answers its name. */
export async function runContainer(options: ContainerOptions): Promise<string> {
  const args = ['run', '--detach', '--replace', '--name', options.name]
  if (options.network) args.push('--network', options.network)
  if (options.publish) {
    args.push('--publish', `127.0.0.1:${options.publish.hostPort}:${options.publish.containerPort}`)
  }
  for (const [key, value] of Object.entries(options.env ?? {}))
    args.push('--env', `${key}=${value}`)
  await podman(...args, options.image ?? IMAGE_NAME)
  return options.name
}

/** Removes containers by name, with their anonymous volumes (/data); missing ones are no error. */
export async function removeContainers(names: string[]): Promise<void> {
  if (names.length > 0) await podman('rm', '--force', '--volumes', '--ignore', ...names)
}

/** Pause between two polls of something a container should come to answer. */
const POLL_PAUSE_MS = 200

/**
 * Resolves once `url` answers 200 and `enough` says so (by default, the first 200), polled within
 * `ms`, or rejects naming `what` with the last answer or error seen: a container starting, or
 * restarted by its policy until it can start, or the replicas behind a balancer each answering.
 */
export async function untilAnswers(
  url: string,
  what: string,
  ms: number,
  enough: (response: Response) => boolean = () => true
): Promise<void> {
  const deadline = Date.now() + ms
  let last = 'no answer yet'
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) })
      await response.body?.cancel()
      if (response.status === 200 && enough(response)) return
      last = `HTTP ${response.status}`
    } catch (error) {
      last = String(error)
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_PAUSE_MS))
  }
  throw new Error(`${what} did not answer ${url} within ${ms} ms (${last})`)
}
