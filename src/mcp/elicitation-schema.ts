/**
 * @module mcp/elicitation-schema
 * Turns a zod object schema into the restricted `requestedSchema` of a form-mode `elicitation/create`
 * (revisions 2025-11-25 and 2026-07-28: a flat object of string, number/integer, boolean, single-select
 * and multi-select fields, each with an optional default), and validates a client's `accept` answer
 * against the same zod schema.
 *
 * Owns: the zod → elicitation mapping (`toElicitationSchema`), titled enums (`titledEnum`, and
 * `legacyTitledEnum` for the deprecated `enumNames` shape), and answer validation
 * (`parseElicitationContent`). Leaves to others: when to ask, capability gating, journaling and
 * digests of asks (the engine), and the wire envelope (`message`, `mode`).
 *
 * Contract:
 * - Conversion runs at definition time. It walks zod's own definitions (`schema._zod.def`) rather than
 *   post-processing `z.toJSONSchema`, so every check is accounted for: a constraint the elicitation
 *   schema cannot express (regex, `.multipleOf`, refinements, transforms, exclusive bounds on a
 *   non-integer, …) is a programming error and throws a `TypeError` naming the property. The emitted
 *   schema therefore never promises a form that the server would then reject, with two documented
 *   exceptions: zod's `z.iso.datetime()` accepts only `Z` offsets by default (use
 *   `z.iso.datetime({ offset: true })` to accept every RFC 3339 date-time), and integers are also
 *   limited to the JavaScript safe range, which is not written into the schema.
 * - Supported fields (each may be wrapped in `.optional()` and/or `.default(v)`, and carry
 *   `.meta({ title, description })` / `.describe()`; the outermost title/description wins):
 *   `z.string()` with `.min/.max/.length` and at most one of `.email()`/`z.email()`, `.url()`/`z.url()`
 *   (→ `uri`), `z.iso.date()`, `z.iso.datetime()`; `z.number()` with `.min/.max` (`.gt/.lt` only on
 *   integers, where they become the next integer), `.int()`/`z.int()` (→ `integer`), `z.int32()`,
 *   `z.uint32()`; `z.boolean()`; single selects of strings: `z.enum([...])` (→ `enum`),
 *   `titledEnum({...})` (→ `oneOf` of `{ const, title }`) and `legacyTitledEnum({...})` (→ `enum` plus
 *   `enumNames`, the only titled shape 2025-06-18 clients read); multi selects:
 *   `z.array(z.enum([...]))` (→ `items.enum`) and `z.array(titledEnum({...}))` (→ `items.anyOf`), with
 *   `.min/.max/.length` (→ minItems/maxItems). `enumNames` exist only for single selects, so
 *   `z.array(legacyTitledEnum(...))` throws.
 * - A default must itself satisfy its field, and is emitted as `default` (SEP-1034: strings, numbers,
 *   integers, booleans, single selects; multi selects take an array); a field with a default or
 *   `.optional()` is not `required`.
 * - Titles of a `titledEnum`/`legacyTitledEnum` live in a private registry keyed by the zod instance;
 *   `.meta()`, `.describe()`, `.optional()` and `.default()` keep them, `.extract()`/`.exclude()` do
 *   not (call the helper again). Options appear in the key order of the object passed, which
 *   JavaScript puts integer-like keys ("1", "2") first.
 * - `parseElicitationContent` reads only the schema's own keys from the answer (unknown keys are
 *   dropped), treats a JSON `null` as an absent value (clients send it for fields left empty), applies
 *   defaults, and reports failures as one short line without echoing the submitted values. Dates stay
 *   strings; a multi select's answer is an array of its option values. Zod's own messages are used,
 *   so a custom `error` on a field shows up here.
 *
 * Runtime-neutral: zod and the engine's JSON object guard (`wire.ts`) only, no `node:*` imports (runs
 * on Cloudflare Workers).
 */

import * as z from 'zod'
import { isObject } from './wire.ts'

/** The string formats an elicitation form may request. */
export type StringFormat = 'email' | 'uri' | 'date' | 'date-time'

