import { describe, expect, it } from 'vitest'
import * as z from 'zod'
import {
  legacyTitledEnum,
  parseElicitationContent,
  titledEnum,
  toElicitationSchema,
} from '../../src/mcp/elicitation-schema.ts'

/** The emitted schema of a one-field object, for compact shape assertions. */
function field(schema: z.ZodType) {
  return toElicitationSchema(z.object({ f: schema })).properties.f
}

describe('toElicitationSchema: supported shapes', () => {
  it('a plain string is a required string field', () => {
    expect(toElicitationSchema(z.object({ name: z.string() }))).toEqual({
      type: 'object',
      properties: { name: { type: 'string' } },
      required: ['name'],
    })
  })

  it('string .min/.max become minLength/maxLength and .length sets both', () => {
    expect(field(z.string().min(2).max(40))).toEqual({
      type: 'string',
      minLength: 2,
      maxLength: 40,
    })
    expect(field(z.string().length(5))).toEqual({ type: 'string', minLength: 5, maxLength: 5 })
    expect(field(z.string().min(1).min(3).max(9).max(7))).toEqual({
      type: 'string',
      minLength: 3,
      maxLength: 7,
    })
  })

  it('.email() and z.email() become format email', () => {
    expect(field(z.string().email())).toEqual({ type: 'string', format: 'email' })
    expect(field(z.email().max(100))).toEqual({ type: 'string', maxLength: 100, format: 'email' })
  })

  it('.url() and z.url() become format uri', () => {
    expect(field(z.string().url())).toEqual({ type: 'string', format: 'uri' })
    expect(field(z.url())).toEqual({ type: 'string', format: 'uri' })
  })

  it('z.iso.date() becomes format date and z.iso.datetime() format date-time', () => {
    expect(field(z.iso.date())).toEqual({ type: 'string', format: 'date' })
    expect(field(z.iso.datetime())).toEqual({ type: 'string', format: 'date-time' })
    expect(field(z.iso.datetime({ offset: true }))).toEqual({
      type: 'string',
      format: 'date-time',
    })
  })

  it('number .min/.max become minimum/maximum', () => {
    expect(field(z.number())).toEqual({ type: 'number' })
    expect(field(z.number().min(-1.5).max(2.5))).toEqual({
      type: 'number',
      minimum: -1.5,
      maximum: 2.5,
    })
    expect(field(z.number().nonnegative().lte(10).max(8))).toEqual({
      type: 'number',
      minimum: 0,
      maximum: 8,
    })
  })

  it('.int() and z.int() become integer without the implicit safe-integer bounds', () => {
    expect(field(z.number().int())).toEqual({ type: 'integer' })
    expect(field(z.int().min(1).max(10))).toEqual({ type: 'integer', minimum: 1, maximum: 10 })
  })

  it('exclusive bounds on an integer become the next integer inside the range', () => {
    expect(field(z.int().positive())).toEqual({ type: 'integer', minimum: 1 })
    expect(field(z.int().gt(2.5).lt(7))).toEqual({ type: 'integer', minimum: 3, maximum: 6 })
    expect(field(z.int().min(0.5).max(9.5))).toEqual({ type: 'integer', minimum: 1, maximum: 9 })
  })

  it('z.int32() and z.uint32() become integers bounded to their range', () => {
    expect(field(z.int32())).toEqual({
      type: 'integer',
      minimum: -2147483648,
      maximum: 2147483647,
    })
    expect(field(z.uint32().max(100))).toEqual({ type: 'integer', minimum: 0, maximum: 100 })
  })

  it('a boolean is a boolean field', () => {
    expect(field(z.boolean())).toEqual({ type: 'boolean' })
  })

  it('z.enum([...]) is an untitled single select', () => {
    expect(field(z.enum(['low', 'high']))).toEqual({ type: 'string', enum: ['low', 'high'] })
  })

  it('titledEnum({...}) is a titled single select in the key order given', () => {
    expect(field(titledEnum({ low: 'Low priority', high: 'High priority' }))).toEqual({
      type: 'string',
      oneOf: [
        { const: 'low', title: 'Low priority' },
        { const: 'high', title: 'High priority' },
      ],
    })
  })

  it('legacyTitledEnum({...}) is an enum with its titles in enumNames, index for index', () => {
    expect(field(legacyTitledEnum({ opt1: 'Option One', opt2: 'Option Two' }))).toEqual({
      type: 'string',
      enum: ['opt1', 'opt2'],
      enumNames: ['Option One', 'Option Two'],
    })
  })

  it('z.array(z.enum([...])) is an untitled multi select with minItems/maxItems', () => {
    expect(
      field(
        z
          .array(z.enum(['a', 'b', 'c']))
          .min(1)
          .max(2)
      )
    ).toEqual({
      type: 'array',
      minItems: 1,
      maxItems: 2,
      items: { type: 'string', enum: ['a', 'b', 'c'] },
    })
    expect(field(z.array(z.enum(['a'])))).toEqual({
      type: 'array',
      items: { type: 'string', enum: ['a'] },
    })
  })

  it('z.array(titledEnum({...})) is a titled multi select', () => {
    expect(field(z.array(titledEnum({ work: 'Work', home: 'Home' })).nonempty())).toEqual({
      type: 'array',
      minItems: 1,
      items: {
        anyOf: [
          { const: 'work', title: 'Work' },
          { const: 'home', title: 'Home' },
        ],
      },
    })
  })
})

