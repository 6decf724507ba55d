/**
 * The pure parts of the cold-start benchmark (`scripts/bench/cold-start.ts`): reading wrangler's
 * "Total Upload" line, the median/min/max summary of a series, and the Markdown it prints (figures,
 * failures visible).
 */
import { describe, expect, it } from 'vitest'
import {
  formatColdStarts,
  hasFailures,
  parseUploadSize,
  summarize,
  type ColdStartReport,
} from '../../scripts/bench/cold-start.ts'

describe('parseUploadSize', () => {
  it('reads raw and gzip KiB of the Total Upload line, in bytes', () => {
    const output = [
      'Total Upload: 1677.33 KiB / gzip: 324.16 KiB',
      'Your Worker has access to the following bindings:',
    ].join('\n')
    expect(parseUploadSize(output)).toEqual({
      rawBytes: Math.round(1677.33 * 1024),
      gzipBytes: Math.round(324.16 * 1024),
    })
  })

  it('reads the line when wrangler colours the figures', () => {
    const output = 'Total Upload: \u001b[32m62.66 KiB / gzip: 16.05 KiB\u001b[39m\n'
    expect(parseUploadSize(output)).toEqual({
      rawBytes: Math.round(62.66 * 1024),
      gzipBytes: Math.round(16.05 * 1024),
    })
  })

  it('answers null when there is no such line', () => {
    expect(parseUploadSize('--dry-run: exiting now.\n')).toBeNull()
  })
})

describe('summarize', () => {
  it('gives the median, min and max of an odd series, in any order', () => {
    expect(summarize([30, 10, 20])).toEqual({ median: 20, min: 10, max: 30 })
  })

  it('takes the lower middle of an even series', () => {
    expect(summarize([4, 1, 3, 2])).toEqual({ median: 2, min: 1, max: 4 })
  })

  it('is null for no values, and the value itself for one', () => {
    expect(summarize([])).toBeNull()
    expect(summarize([7])).toEqual({ median: 7, min: 7, max: 7 })
  })
})

function report(): ColdStartReport {
  return {
    meta: { date: '2026-12-02T00:00:00.000Z', runs: 3, pinned: 'taskset -c 1', node: 'v24.21.0' },
    node: [
      {
        server: 'npm start',
        command: 'node src/node.ts',
        request: '2026-07-28 tools/call create_note (SQLite)',
        runs: 3,
        readyMs: { median: 400, min: 390, max: 420 },
        firstAnswerMs: { median: 410, min: 400, max: 430 },
        rssMiB: { median: 120.5, min: 120, max: 121 },
      },
    ],
    bundles: [
      {
        worker: 'notes (src/worker.ts)',
        entry: 'src/worker.ts',
        rawBytes: 2048,
        gzipBytes: 512,
        measuredBy: 'wrangler',
      },
    ],
    workerd: [
      {
        worker: 'bench ours',
        request: '2026-07-28 tools/call echo',
        runs: 3,
        listeningMs: { median: 100, min: 90, max: 110 },
        firstAnswerMs: { median: 120, min: 110, max: 130 },
        rssMiB: { median: 70, min: 69, max: 71 },
      },
      {
        worker: 'bench bare',
        request: '2026-07-28 tools/call echo',
        runs: 0,
        listeningMs: null,
        firstAnswerMs: null,
        rssMiB: null,
        failure: 'wrong answer: HTTP 500 application/json: {}\nmore',
      },
    ],
    isolateOverBareMs: null,
  }
}

describe('formatColdStarts', () => {
  it('prints one row per server and bundle, median (min–max), failures named', () => {
    const text = formatColdStarts(report())
    expect(text).toContain('| npm start ')
    expect(text).toContain('| 400 (390–420) ')
    expect(text).toContain('| 410 (400–430) ')
    expect(text).toMatch(/\| notes \(src\/worker\.ts\) \| 2\.00 +\| 0\.50 +\| wrangler/)
    expect(text).toContain('| bench bare (FAILED) ')
    expect(text).toContain('FAILED bench bare: wrong answer: HTTP 500 application/json: {}')
    expect(text).not.toContain('more')
  })

  it('counts a failed server as a failure of the run', () => {
    expect(hasFailures(report())).toBe(true)
    expect(hasFailures({ ...report(), workerd: [] })).toBe(false)
  })
})
