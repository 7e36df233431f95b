//! Sizes and the Internet checksum: what a probe of a given size carries.

use std::net::IpAddr;

use crate::error::Error;

/// IPv4 header without options, as the kernel builds it for these sockets.
pub(crate) const IPV4_HEADER: u32 = 20;
/// IPv6 fixed header (no extension headers are sent).
pub(crate) const IPV6_HEADER: u32 = 40;
/// ICMP and ICMPv6 echo header, and the UDP header: both 8 bytes.
pub(crate) const L4_HEADER: u32 = 8;
/// The largest probe: the largest IPv4 packet, and the bound the API sets for both families.
pub(crate) const MAX_SIZE: u32 = 65_535;

/// The IP header size towards `dst`.
pub(crate) fn ip_header(dst: IpAddr) -> u32 {
    match dst {
        IpAddr::V4(_) => IPV4_HEADER,
        IpAddr::V6(_) => IPV6_HEADER,
    }
}

/// The payload after the ICMP or UDP header in a probe of `size` bytes (the whole IP packet)
/// towards `dst`, or the size error.
pub(crate) fn payload_len(dst: IpAddr, size: u32) -> Result<usize, Error> {
    let min = ip_header(dst) + L4_HEADER;
    if !(min..=MAX_SIZE).contains(&size) {
        return Err(Error::Size { size, dst, min });
    }
    usize::try_from(size - min).map_err(|_| Error::Size { size, dst, min })
}

/// The Internet checksum (RFC 1071) of `data`: the ones' complement of the ones' complement sum
/// of its 16-bit big-endian words, an odd last byte padded with zero.
pub(crate) fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u32::from(u16::from_be_bytes([*last, 0]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    // The loop leaves at most 16 bits.
    !(sum as u16)
}

/// Fills `payload` with a recognisable pattern (its bytes count up from `seed`), so a capture
/// shows probes apart from other traffic.
pub(crate) fn fill(payload: &mut [u8], seed: u8) {
    for (i, b) in payload.iter_mut().enumerate() {
        *b = seed.wrapping_add(i as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4() -> IpAddr {
        "192.0.2.1".parse().unwrap()
    }
    fn v6() -> IpAddr {
        "2001:db8::1".parse().unwrap()
    }

    #[test]
    fn payload_is_the_size_less_both_headers() {
        assert_eq!(payload_len(v4(), 1400).unwrap(), 1372);
        assert_eq!(payload_len(v6(), 1400).unwrap(), 1352);
        assert_eq!(payload_len(v4(), 28).unwrap(), 0);
        assert_eq!(payload_len(v6(), 48).unwrap(), 0);
        assert_eq!(payload_len(v4(), 65_535).unwrap(), 65_507);
    }

    #[test]
    fn sizes_outside_the_headers_and_65535_are_errors() {
        for (dst, size, min) in [(v4(), 27, 28), (v6(), 47, 48), (v4(), 0, 28)] {
            match payload_len(dst, size) {
                Err(Error::Size {
                    size: s, min: m, ..
                }) => assert_eq!((s, m), (size, min)),
                other => panic!("{size} towards {dst}: {other:?}"),
            }
        }
        assert!(matches!(payload_len(v4(), 65_536), Err(Error::Size { .. })));
        assert!(matches!(payload_len(v6(), 65_536), Err(Error::Size { .. })));
        let text = payload_len(v6(), 47).unwrap_err().to_string();
        assert_eq!(
            text,
            "probe size 47 towards 2001:db8::1 out of range 48..=65535 bytes"
        );
    }

    #[test]
    fn checksum_matches_rfc_1071_examples() {
        // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (folded); the
        // checksum is its complement.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&data), !0xddf2);
        // An odd length pads with a zero byte.
        assert_eq!(checksum(&[0x01]), !0x0100);
        assert_eq!(checksum(&[]), 0xffff);
    }

    #[test]
    fn a_message_with_its_checksum_sums_to_zero() {
        let mut msg = vec![8, 0, 0, 0, 0x12, 0x34, 0x00, 0x07, 1, 2, 3, 4, 5];
        let c = checksum(&msg);
        msg[2..4].copy_from_slice(&c.to_be_bytes());
        assert_eq!(checksum(&msg), 0);
    }

    #[test]
    fn fill_counts_up_and_wraps() {
        let mut p = [0u8; 4];
        fill(&mut p, 254);
        assert_eq!(p, [254, 255, 0, 1]);
    }
}
