/**
 * Where the embedded database's thread leaves its answers for the main thread: one
 * `SharedArrayBuffer` both threads hold for good, written by the thread and read in place by
 * the main thread, instead of a new buffer per answer handed from one to the other.
 *
 * Why: a handed-over buffer still counts against the thread's heap until the thread's next
 * collection, and V8 scales its limits to that heap (~12 MB). Every ~150 answers of 50 tasks
 * (60 KB each) it started a full collection on the thread, every 120–150 ms under a read load,
 * with pauses of 1–9 ms that every request waiting on the one connection sat through
 * (docs/performance.md, "The embedded c=1 tail"). The shared buffer is allocated once.
 *
 * Positions count bytes written since the start and only grow; a byte's place in the buffer is
 * its position modulo the capacity. The thread writes an answer at `written`; the main thread,
 * which reads answers in the order they were sent, publishes in `consumed` the end of the last
 * one it has read, and the thread never writes over bytes between the two. An answer is one
 * contiguous run of bytes: one that would cross the buffer's end, or not fit in what is free,
 * is sent the old way (`RingWriter.write` says no, `abandon` hands back what was written).
 * Nothing waits on anything: a full ring only means a buffer of its own for that answer.
 */

export interface AnswerRing {
  /** The answers' bytes. */
  readonly bytes: SharedArrayBuffer
  /** One `BigInt64`: the position up to which the main thread has read. */
  readonly consumed: SharedArrayBuffer
}

/** Where one answer is: `offset` and `length` in the ring, `end` its position once read. */
export interface RingSlot {
  readonly offset: number
  readonly length: number
  readonly end: number
}

/** 4 MiB: 64 answers of 50 tasks, or 16 default pages, may wait to be read. */
export const ANSWER_RING_BYTES = 4 * 1024 * 1024

export const makeAnswerRing = (capacity: number = ANSWER_RING_BYTES): AnswerRing => ({
  bytes: new SharedArrayBuffer(capacity),
  consumed: new SharedArrayBuffer(8)
})

/** The database thread's side: one answer at a time (`begin`, `write`…, `finish` or `abandon`). */
export class RingWriter {
  private readonly view: Uint8Array
  private readonly consumed: BigInt64Array
  private readonly capacity: number
  /** Bytes ever written (padding skipped at the end included). */
  private written = 0
  /** Where the answer being written starts. */
  private start = 0

  constructor(ring: AnswerRing) {
    this.view = new Uint8Array(ring.bytes)
    this.consumed = new BigInt64Array(ring.consumed)
    this.capacity = ring.bytes.byteLength
  }

  /**
   * Starts an answer. Close to the buffer's end it starts over at its beginning (the bytes
   * skipped count as written, freed with the next answer read), so that most answers fit in
   * one run.
   */
  begin(): void {
    const left = this.capacity - (this.written % this.capacity)
    if (left < this.capacity / 8) this.written += left
    this.start = this.written
  }

  /** Appends `chunk` to the answer; false, with nothing written, when it does not fit. */
  write(chunk: Uint8Array): boolean {
    const offset = this.written % this.capacity
    const free = this.capacity - (this.written - Number(Atomics.load(this.consumed, 0)))
    // An answer must not wrap: its first chunk may sit at the very end, the next would not follow it.
    if (chunk.length > free || offset + chunk.length > this.capacity || (offset === 0 && this.written > this.start)) {
      return false
    }
    this.view.set(chunk, offset)
    this.written += chunk.length
    return true
  }

  /** The answer written, for the main thread to read. */
  finish(): RingSlot {
    return { offset: this.start % this.capacity, length: this.written - this.start, end: this.written }
  }

  /** Gives up the answer: a copy of what it wrote so far, whose place is free again. */
  abandon(): Uint8Array<ArrayBuffer> {
    const offset = this.start % this.capacity
    const copy = this.view.slice(offset, offset + (this.written - this.start))
    this.written = this.start
    return copy
  }
}

/** The main thread's side: an answer's bytes in place, then `release` once they are read. */
export class RingReader {
  private readonly ring: AnswerRing
  private readonly consumed: BigInt64Array

  constructor(ring: AnswerRing) {
    this.ring = ring
    this.consumed = new BigInt64Array(ring.consumed)
  }

  bytes(slot: RingSlot): Uint8Array {
    return new Uint8Array(this.ring.bytes, slot.offset, slot.length)
  }

  /** The answer at `slot` and every one before it are read: the thread may write over them. */
  release(slot: RingSlot): void {
    Atomics.store(this.consumed, 0, BigInt(slot.end))
  }
}