/** A text field of a form. */
export type StringSchema = {
  type: 'string'
  title?: string
  description?: string
  minLength?: number
  maxLength?: number
  format?: StringFormat
  default?: string
}

/** A number field of a form (`integer` for whole numbers). */
export type NumberSchema = {
  type: 'number' | 'integer'
  title?: string
  description?: string
  minimum?: number
  maximum?: number
  default?: number
}

/** A yes/no field of a form. */
export type BooleanSchema = {
  type: 'boolean'
  title?: string
  description?: string
  default?: boolean
}

/** A single choice among values shown as they are. */
export type UntitledSingleSelectEnumSchema = {
  type: 'string'
  title?: string
  description?: string
  enum: string[]
  default?: string
}

/** One option of a titled select: the value sent back and the label shown. */
export type TitledOption = { const: string; title: string }

/** A single choice among values each shown by its label. */
export type TitledSingleSelectEnumSchema = {
  type: 'string'
  title?: string
  description?: string
  oneOf: TitledOption[]
  default?: string
}

/** The deprecated titled single select (SEP-1330): option labels in `enumNames`, index for index. */
export type LegacyTitledEnumSchema = {
  type: 'string'
  title?: string
  description?: string
  enum: string[]
  enumNames: string[]
  default?: string
}

/** Several choices among values shown as they are. */
export type UntitledMultiSelectEnumSchema = {
  type: 'array'
  title?: string
  description?: string
  minItems?: number
  maxItems?: number
  items: { type: 'string'; enum: string[] }
  default?: string[]
}

/** Several choices among values each shown by its label. */
export type TitledMultiSelectEnumSchema = {
  type: 'array'
  title?: string
  description?: string
  minItems?: number
  maxItems?: number
  items: { anyOf: TitledOption[] }
  default?: string[]
}

/** Every field shape a form-mode `requestedSchema` may contain. */
export type PrimitiveSchema =
  | StringSchema
  | NumberSchema
  | BooleanSchema
  | UntitledSingleSelectEnumSchema
  | TitledSingleSelectEnumSchema
  | LegacyTitledEnumSchema
  | UntitledMultiSelectEnumSchema
  | TitledMultiSelectEnumSchema

/** The `requestedSchema` of a form-mode `elicitation/create`. */
export type ElicitationSchema = {
  type: 'object'
  properties: Record<string, PrimitiveSchema>
  required?: string[]
}

/** Outcome of validating an `accept` answer's `content`. */
export type ElicitationParseResult =
  { ok: true; value: Record<string, unknown> } | { ok: false; issues: string }

/** At most this many problems are spelled out in `issues`; the rest are counted. */
const MAX_REPORTED_ISSUES = 5

/** Bounds zod enforces for number formats beyond the JSON number domain. */
const NUMBER_FORMAT_BOUNDS: Readonly<Record<string, readonly [number, number]>> = {
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
  float32: [-3.4028234663852886e38, 3.4028234663852886e38],
}
const INTEGER_FORMATS: ReadonlySet<string> = new Set(['safeint', 'int32', 'uint32'])
const PLAIN_NUMBER_FORMATS: ReadonlySet<string> = new Set(['float32', 'float64'])

type ZodSchema = z.core.$ZodType
/** A `z.object(...)` of any shape and strictness. */
type AnyZodObject = z.ZodObject<z.core.$ZodLooseShape, z.core.$ZodObjectConfig>

/** The parts of a zod schema definition this module reads (zod's own types are per schema kind). */
type LooseDef = {
  type: string
  checks?: readonly z.core.$ZodCheck<never>[]
  innerType?: ZodSchema
  element?: ZodSchema
  entries?: Readonly<Record<string, unknown>>
  shape?: Readonly<Record<string, ZodSchema>>
  defaultValue?: unknown
  coerce?: boolean
  /** Present when the schema is itself a check, as `z.email()` or `z.int()` are. */
  check?: string
  format?: string
}

