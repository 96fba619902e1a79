//! Bytes from a pipe to text, keeping a UTF-8 character cut by the end of a
//! read for the next read. Minimal: env-local's stream cleaner replaces it.

/// Incremental UTF-8 decoder of one stream.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    carry: Vec<u8>,
}

impl Decoder {
    /// Decodes the next read; invalid bytes become U+FFFD.
    pub(crate) fn decode(&mut self, bytes: &[u8]) -> String {
        let mut input = std::mem::take(&mut self.carry);
        input.extend_from_slice(bytes);
        let mut text = String::with_capacity(input.len());
        let mut rest = input.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    text.push_str(valid);
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    text.push_str(&String::from_utf8_lossy(valid));
                    if let Some(length) = error.error_len() {
                        text.push('\u{FFFD}');
                        rest = &after[length..];
                    } else {
                        // Incomplete character at the end: wait for more.
                        self.carry = after.to_vec();
                        break;
                    }
                }
            }
        }
        text
    }

    /// What is left at the end of the stream.
    pub(crate) fn finish(&mut self) -> String {
        let carry = std::mem::take(&mut self.carry);
        String::from_utf8_lossy(&carry).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_a_character_split_across_reads() {
        let mut decoder = Decoder::default();
        let bytes = "é€".as_bytes();
        assert_eq!(decoder.decode(&bytes[..1]), "");
        assert_eq!(decoder.decode(&bytes[1..3]), "é");
        assert_eq!(decoder.decode(&bytes[3..]), "€");
        assert_eq!(decoder.decode(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(decoder.decode(b"\xe2"), "");
        assert_eq!(decoder.finish(), "\u{FFFD}");
    }
}
