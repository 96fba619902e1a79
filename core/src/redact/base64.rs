//! A secret's value as base64 shows it: `printf %s "$TOKEN" | base64`, or
//! a `user:token` pair in an `auth` field. Where the value starts in the
//! encoded data decides how its bytes fall into groups of three, so each
//! of the three alignments gives another text; only the characters made
//! of the value's bits alone are the same whatever surrounds it, and those
//! are what is looked for.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 of `bytes`, without padding.
fn encode(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let mut value = 0_u32;
        for (index, &byte) in group.iter().enumerate() {
            value |= u32::from(byte) << (16 - 8 * index);
        }
        for index in 0..=group.len() {
            out.push(ALPHABET[((value >> (18 - 6 * index)) & 63) as usize]);
        }
    }
    out
}

/// The stable middles of `value`'s base64 at each of the three alignments:
/// what any base64 text that contains the value encoded contains.
pub(crate) fn variants(value: &[u8]) -> [Vec<u8>; 3] {
    std::array::from_fn(|offset| {
        let mut data = vec![0_u8; offset];
        data.extend_from_slice(value);
        let encoded = encode(&data);
        let bits_before = 8 * offset;
        let bits_through = 8 * (offset + value.len());
        // Characters whose six bits all lie within the value.
        let first = bits_before.div_ceil(6);
        let last = bits_through / 6;
        encoded[first..last.max(first)].to_vec()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_the_base64_tool() {
        assert_eq!(encode(b"hello world"), b"aGVsbG8gd29ybGQ");
        assert_eq!(encode(b"f"), b"Zg");
        assert_eq!(encode(b"fo"), b"Zm8");
        assert_eq!(encode(b"foo"), b"Zm9v");
    }

    #[test]
    fn each_alignment_is_found_in_an_encoding_that_holds_the_value() {
        let value = b"s3cr3t-value-0123";
        let stable = variants(value);
        for prefix in ["", "u:", "ab:"] {
            let mut data = prefix.as_bytes().to_vec();
            data.extend_from_slice(value);
            data.extend_from_slice(b"\n");
            let encoded = encode(&data);
            let variant = &stable[prefix.len() % 3];
            assert!(
                memchr::memmem::find(&encoded, variant).is_some(),
                "{prefix:?}: {:?} not in {:?}",
                String::from_utf8_lossy(variant),
                String::from_utf8_lossy(&encoded)
            );
            assert!(variant.len() >= value.len() * 4 / 3 - 2);
        }
    }
}