/** The parts of a check definition this module reads. */
type LooseCheckDef = {
  check: string
  format?: string
  minimum?: number
  maximum?: number
  length?: number
  value?: number
  inclusive?: boolean
  offset?: boolean
  local?: boolean
  precision?: number | null
  protocol?: RegExp
  hostname?: RegExp
  normalize?: boolean
}

type Bound = { value: number; inclusive: boolean }

type Labels = { title?: string; description?: string }

/** How a titled enum's labels go on the wire: `{ const, title }` options, or parallel `enumNames`. */
type TitleStyle = 'options' | 'enumNames'

const titledEnumRegistry = z.registry<{
  titles: Readonly<Record<string, string>>
  style: TitleStyle
}>()

function defOf(schema: ZodSchema): LooseDef {
  return schema._zod.def
}

function checksOf(def: LooseDef): LooseCheckDef[] {
  return (def.checks ?? []).map((check) => check._zod.def as unknown as LooseCheckDef)
}

function fail(name: string, why: string): never {
  throw new TypeError(`property '${name}' ${why}`)
}

/**
 * A zod enum of the keys of `titles` whose elicitation form shows each value with its title
 * (`oneOf`/`anyOf` of `{ const, title }`). Use it alone for a titled single select, or inside
 * `z.array(...)` for a titled multi select.
 *
 * @example
 * ```ts
 * import * as z from 'zod'
 * import { titledEnum } from 'stateless-mcp'
 *
 * // in a handler:
 * const answer = await ctx.elicit('priority', {
 *   message: 'How urgent is it?',
 *   schema: z.object({ priority: titledEnum({ low: 'Some day', high: 'Today' }) }),
 * })
 * if (answer.action === 'accept') console.log(answer.content.priority) // 'low' or 'high'
 * ```
 */
export function titledEnum<const T extends Readonly<Record<string, string>>>(
  titles: T
): z.ZodEnum<{ [K in keyof T & string]: K }> {
  return registerTitledEnum('titledEnum', titles, 'options')
}

/**
 * A titled single select in the deprecated SEP-1330 shape: `enum` with the titles in `enumNames`.
 * Prefer `titledEnum`; this one exists for clients that read only `enumNames` (revision 2025-06-18).
 * Single selects only: `z.array(legacyTitledEnum(...))` throws at conversion.
 *
 * @example
 * ```ts
 * import * as z from 'zod'
 * import { legacyTitledEnum } from 'stateless-mcp'
 *
 * const Size = z.object({ size: legacyTitledEnum({ s: 'Small', m: 'Medium', l: 'Large' }) })
 * // in a handler:
 * const answer = await ctx.elicit('size', { message: 'Which size?', schema: Size })
 * ```
 */
export function legacyTitledEnum<const T extends Readonly<Record<string, string>>>(
  titles: T
): z.ZodEnum<{ [K in keyof T & string]: K }> {
  return registerTitledEnum('legacyTitledEnum', titles, 'enumNames')
}

function registerTitledEnum<const T extends Readonly<Record<string, string>>>(
  helper: string,
  titles: T,
  style: TitleStyle
): z.ZodEnum<{ [K in keyof T & string]: K }> {
  if (typeof titles !== 'object' || titles === null || Array.isArray(titles)) {
    throw new TypeError(`${helper}: expected an object mapping each value to its title`)
  }
  const values = Object.keys(titles)
  if (values.length === 0) throw new TypeError(`${helper}: at least one value is required`)
  const copy: Record<string, string> = {}
  for (const value of values) {
    const title = titles[value]
    if (typeof title !== 'string' || title === '') {
      throw new TypeError(`${helper}: the title of '${value}' must be a non-empty string`)
    }
    copy[value] = title
  }
  const schema = z.enum(values as [string, ...string[]])
  titledEnumRegistry.add(schema, { titles: Object.freeze(copy), style })
  return schema as unknown as z.ZodEnum<{ [K in keyof T & string]: K }>
}

/**
 * The elicitation `requestedSchema` for a flat zod object. Throws `TypeError` naming the property for
 * any field the restricted schema cannot express exactly.
 */