describe('toElicitationSchema: required, optional, defaults, labels', () => {
  it('optional fields are left out of required, and required is omitted when empty', () => {
    expect(
      toElicitationSchema(z.object({ a: z.string(), b: z.number().optional(), c: z.boolean() }))
    ).toEqual({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'number' }, c: { type: 'boolean' } },
      required: ['a', 'c'],
    })
    expect(toElicitationSchema(z.object({ a: z.string().optional() }))).toEqual({
      type: 'object',
      properties: { a: { type: 'string' } },
    })
    expect(toElicitationSchema(z.object({}))).toEqual({ type: 'object', properties: {} })
  })

  it('a default is emitted and makes the field not required, for every field kind', () => {
    expect(
      toElicitationSchema(
        z.object({
          s: z.string().default('hi'),
          n: z.int().default(3),
          b: z.boolean().default(false),
          e: z.enum(['x', 'y']).default('y'),
          t: titledEnum({ x: 'Ex' }).default('x'),
          l: legacyTitledEnum({ x: 'Ex', y: 'Why' }).default('y'),
          f: z.number().default(95.5),
          m: z.array(z.enum(['x', 'y'])).default(['x']),
          k: z.array(titledEnum({ x: 'Ex', y: 'Why' })).default([]),
          req: z.string(),
        })
      )
    ).toEqual({
      type: 'object',
      properties: {
        s: { type: 'string', default: 'hi' },
        n: { type: 'integer', default: 3 },
        b: { type: 'boolean', default: false },
        e: { type: 'string', enum: ['x', 'y'], default: 'y' },
        t: { type: 'string', oneOf: [{ const: 'x', title: 'Ex' }], default: 'x' },
        l: { type: 'string', enum: ['x', 'y'], enumNames: ['Ex', 'Why'], default: 'y' },
        f: { type: 'number', default: 95.5 },
        m: { type: 'array', items: { type: 'string', enum: ['x', 'y'] }, default: ['x'] },
        k: {
          type: 'array',
          items: {
            anyOf: [
              { const: 'x', title: 'Ex' },
              { const: 'y', title: 'Why' },
            ],
          },
          default: [],
        },
        req: { type: 'string' },
      },
      required: ['req'],
    })
  })

  it('a default combined with optional in either order is emitted and not required', () => {
    expect(
      toElicitationSchema(
        z.object({ a: z.string().optional().default('x'), b: z.string().default('y').optional() })
      )
    ).toEqual({
      type: 'object',
      properties: { a: { type: 'string', default: 'x' }, b: { type: 'string', default: 'y' } },
    })
  })

  it('.meta({title, description}) and .describe() become title and description', () => {
    expect(
      toElicitationSchema(
        z.object({
          name: z.string().meta({ title: 'Name', description: 'Shown on the note' }).min(1),
          done: z.boolean().describe('Mark as done'),
          tags: z.array(z.enum(['a'])).meta({ title: 'Tags' }),
        })
      )
    ).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', title: 'Name', description: 'Shown on the note', minLength: 1 },
        done: { type: 'boolean', description: 'Mark as done' },
        tags: { type: 'array', title: 'Tags', items: { type: 'string', enum: ['a'] } },
      },
      required: ['name', 'done', 'tags'],
    })
  })

  it('labels on wrappers count, and the outermost title/description wins', () => {
    expect(
      field(
        z
          .number()
          .meta({ title: 'Inner', description: 'inner text' })
          .optional()
          .meta({ title: 'Outer' })
      )
    ).toEqual({ type: 'number', title: 'Outer', description: 'inner text' })
    expect(field(z.string().default('x').describe('About x'))).toEqual({
      type: 'string',
      description: 'About x',
      default: 'x',
    })
  })

  it('titledEnum titles survive .meta(), .describe(), .optional() and .default()', () => {
    const priority = titledEnum({ p1: 'Urgent', p2: 'Later' })
    expect(field(priority.meta({ title: 'Priority' }).describe('How soon').optional())).toEqual({
      type: 'string',
      title: 'Priority',
      description: 'How soon',
      oneOf: [
        { const: 'p1', title: 'Urgent' },
        { const: 'p2', title: 'Later' },
      ],
    })
  })

  it('legacyTitledEnum titles survive .meta(), .describe() and .optional()', () => {
    expect(
      field(legacyTitledEnum({ a: 'A' }).meta({ title: 'Pick' }).describe('One').optional())
    ).toEqual({ type: 'string', title: 'Pick', description: 'One', enum: ['a'], enumNames: ['A'] })
  })

  it('the emitted schema is plain JSON: no undefined members, same after a JSON round trip', () => {
    const schema = toElicitationSchema(
      z.object({
        a: z.string().optional(),
        b: z.int().default(1),
        c: z.array(titledEnum({ x: 'X' })).max(1),
      })
    )
    expect(JSON.parse(JSON.stringify(schema))).toStrictEqual(schema)
  })

  it('conversion is deterministic, including key order', () => {
    const make = () =>
      z.object({ a: z.email().meta({ title: 'A' }).default('a@example.com'), b: z.int().max(3) })
    expect(JSON.stringify(toElicitationSchema(make()))).toBe(
      JSON.stringify(toElicitationSchema(make()))
    )
  })
})

