import * as Net from "node:net"

/**
 * Which resolved addresses a webhook may connect to (CONTRACT §2). Link-local, metadata,
 * multicast, reserved and tunnel addresses are always refused (no HTTP receiver lives there,
 * and some reach the host's own network); loopback and private ranges unless
 * SERVICE_WEBHOOK_ALLOW_PRIVATE is true.
 */
const alwaysBlocked = new Net.BlockList()
alwaysBlocked.addSubnet("169.254.0.0", 16, "ipv4")
alwaysBlocked.addSubnet("fe80::", 10, "ipv6")
alwaysBlocked.addAddress("fd00:ec2::254", "ipv6")
alwaysBlocked.addAddress("100.100.100.200", "ipv4")
// Azure's wire server: instance metadata and the VM agent's channel, on a public address.
alwaysBlocked.addAddress("168.63.129.16", "ipv4")
// Teredo tunnels to an IPv4 host named inside the address (XOR-obscured), past the IPv4 rules.
alwaysBlocked.addSubnet("2001::", 32, "ipv6")
// "This network" (0.0.0.0 connects to the local host on Linux), multicast, and the reserved
// block up to and including the limited broadcast address.
alwaysBlocked.addSubnet("0.0.0.0", 8, "ipv4")
alwaysBlocked.addSubnet("224.0.0.0", 4, "ipv4")
alwaysBlocked.addSubnet("240.0.0.0", 4, "ipv4")
alwaysBlocked.addAddress("::", "ipv6")
alwaysBlocked.addSubnet("ff00::", 8, "ipv6")

const privateRanges = new Net.BlockList()
privateRanges.addSubnet("127.0.0.0", 8, "ipv4")
privateRanges.addSubnet("10.0.0.0", 8, "ipv4")
privateRanges.addSubnet("172.16.0.0", 12, "ipv4")
privateRanges.addSubnet("192.168.0.0", 16, "ipv4")
privateRanges.addSubnet("100.64.0.0", 10, "ipv4")
privateRanges.addAddress("::1", "ipv6")
privateRanges.addSubnet("fc00::", 7, "ipv6")
privateRanges.addSubnet("fec0::", 10, "ipv6")
// Local-use NAT64 (RFC 8215) translates through a gateway on the operator's own network.
privateRanges.addSubnet("64:ff9b:1::", 48, "ipv6")

/** The 16 bytes of an IPv6 address (any spelling, zone id dropped), or undefined. */
export const ipv6Bytes = (address: string): Uint8Array | undefined => {
  const plain = address.replace(/%.*$/, "")
  if (!Net.isIPv6(plain)) return undefined
  let text = plain.toLowerCase()
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted !== null) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number]
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.includes("::") ? text.split("::") as [string, string] : [text, undefined]
  const headGroups = head === "" ? [] : head.split(":")
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":")
  const groups = tail === undefined
    ? headGroups
    : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill("0"), ...tailGroups]
  if (groups.length !== 8) return undefined
  const bytes = new Uint8Array(16)
  groups.forEach((g, i) => {
    const n = parseInt(g, 16)
    bytes[2 * i] = n >> 8
    bytes[2 * i + 1] = n & 255
  })
  return bytes
}

const zero = (bytes: Uint8Array, from: number, to: number) => bytes.subarray(from, to).every((b) => b === 0)
const startsWith = (bytes: Uint8Array, prefix: ReadonlyArray<number>) => prefix.every((b, i) => bytes[i] === b)
const ipv4At = (bytes: Uint8Array, at: number) => Array.from(bytes.subarray(at, at + 4)).join(".")

/**
 * The IPv4 address an IPv6 address carries and would reach, judged by the IPv4 rules:
 * IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, IPv4-translated
 * `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d` and local-use NAT64 `64:ff9b:1::/48`
 * (the address in the last 32 bits), and 6to4 `2002:aabb:ccdd::`. Otherwise undefined.
 */
export const embeddedIPv4 = (address: string): string | undefined => {
  const bytes = ipv6Bytes(address)
  if (bytes === undefined) return undefined
  if (zero(bytes, 0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return ipv4At(bytes, 12)
  if (zero(bytes, 0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zero(bytes, 10, 12)) return ipv4At(bytes, 12)
  // :: and ::1 are the IPv6 unspecified and loopback addresses, not IPv4-compatible ones.
  if (zero(bytes, 0, 12) && !(zero(bytes, 12, 15) && bytes[15]! <= 1)) return ipv4At(bytes, 12)
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b]) && zero(bytes, 4, 12)) return ipv4At(bytes, 12)
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01])) return ipv4At(bytes, 12)
  if (startsWith(bytes, [0x20, 0x02])) return ipv4At(bytes, 2)
  return undefined
}

/** Why an address is refused, in classes coarse enough to show a user who did not type it. */
export type Refusal = "special" | "private" | "not-ip"

export const REFUSAL_TEXT: Readonly<Record<Refusal, string>> = {
  special: "link-local, multicast, reserved, tunnel or a metadata address",
  private: "private (SERVICE_WEBHOOK_ALLOW_PRIVATE is not true)",
  "not-ip": "not an IP address"
}

const judge = (address: string, family: "ipv4" | "ipv6", allowPrivate: boolean): Refusal | undefined => {
  if (alwaysBlocked.check(address, family)) return "special"
  if (!allowPrivate && privateRanges.check(address, family)) return "private"
  return undefined
}

/** The class of refusal for an address, or undefined when it may be used. */
export const refusalOf = (address: string, allowPrivate: boolean): Refusal | undefined => {
  if (Net.isIPv4(address)) return judge(address, "ipv4", allowPrivate)
  const plain = address.replace(/%.*$/, "")
  if (!Net.isIPv6(plain)) return "not-ip"
  // The IPv6 form is judged too: a local-use NAT64 prefix is private whatever it carries.
  const v4 = embeddedIPv4(plain)
  return (v4 === undefined ? undefined : judge(v4, "ipv4", allowPrivate)) ?? judge(plain, "ipv6", allowPrivate)
}

/** The reason an address is refused, naming it (for the address a user typed), or undefined. */
export const refusedAddress = (address: string, allowPrivate: boolean): string | undefined => {
  const refusal = refusalOf(address, allowPrivate)
  if (refusal === undefined) return undefined
  return refusal === "not-ip" ? `not an IP address: ${address}` : `address ${address} is ${REFUSAL_TEXT[refusal]}`
}