export function toElicitationSchema(schema: AnyZodObject): ElicitationSchema {
  const def = defOf(schema)
  if (def.type !== 'object' || def.shape === undefined) {
    throw new TypeError(`toElicitationSchema: expected a z.object(...), got a ${def.type} schema`)
  }
  if (checksOf(def).length > 0) {
    throw new TypeError(
      'toElicitationSchema: object-level refinements cannot be expressed in an elicitation form'
    )
  }
  const properties: Record<string, PrimitiveSchema> = {}
  const required: string[] = []
  for (const [name, field] of Object.entries(def.shape)) {
    const converted = convertField(name, field)
    properties[name] = converted.schema
    if (converted.required) required.push(name)
  }
  return required.length > 0
    ? { type: 'object', properties, required }
    : { type: 'object', properties }
}

/**
 * Validates the `content` of an `accept` answer against `schema`. Unknown keys are dropped, `null`
 * counts as absent, defaults are applied. Throws `TypeError` (a programming error) if `schema` is not
 * a valid elicitation schema.
 */
export function parseElicitationContent(
  schema: AnyZodObject,
  content: unknown
): ElicitationParseResult {
  assertConvertible(schema)
  if (content !== undefined && !isObject(content)) {
    return { ok: false, issues: 'content must be an object of field values' }
  }
  const shape = defOf(schema).shape ?? {}
  // Own keys of the schema only; fromEntries defines data properties, so no key reaches a prototype.
  const supplied = new Set<string>()
  const entries: [string, unknown][] = []
  for (const name of Object.keys(shape)) {
    if (content === undefined || !Object.hasOwn(content, name)) continue
    const value = content[name]
    if (value === null || value === undefined) continue
    entries.push([name, value])
    supplied.add(name)
  }
  const picked = Object.fromEntries(entries)
  const result = schema.safeParse(picked)
  if (result.success) return { ok: true, value: result.data }
  return { ok: false, issues: summarize(result.error.issues, supplied) }
}

const convertible = new WeakSet<object>()

function assertConvertible(schema: AnyZodObject): void {
  if (convertible.has(schema)) return
  toElicitationSchema(schema)
  convertible.add(schema)
}

function summarize(issues: readonly z.core.$ZodIssue[], supplied: ReadonlySet<string>): string {
  const lines = issues.slice(0, MAX_REPORTED_ISSUES).map((issue) => {
    const [field] = issue.path
    if (issue.path.length === 1 && typeof field === 'string' && !supplied.has(field)) {
      return `${field}: required`
    }
    return `${formatPath(issue.path)}: ${issue.message}`
  })
  const rest = issues.length - MAX_REPORTED_ISSUES
  if (rest > 0) lines.push(`and ${rest} more`)
  return lines.join('; ')
}

function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return 'content'
  return path
    .map((part, i) =>
      typeof part === 'number' ? `[${part}]` : `${i > 0 ? '.' : ''}${String(part)}`
    )
    .join('')
}

/* ---------------------------------------------------------------------------------------------- */
/* Field conversion                                                                                 */
/* ---------------------------------------------------------------------------------------------- */

function convertField(
  name: string,
  field: ZodSchema
): { schema: PrimitiveSchema; required: boolean } {
  const labels: Labels = {}
  let optional = false
  let defaulted: { value: unknown; inner: ZodSchema } | undefined
  let current = field
  for (;;) {
    collectLabels(current, labels)
    const def = defOf(current)
    if (def.type !== 'optional' && def.type !== 'default') break
    if (checksOf(def).length > 0) {
      fail(name, 'has a refinement, which elicitation forms cannot express')
    }
    const inner = def.innerType
    if (inner === undefined) fail(name, `has a malformed ${def.type} wrapper`)
    if (def.type === 'optional') optional = true
    // The outermost default is the one zod applies.
    else if (defaulted === undefined) defaulted = { value: def.defaultValue, inner }
    current = inner
  }

  // Key order of the emitted field: type, labels, constraints, default (stable for digests).
  const { type, ...constraints } = convertBase(name, current)
  const schema: Record<string, unknown> = { type, ...labels, ...constraints }
  if (defaulted !== undefined && defaulted.value !== undefined) {
    const check = z.safeParse(defaulted.inner, defaulted.value)
    if (!check.success) {
      fail(name, `has a default that does not satisfy the field: ${check.error.issues[0]?.message}`)
    }
    schema.default = Array.isArray(defaulted.value)
      ? [...(defaulted.value as unknown[])]
      : defaulted.value
  }
  return { schema: schema as PrimitiveSchema, required: !optional && defaulted === undefined }
}