describe('toElicitationSchema: rejected shapes throw TypeError naming the property', () => {
  const rejected: Array<[string, z.ZodType, RegExp]> = [
    ['nested object', z.object({ street: z.string() }), /is an object; elicitation forms allow/],
    ['array of strings', z.array(z.string()), /is an array of string/],
    ['array of objects', z.array(z.object({ a: z.string() })), /is an array of object/],
    ['array of optional enum', z.array(z.enum(['a']).optional()), /is an array of optional/],
    ['union', z.union([z.string(), z.number()]), /is a union/],
    ['record', z.record(z.string(), z.string()), /is a record schema/],
    ['tuple', z.tuple([z.string()]), /is a tuple schema/],
    ['nullable', z.string().nullable(), /is nullable/],
    ['transform', z.string().transform((s) => s.length), /transform or pipe/],
    ['pipe', z.string().pipe(z.email()), /transform or pipe/],
    ['multipleOf', z.number().multipleOf(5), /multipleOf/],
    ['regex', z.string().regex(/^a/), /regex pattern/],
    ['literal', z.literal('yes'), /is a literal/],
    ['unsupported string format', z.uuid(), /string format 'uuid'/],
    ['startsWith', z.string().startsWith('a'), /string format 'starts_with'/],
    ['two string formats', z.string().email().url(), /combines 2 string formats/],
    ['string transform', z.string().trim(), /has a transform/],
    ['refinement', z.string().refine((s) => s !== 'x'), /refinement/],
    [
      'refinement on a wrapper',
      z
        .string()
        .optional()
        .refine(() => true),
      /refinement/,
    ],
    ['boolean refinement', z.boolean().refine((b) => b), /refinement/],
    ['enum refinement', z.enum(['a', 'b']).refine((v) => v === 'a'), /refinement/],
    ['Date', z.date(), /is a Date/],
    ['bigint', z.bigint(), /is a bigint/],
    ['coercion', z.coerce.number(), /z\.coerce/],
    ['exclusive number bound', z.number().positive(), /exclusive lower bound/],
    ['exclusive number upper bound', z.number().lt(1), /exclusive upper bound/],
    ['prefault', z.string().prefault('x'), /prefault/],
    ['catch', z.string().catch('x'), /\.catch\(\)/],
    ['URL protocol restriction', z.httpUrl(), /protocol or hostname/],
    ['local date-time', z.iso.datetime({ local: true }), /local date-times/],
    ['date-time precision', z.iso.datetime({ precision: 3 }), /precision/],
    ['time of day', z.iso.time(), /string format 'time'/],
    ['numeric enum', z.enum({ One: 1, Two: 2 }), /non-string enum value/],
    ['min above max', z.string().min(5).max(2), /minimum length above its maximum/],
    ['default outside the field', z.email().default('not-an-email'), /default that does not/],
    [
      'default outside the enum',
      z
        .array(z.enum(['a']))
        .min(1)
        .default([]),
      /default/,
    ],
    [
      'multi select of a legacy titled enum',
      z.array(legacyTitledEnum({ a: 'A' })),
      /array of legacyTitledEnum; enumNames exist only for single selects/,
    ],
    [
      'default outside a legacy titled enum',
      legacyTitledEnum({ a: 'A' }).default('b' as 'a'),
      /default that does not/,
    ],
    ['nonoptional', z.string().optional().nonoptional(), /nonoptional schema/],
    ['readonly', z.string().readonly(), /readonly schema/],
    ['any', z.any(), /is a any schema/],
  ]

  it.each(rejected)('%s is rejected with the property name and reason', (_label, schema, why) => {
    const convert = () => toElicitationSchema(z.object({ ok: z.string(), address: schema }))
    expect(convert).toThrow(TypeError)
    expect(convert).toThrow(/^property 'address' /)
    expect(convert).toThrow(why)
  })

  it('an object-level refinement is rejected', () => {
    const schema = z.object({ a: z.string(), b: z.string() }).refine((v) => v.a !== v.b)
    expect(() =>
      toElicitationSchema(schema as unknown as Parameters<typeof toElicitationSchema>[0])
    ).toThrow(TypeError)
  })

  it('a schema that is not an object is rejected', () => {
    expect(() =>
      toElicitationSchema(z.string() as unknown as Parameters<typeof toElicitationSchema>[0])
    ).toThrow(/expected a z\.object/)
  })
})

