/**
 * @module mcp/stores/common/columns
 * How the records changed by compare-and-set on their version (tasks, `common/tasks.ts`; streams,
 * `common/streams.ts`) meet their tables on every adapter, written once: every field's column
 * ({@link versionedColumns}) and a row as selected ({@link ColumnRow}), the fields an insert binds
 * ({@link insertedFields}) and their values ({@link fieldValues}), the values a patch binds
 * ({@link patchValues}) and the assignments of the `UPDATE` that applies it
 * ({@link patchAssignments}), and a record read back from its row ({@link columnReaders},
 * {@link withoutAbsent}). Runtime-neutral.
 */

/** A column's value as a driver returns it (integers, flags and text as each dialect stores them). */
export type ColumnValue = string | number | boolean | null

/** A row as selected: a value for each of `Columns`' columns. */
export type ColumnRow<Columns extends Record<string, string>> = Record<
  Columns[keyof Columns],
  ColumnValue
>

/**
 * Every field of a versioned record and its column: those an insert writes and an update never
 * changes (`fixed`), those an update may change (`patch`), and `version`, in that order.
 */
export function versionedColumns<
  const Fixed extends Record<string, string>,
  const Patch extends Record<string, string>,
>(fixed: Fixed, patch: Patch): Fixed & Patch & { readonly version: 'version' } {
  return { ...fixed, ...patch, version: 'version' }
}

/**
 * The fields an insert binds, in the order of `columns`: every one but `version` and those that
 * start at their column's default (`defaulted`).
 */
export function insertedFields<Field extends string, Defaulted extends Field>(
  columns: Record<Field, string>,
  defaulted: readonly Defaulted[]
): Array<Exclude<Field, 'version' | Defaulted>> {
  const excluded: readonly string[] = ['version', ...defaulted]
  return (Object.keys(columns) as Field[]).filter(
    (field): field is Exclude<Field, 'version' | Defaulted> => !excluded.includes(field)
  )
}

/** A value a patch binds (how a dialect stores a boolean is its adapter's business). */
export type PatchValue = string | number | boolean | null

/**
 * What an insert binds for each of `fields` of `given`, in order: an absent optional field is NULL.
 * Text and numbers only: a new record's flags start false, by the column's default.
 */
export function fieldValues<Field extends string>(
  fields: readonly Field[],
  given: { readonly [Name in Field]?: string | number }
): Array<string | number | null> {
  return fields.map((field) => given[field] ?? null)
}

/**
 * What an `UPDATE` binds for each field of `columns` (a patch's fields and their columns), in the
 * order of `columns`: whether the patch sets the column (a field left `undefined` keeps it), and the
 * value (`null` clears an optional field).
 */
export function patchValues<Patch extends object>(
  columns: { readonly [Field in keyof Patch]-?: string },
  patch: Patch
): Array<[set: boolean, value: PatchValue]> {
  return (Object.keys(columns) as Array<keyof Patch>).map((field) => {
    const value = patch[field] as PatchValue | undefined
    return [value !== undefined, value ?? null]
  })
}

/**
 * `column = CASE WHEN <flag> THEN <value> ELSE column END` for each of `columns`, the flag and the
 * value of the i-th bound at parameters `first + 2i` and `first + 2i + 1` (the pairs of
 * {@link patchValues}), written by the dialect's `placeholder` (which may cast a flag).
 */
export function patchAssignments(
  columns: readonly string[],
  first: number,
  placeholder: (position: number, role: 'flag' | 'value') => string
): string {
  return columns
    .map((column, i) => {
      const flag = placeholder(first + 2 * i, 'flag')
      const value = placeholder(first + 2 * i + 1, 'value')
      return `${column} = CASE WHEN ${flag} THEN ${value} ELSE ${column} END`
    })
    .join(',\n      ')
}

/**
 * `record` without the fields whose value is `undefined`: absent, not present as `undefined`, so a
 * record read back compares equal to the one the engine built.
 */
export function withoutAbsent<Record extends object>(record: Record): Record {
  return Object.fromEntries(
    Object.entries(record).filter(([, value]) => value !== undefined)
  ) as Record
}

/**
 * How a record's fields are read from its row's columns; `text` undoes the adapter's escaping of
 * stored strings, if any. A NULL column is an absent (`undefined`) field.
 */
export function columnReaders(text: (stored: string) => string = (stored) => stored) {
  return {
    text: (value: ColumnValue) => text(String(value)),
    optionalText: (value: ColumnValue) => (value === null ? undefined : text(String(value))),
    optionalNumber: (value: ColumnValue) => (value === null ? undefined : Number(value)),
    /** A boolean column: PostgreSQL answers a boolean, SQLite 0 or 1. */
    flag: (value: ColumnValue) => value === true || value === 1,
  }
}