/** Outer labels win: only fills a title/description not already set by an enclosing wrapper. */
function collectLabels(schema: ZodSchema, labels: Labels): void {
  const meta = z.globalRegistry.get(schema)
  if (meta === undefined) return
  if (labels.title === undefined && typeof meta.title === 'string') labels.title = meta.title
  if (labels.description === undefined && typeof meta.description === 'string') {
    labels.description = meta.description
  }
}

const TRANSFORMED =
  'has a transform or pipe; elicitation answers are validated as sent, without transforms'

/** Why a field of one of these zod types is refused, and what to use instead. */
const REFUSED_TYPES: ReadonlyMap<string, string> = new Map([
  ['object', 'is an object; elicitation forms allow only flat primitive fields'],
  ['nullable', 'is nullable; elicitation answers never carry null, use .optional() instead'],
  ['pipe', TRANSFORMED],
  ['transform', TRANSFORMED],
  ['literal', 'is a literal; use z.enum([...]) for a fixed choice'],
  ['union', 'is a union; elicitation fields have exactly one type'],
  ['date', 'is a Date; use z.iso.date() or z.iso.datetime(), the wire carries strings'],
  ['bigint', 'is a bigint; use z.number().int()'],
  ['prefault', 'uses .prefault(); use .default()'],
  ['catch', 'uses .catch(), which would silently replace an invalid answer'],
])

function convertBase(name: string, schema: ZodSchema): PrimitiveSchema {
  const def = defOf(schema)
  switch (def.type) {
    case 'string':
      return convertString(name, def)
    case 'number':
      return convertNumber(name, def)
    case 'boolean':
      noCoercion(name, def)
      noChecks(name, def)
      return { type: 'boolean' }
    case 'enum': {
      noChecks(name, def)
      const options = enumOptions(name, schema)
      if (options.titles === undefined) return { type: 'string', enum: options.values }
      return options.style === 'enumNames'
        ? {
            type: 'string',
            enum: options.values,
            enumNames: options.titles.map((option) => option.title),
          }
        : { type: 'string', oneOf: options.titles }
    }
    case 'array':
      return convertArray(name, def)
    default:
      return fail(
        name,
        REFUSED_TYPES.get(def.type) ??
          `is a ${def.type} schema; elicitation forms allow only string, number, integer, boolean, enum and enum-array fields`
      )
  }
}

function noCoercion(name: string, def: LooseDef): void {
  if (def.coerce === true) {
    fail(name, 'uses z.coerce; elicitation answers are typed JSON and must be validated as sent')
  }
}

function noChecks(name: string, def: LooseDef): void {
  for (const check of checksOf(def)) unsupportedCheck(name, check)
}

function unsupportedCheck(name: string, check: LooseCheckDef): never {
  switch (check.check) {
    case 'custom':
      return fail(name, 'has a refinement, which elicitation forms cannot express')
    case 'overwrite':
      return fail(
        name,
        'has a transform (.trim(), .toLowerCase(), …); elicitation answers are validated as sent'
      )
    case 'multiple_of':
      return fail(name, 'uses .multipleOf(), which elicitation number fields cannot express')
    default:
      return fail(name, `has a '${check.check}' check, which elicitation forms cannot express`)
  }
}