/** `schema` parses `key` as itself, refuses `title` (a title is not a value) and has `keys` as options. */
function expectKeysOnly(schema: z.ZodEnum, key: string, title: string, keys: string[]): void {
  expect(schema.parse(key)).toBe(key)
  expect(schema.safeParse(title).success).toBe(false)
  expect(schema.options).toEqual(keys)
}

describe('titledEnum', () => {
  it('accepts exactly its keys as values', () => {
    expectKeysOnly(titledEnum({ a: 'A', b: 'B' }), 'a', 'A', ['a', 'b'])
  })

  it('rejects an empty map and empty or non-string titles with TypeError', () => {
    expect(() => titledEnum({})).toThrow(TypeError)
    expect(() => titledEnum({ a: '' })).toThrow(/title of 'a'/)
    expect(() => titledEnum({ a: 1 } as unknown as Record<string, string>)).toThrow(TypeError)
  })

  it('leaves z.toJSONSchema output free of its private titles', () => {
    expect(z.toJSONSchema(titledEnum({ a: 'A' }))).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'string',
      enum: ['a'],
    })
  })
})

describe('legacyTitledEnum', () => {
  it('accepts exactly its keys as values', () => {
    expectKeysOnly(
      legacyTitledEnum({ opt1: 'Option One', opt2: 'Option Two' }),
      'opt2',
      'Option Two',
      ['opt1', 'opt2']
    )
  })

  it('rejects an empty map and empty or non-string titles with TypeError naming itself', () => {
    expect(() => legacyTitledEnum({})).toThrow(/^legacyTitledEnum: at least one value/)
    expect(() => legacyTitledEnum({ a: '' })).toThrow(/^legacyTitledEnum: the title of 'a'/)
    expect(() => legacyTitledEnum([] as unknown as Record<string, string>)).toThrow(TypeError)
  })
})

