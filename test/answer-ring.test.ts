import { describe, expect, it } from "vitest"
import { makeAnswerRing, RingReader, RingWriter } from "../src/sql/AnswerRing.js"

const bytes = (...values: ReadonlyArray<number>) => Uint8Array.from(values)
const filled = (length: number, value: number) => new Uint8Array(length).fill(value)

describe("the answer ring between the embedded database's thread and the main thread", () => {
  it("an answer written in chunks is read back whole, in place", () => {
    const ring = makeAnswerRing(64)
    const writer = new RingWriter(ring)
    const reader = new RingReader(ring)
    writer.begin()
    expect(writer.write(bytes(1, 2, 3))).toBe(true)
    expect(writer.write(bytes(4, 5))).toBe(true)
    const slot = writer.finish()
    expect(slot).toEqual({ offset: 0, length: 5, end: 5 })
    expect([...reader.bytes(slot)]).toEqual([1, 2, 3, 4, 5])
    writer.begin()
    expect(writer.write(bytes(9))).toBe(true)
    expect(writer.finish()).toEqual({ offset: 5, length: 1, end: 6 })
  })

  it("never writes over an answer the main thread has not read; once released, its place is free", () => {
    const ring = makeAnswerRing(64)
    const writer = new RingWriter(ring)
    const reader = new RingReader(ring)
    writer.begin()
    expect(writer.write(filled(40, 7))).toBe(true)
    const first = writer.finish()
    // 24 bytes are left before the end, 24 free: a 30-byte answer fits in neither.
    writer.begin()
    expect(writer.write(filled(30, 8))).toBe(false)
    expect(writer.abandon()).toEqual(new Uint8Array(0))
    // Still unread: the first answer's bytes are as written.
    expect(reader.bytes(first).every((b) => b === 7)).toBe(true)
    // 20 fit before the end.
    writer.begin()
    expect(writer.write(filled(20, 9))).toBe(true)
    const second = writer.finish()
    expect(second).toEqual({ offset: 40, length: 20, end: 60 })
    // 4 bytes left at the end (under an eighth): the next answer starts over at the beginning,
    // which the unread first answer holds.
    writer.begin()
    expect(writer.write(filled(8, 1))).toBe(false)
    writer.abandon()
    reader.release(first)
    writer.begin()
    expect(writer.write(filled(8, 1))).toBe(true)
    expect(writer.finish()).toEqual({ offset: 0, length: 8, end: 72 })
    expect(reader.bytes(second).every((b) => b === 9)).toBe(true)
  })

  it("an answer is one run of bytes: a chunk that would wrap past the end is refused", () => {
    const ring = makeAnswerRing(64)
    const writer = new RingWriter(ring)
    const reader = new RingReader(ring)
    writer.begin()
    expect(writer.write(filled(48, 1))).toBe(true)
    reader.release(writer.finish())
    // 16 left at the end (an eighth is 8, so no starting over): the first chunk ends at the end.
    writer.begin()
    expect(writer.write(filled(16, 2))).toBe(true)
    // The next would have to go at the beginning, apart from the first.
    expect(writer.write(bytes(3))).toBe(false)
    // Given up, the answer hands back what it wrote, and its place is free again.
    const copy = writer.abandon()
    expect(copy.length).toBe(16)
    expect(copy.every((b) => b === 2)).toBe(true)
    writer.begin()
    expect(writer.write(filled(16, 4))).toBe(true)
    expect(writer.finish()).toEqual({ offset: 48, length: 16, end: 64 })
  })

  it("an answer longer than the ring is refused at once", () => {
    const writer = new RingWriter(makeAnswerRing(64))
    writer.begin()
    expect(writer.write(filled(65, 1))).toBe(false)
    expect(writer.abandon().length).toBe(0)
  })
})