function convertString(name: string, def: LooseDef): StringSchema {
  noCoercion(name, def)
  const formats: LooseCheckDef[] = []
  if (def.check === 'string_format') formats.push(def as LooseCheckDef)
  const lengths = { min: undefined as number | undefined, max: undefined as number | undefined }
  for (const check of checksOf(def)) {
    if (check.check === 'string_format') formats.push(check)
    else if (!applyLengthCheck(check, lengths)) unsupportedCheck(name, check)
  }
  if (formats.length > 1) {
    fail(name, `combines ${formats.length} string formats; an elicitation field has at most one`)
  }
  const result: StringSchema = { type: 'string' }
  assertRange(name, lengths.min, lengths.max, 'length')
  if (lengths.min !== undefined) result.minLength = lengths.min
  if (lengths.max !== undefined) result.maxLength = lengths.max
  const [format] = formats
  if (format !== undefined) result.format = stringFormat(name, format)
  return result
}

/** Folds a min/max/exact length check into `lengths`; false when `check` is something else. */
function applyLengthCheck(
  check: LooseCheckDef,
  lengths: { min: number | undefined; max: number | undefined }
): boolean {
  const tighterMin = (v: number | undefined) =>
    v === undefined ? lengths.min : Math.max(v, lengths.min ?? 0)
  const tighterMax = (v: number | undefined) =>
    v === undefined ? lengths.max : Math.min(v, lengths.max ?? Infinity)
  switch (check.check) {
    case 'min_length':
      lengths.min = tighterMin(check.minimum)
      return true
    case 'max_length':
      lengths.max = tighterMax(check.maximum)
      return true
    case 'length_equals':
      lengths.min = tighterMin(check.length)
      lengths.max = tighterMax(check.length)
      return true
    default:
      return false
  }
}

function stringFormat(name: string, check: LooseCheckDef): StringFormat {
  switch (check.format) {
    case 'email':
      return 'email'
    case 'url':
      if (check.protocol !== undefined || check.hostname !== undefined) {
        fail(name, 'restricts the URL protocol or hostname, which elicitation forms cannot express')
      }
      if (check.normalize === true) {
        fail(name, 'normalizes its URL, a transform; elicitation answers are validated as sent')
      }
      return 'uri'
    case 'date':
      return 'date'
    case 'datetime':
      if (check.local === true) {
        fail(name, 'accepts local date-times without an offset, which are not RFC 3339 date-times')
      }
      if (check.precision !== undefined && check.precision !== null) {
        fail(name, 'fixes the date-time precision, which elicitation forms cannot express')
      }
      return 'date-time'
    case 'regex':
      return fail(name, 'uses a regex pattern, which elicitation string fields cannot express')
    default:
      return fail(
        name,
        `uses the string format '${check.format}'; elicitation forms allow only email, url, iso date and iso datetime`
      )
  }
}

function convertNumber(name: string, def: LooseDef): NumberSchema {
  noCoercion(name, def)
  let lower: Bound | undefined
  let upper: Bound | undefined
  const formats: string[] = []
  if (def.check === 'number_format' && def.format !== undefined) formats.push(def.format)
  for (const check of checksOf(def)) {
    const value = check.value
    if (check.check === 'greater_than' && value !== undefined) {
      lower = tighter(lower, { value, inclusive: check.inclusive === true }, 1)
    } else if (check.check === 'less_than' && value !== undefined) {
      upper = tighter(upper, { value, inclusive: check.inclusive === true }, -1)
    } else if (check.check === 'number_format' && check.format !== undefined) {
      formats.push(check.format)
    } else {
      unsupportedCheck(name, check)
    }
  }
  let integer = false
  for (const format of formats) {
    if (INTEGER_FORMATS.has(format)) integer = true
    else if (!PLAIN_NUMBER_FORMATS.has(format)) {
      fail(name, `uses the number format '${format}', which elicitation forms cannot express`)
    }
    const bounds = NUMBER_FORMAT_BOUNDS[format]
    if (bounds !== undefined) {
      lower = tighter(lower, { value: bounds[0], inclusive: true }, 1)
      upper = tighter(upper, { value: bounds[1], inclusive: true }, -1)
    }
  }
  const minimum = inclusiveBound(name, lower, integer, 'lower')
  const maximum = inclusiveBound(name, upper, integer, 'upper')
  assertRange(name, minimum, maximum, 'value')
  const result: NumberSchema = { type: integer ? 'integer' : 'number' }
  if (minimum !== undefined) result.minimum = minimum
  if (maximum !== undefined) result.maximum = maximum
  return result
}

