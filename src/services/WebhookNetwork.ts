import * as Net from "node:net"

/**
 * Which resolved addresses a webhook may connect to (CONTRACT §2). Link-local and cloud
 * metadata addresses are always refused; loopback and private ranges only when
 * SERVICE_WEBHOOK_ALLOW_PRIVATE is false.
 */
const alwaysBlocked = new Net.BlockList()
alwaysBlocked.addSubnet("169.254.0.0", 16, "ipv4")
alwaysBlocked.addSubnet("fe80::", 10, "ipv6")
alwaysBlocked.addAddress("fd00:ec2::254", "ipv6")
alwaysBlocked.addAddress("100.100.100.200", "ipv4")
alwaysBlocked.addSubnet("0.0.0.0", 8, "ipv4")
alwaysBlocked.addAddress("::", "ipv6")

const privateRanges = new Net.BlockList()
privateRanges.addSubnet("127.0.0.0", 8, "ipv4")
privateRanges.addSubnet("10.0.0.0", 8, "ipv4")
privateRanges.addSubnet("172.16.0.0", 12, "ipv4")
privateRanges.addSubnet("192.168.0.0", 16, "ipv4")
privateRanges.addSubnet("100.64.0.0", 10, "ipv4")
privateRanges.addAddress("::1", "ipv6")
privateRanges.addSubnet("fc00::", 7, "ipv6")

/** IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) forms are judged as the IPv4 address. */
const unmap = (address: string) => {
  const lower = address.toLowerCase()
  for (const prefix of ["::ffff:", "64:ff9b::"]) {
    if (!lower.startsWith(prefix)) continue
    const rest = lower.slice(prefix.length)
    if (Net.isIPv4(rest)) return rest
    const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(rest)
    if (hex !== null) {
      const hi = parseInt(hex[1]!, 16)
      const lo = parseInt(hex[2]!, 16)
      return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
    }
  }
  return address
}

/** The reason an address is refused, or undefined when it may be used. */
export const refusedAddress = (address: string, allowPrivate: boolean): string | undefined => {
  const plain = unmap(address)
  const family = Net.isIPv4(plain) ? "ipv4" : Net.isIPv6(plain) ? "ipv6" : undefined
  if (family === undefined) return `not an IP address: ${address}`
  if (alwaysBlocked.check(plain, family)) return `address ${plain} is link-local or a metadata address`
  if (!allowPrivate && privateRanges.check(plain, family)) return `address ${plain} is private (SERVICE_WEBHOOK_ALLOW_PRIVATE=false)`
  return undefined
}