describe('parseElicitationContent', () => {
  const form = z.object({
    title: z.string().min(1).max(20),
    due: z.iso.date().optional(),
    priority: z.int().min(1).max(5).default(3),
    color: z.enum(['red', 'blue']),
    tags: z
      .array(titledEnum({ work: 'Work', home: 'Home' }))
      .max(2)
      .default([]),
    notify: z.boolean().default(true),
    email: z.email().optional(),
  })

  it('a valid answer is accepted and dates stay strings', () => {
    const answer = {
      title: 'Plan',
      due: '2026-07-28',
      priority: 5,
      color: 'blue',
      tags: ['work', 'home'],
      notify: false,
      email: 'a@example.com',
    }
    expect(parseElicitationContent(form, structuredClone(answer))).toEqual({
      ok: true,
      value: answer,
    })
  })

  it('unknown extra keys are dropped, not reported', () => {
    const content: unknown = JSON.parse(
      '{"title":"Plan","color":"red","admin":true,"__proto__":{"polluted":true}}'
    )
    const result = parseElicitationContent(form, content)
    expect(result).toEqual({
      ok: true,
      value: { title: 'Plan', color: 'red', priority: 3, tags: [], notify: true },
    })
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('missing defaulted fields are filled and missing optional fields stay absent', () => {
    const result = parseElicitationContent(form, { title: 'T', color: 'red' })
    expect(result).toEqual({
      ok: true,
      value: { title: 'T', color: 'red', priority: 3, tags: [], notify: true },
    })
    expect(result.ok && 'due' in result.value).toBe(false)
  })

  it('null counts as absent: defaults fill it, optional drops it, required reports it', () => {
    expect(
      parseElicitationContent(form, { title: 'T', color: 'red', priority: null, due: null })
    ).toEqual({
      ok: true,
      value: { title: 'T', color: 'red', priority: 3, tags: [], notify: true },
    })
    expect(parseElicitationContent(form, { title: null, color: 'red' })).toEqual({
      ok: false,
      issues: 'title: required',
    })
  })

  it('missing required fields are reported as required', () => {
    expect(parseElicitationContent(form, {})).toEqual({
      ok: false,
      issues: 'title: required; color: required',
    })
  })

  it('a wrong type is rejected', () => {
    const result = parseElicitationContent(form, { title: 42, color: 'red' })
    expect(result.ok).toBe(false)
    expect(!result.ok && result.issues).toMatch(/^title: .*expected string/)
  })

  it('a number out of range or not an integer is rejected', () => {
    const high = parseElicitationContent(form, { title: 'T', color: 'red', priority: 6 })
    expect(!high.ok && high.issues).toMatch(/^priority: .*<=5/)
    const fraction = parseElicitationContent(form, { title: 'T', color: 'red', priority: 2.5 })
    expect(!fraction.ok && fraction.issues).toMatch(/^priority: .*int/)
  })

  it('a string shorter than minLength or not in its format is rejected', () => {
    const result = parseElicitationContent(form, { title: '', color: 'red', email: 'nope' })
    expect(!result.ok && result.issues).toMatch(/^title: .*; email: Invalid email address$/)
  })

  it('an enum value outside the options is rejected', () => {
    const result = parseElicitationContent(form, { title: 'T', color: 'green' })
    expect(result.ok).toBe(false)
    expect(!result.ok && result.issues).toMatch(/^color: /)
  })

  it('a multi-select with an item outside the options is rejected, naming the item', () => {
    const result = parseElicitationContent(form, { title: 'T', color: 'red', tags: ['work', 'x'] })
    expect(result.ok).toBe(false)
    expect(!result.ok && result.issues).toMatch(/^tags\[1\]: /)
  })

  it('a multi-select with too many items or a non-array value is rejected', () => {
    const many = parseElicitationContent(form, {
      title: 'T',
      color: 'red',
      tags: ['work', 'home', 'work'],
    })
    expect(!many.ok && many.issues).toMatch(/^tags: /)
    const scalar = parseElicitationContent(form, { title: 'T', color: 'red', tags: 'work' })
    expect(!scalar.ok && scalar.issues).toMatch(/^tags: .*expected array/)
  })

  it('content that is not an object is rejected; absent content counts as empty', () => {
    for (const content of [null, 'yes', 3, ['title']]) {
      expect(parseElicitationContent(form, content)).toEqual({
        ok: false,
        issues: 'content must be an object of field values',
      })
    }
    expect(
      parseElicitationContent(z.object({ ok: z.boolean().default(false) }), undefined)
    ).toEqual({ ok: true, value: { ok: false } })
  })

  it('issues never echo submitted values and list at most five problems', () => {
    const wide = z.object(
      Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`f${i}`, z.email()]))
    )
    const secret = 'hunter2-secret'
    const result = parseElicitationContent(
      wide,
      Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`f${i}`, secret]))
    )
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.issues).not.toContain(secret)
    expect(result.issues.split('; ')).toHaveLength(6)
    expect(result.issues).toMatch(/; and 3 more$/)
  })

  it('every single- and multi-select shape takes its option values; multi selects take arrays', () => {
    const selects = z.object({
      untitledSingle: z.enum(['option1', 'option2']),
      titledSingle: titledEnum({ value1: 'First', value2: 'Second' }),
      legacyEnum: legacyTitledEnum({ opt1: 'One', opt2: 'Two' }),
      untitledMulti: z.array(z.enum(['option1', 'option2'])),
      titledMulti: z.array(titledEnum({ value1: 'First', value2: 'Second' })),
    })
    const answer = {
      untitledSingle: 'option1',
      titledSingle: 'value2',
      legacyEnum: 'opt1',
      untitledMulti: ['option1', 'option2'],
      titledMulti: ['value2'],
    }
    expect(parseElicitationContent(selects, answer)).toEqual({ ok: true, value: answer })
    const byTitle = parseElicitationContent(selects, { ...answer, legacyEnum: 'One' })
    expect(!byTitle.ok && byTitle.issues).toMatch(/^legacyEnum: /)
    const scalar = parseElicitationContent(selects, { ...answer, titledMulti: 'value1' })
    expect(!scalar.ok && scalar.issues).toMatch(/^titledMulti: .*expected array/)
  })

  it('a schema that cannot be an elicitation form throws TypeError instead of validating', () => {
    const bad = z.object({ nested: z.object({ a: z.string() }) })
    expect(() => parseElicitationContent(bad, { nested: { a: 'x' } })).toThrow(TypeError)
  })
})