/** The stricter of two bounds; `direction` 1 for lower bounds, -1 for upper bounds. */
function tighter(current: Bound | undefined, next: Bound, direction: 1 | -1): Bound {
  if (current === undefined) return next
  const diff = (next.value - current.value) * direction
  if (diff > 0) return next
  if (diff === 0 && !next.inclusive) return next
  return current
}

function inclusiveBound(
  name: string,
  bound: Bound | undefined,
  integer: boolean,
  side: 'lower' | 'upper'
): number | undefined {
  if (bound === undefined || !Number.isFinite(bound.value)) return undefined
  const lowerSide = side === 'lower'
  if (integer) {
    if (bound.inclusive) return lowerSide ? Math.ceil(bound.value) : Math.floor(bound.value)
    return lowerSide ? Math.floor(bound.value) + 1 : Math.ceil(bound.value) - 1
  }
  if (!bound.inclusive) {
    fail(
      name,
      `has an exclusive ${side} bound (${lowerSide ? '.gt()/.positive()' : '.lt()/.negative()'}), which elicitation number fields cannot express; use ${lowerSide ? '.min()' : '.max()'}`
    )
  }
  return bound.value
}

function assertRange(
  name: string,
  min: number | undefined,
  max: number | undefined,
  what: string
): void {
  if (min !== undefined && max !== undefined && min > max) {
    fail(
      name,
      `has a minimum ${what} above its maximum (${min} > ${max}); no answer could satisfy it`
    )
  }
}

function convertArray(
  name: string,
  def: LooseDef
): UntitledMultiSelectEnumSchema | TitledMultiSelectEnumSchema {
  const element = def.element
  const elementType = element === undefined ? 'unknown' : defOf(element).type
  if (element === undefined || elementType !== 'enum') {
    fail(
      name,
      `is an array of ${elementType}; multi-select fields must be z.array(z.enum([...])) or z.array(titledEnum({...}))`
    )
  }
  noChecks(`${name}[]`, defOf(element))
  const lengths = { min: undefined as number | undefined, max: undefined as number | undefined }
  for (const check of checksOf(def)) {
    if (!applyLengthCheck(check, lengths)) unsupportedCheck(name, check)
  }
  assertRange(name, lengths.min, lengths.max, 'item count')
  const options = enumOptions(name, element)
  if (options.style === 'enumNames') {
    fail(
      name,
      'is an array of legacyTitledEnum; enumNames exist only for single selects, use z.array(titledEnum({...}))'
    )
  }
  const bounds: { minItems?: number; maxItems?: number } = {}
  if (lengths.min !== undefined) bounds.minItems = lengths.min
  if (lengths.max !== undefined) bounds.maxItems = lengths.max
  return options.titles === undefined
    ? { type: 'array', ...bounds, items: { type: 'string', enum: options.values } }
    : { type: 'array', ...bounds, items: { anyOf: options.titles } }
}

/** An enum's option values, with their titles (in the same order) when it is a titled enum. */
type EnumOptions =
  | { values: string[]; titles?: undefined; style?: undefined }
  | { values: string[]; titles: TitledOption[]; style: TitleStyle }

function enumOptions(name: string, schema: ZodSchema): EnumOptions {
  const values = [...new Set(Object.values(defOf(schema).entries ?? {}))]
  if (values.length === 0) fail(name, 'is an enum without values')
  const strings: string[] = []
  for (const value of values) {
    if (typeof value !== 'string')
      fail(name, 'has a non-string enum value; options must be strings')
    strings.push(value)
  }
  const titled = titledEnumRegistry.get(schema)
  if (titled === undefined) return { values: strings }
  return {
    values: strings,
    titles: strings.map((value) => ({ const: value, title: titled.titles[value] ?? value })),
    style: titled.style,
  }
}
