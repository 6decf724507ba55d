/**
 * @module mcp/stores/postgres/patch
 * How a compare-and-set patch (`common/columns.ts`: `patchValues`, `patchAssignments`) crosses into
 * PostgreSQL, for the task and stream updates: its placeholders ({@link pgPlaceholder}, `$n`, a flag
 * cast to boolean) and its parameters ({@link patchParams}, strings escaped by `text.ts`).
 */
import type { PatchValue } from '../common/columns.ts'
import { encValue } from './text.ts'

/** Parameter `position` of a patch's assignments: `$n`, a flag cast so that it binds as a boolean. */
export function pgPlaceholder(position: number, role: 'flag' | 'value'): string {
  return role === 'flag' ? `$${position}::boolean` : `$${position}`
}

/** The parameters a patch's assignments bind: each flag, and its value with strings escaped. */
export function patchParams(pairs: ReadonlyArray<[set: boolean, value: PatchValue]>): PatchValue[] {
  return pairs.flatMap(([set, value]) => [set, encValue(value)])
}
