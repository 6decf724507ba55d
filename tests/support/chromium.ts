/**
 * @module tests/support/chromium
 * Headless Chromium for the browser tests, driven by playwright-core: the browser is `CHROMIUM_PATH`
 * when set, else `chromium` or `chromium-browser` on `PATH` (`.ci/run` installs Debian's; never a
 * downloaded build). Without one, browser tests are skipped visibly; under `CI=true` they fail
 * instead (`launchChromium` throws in `beforeAll`). `useChromium` is both for one test file: whether
 * its browser tests run, and the browser it launches before them and closes after them.
 */
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll } from 'vitest'
import { serviceTestsRun } from './ci.ts'

/** `CHROMIUM_PATH` as given (a wrong one fails at launch), else the first Chromium on `PATH`. */
function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH
  const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean)
  for (const name of ['chromium', 'chromium-browser']) {
    for (const dir of dirs) {
      try {
        accessSync(join(dir, name), constants.X_OK)
        return join(dir, name)
      } catch {
        // not in this directory
      }
    }
  }
  return undefined
}

const CHROMIUM = findChromium()
const MISSING = 'no Chromium: set CHROMIUM_PATH or put chromium or chromium-browser on PATH'

/** Whether the browser tests of a file run: with a Chromium, or under CI (where they then fail). */
export function browserTestsRun(suite: string): boolean {
  return serviceTestsRun(suite, CHROMIUM !== undefined, MISSING)
}

/** Launches headless Chromium; under CI without one, throws (the tests fail instead of skipping). */
export async function launchChromium(): Promise<Browser> {
  if (!CHROMIUM) throw new Error(`${MISSING} (CI=true: this fails instead of skipping)`)
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}

/** A test file's Chromium: whether its browser tests run, and the browser they drive. */
export interface ChromiumForTests {
  /** {@link browserTestsRun} of the file's suite. */
  run: boolean
  /** The browser, launched in the file's first `beforeAll` when `run` (read it in a test or hook). */
  browser(): Browser
}

/**
 * For the calling test file, named `suite` in the skip message: launches headless Chromium before its
 * tests when they run (see {@link launchChromium}) and closes it after them.
 */
export function useChromium(suite: string): ChromiumForTests {
  const run = browserTestsRun(suite)
  let browser: Browser | undefined
  beforeAll(async () => {
    if (run) browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
  })
  return {
    run,
    browser: () => {
      if (!browser) throw new Error('useChromium: the browser exists only once the tests run')
      return browser
    },
  }
}
